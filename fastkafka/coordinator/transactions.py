"""TransactionCoordinator: KIP-98 transactions over ``__transaction_state``.

One :class:`TransactionMetadata` per ``transactional.id`` moves through Kafka's states::

    Empty -> Ongoing -> PrepareCommit -> CompleteCommit -> Ongoing ...
                     -> PrepareAbort  -> CompleteAbort  -> ...

and every move is written to ``__transaction_state`` partition ``hash(id) % n`` (Kafka's key
and value layouts, :mod:`.txn_formats`) *before* the client is answered, so a coordinator that
restarts — or, in cluster mode, the partition's next leader — loads the same states. From a
Prepare state the coordinator writes a COMMIT or ABORT marker to every partition of the
transaction (``write_markers``, supplied by the broker: local logs, or WriteTxnMarkers to their
leaders) and then records the Complete state. As Kafka's coordinator, EndTxn is answered once
the Prepare state is written: the Prepare record already decides the outcome (a coordinator that
restarts finishes it), so the markers and the Complete state follow on ``complete_in`` (the
broker's marker threads; by default before the answer). Until the Complete state the
producer's next requests get CONCURRENT_TRANSACTIONS, which every client retries; read_committed
consumers see nothing of the transaction before its marker, which holds their last stable
offset. A request of the same producer arriving meanwhile (its next AddPartitionsToTxn, an
EndTxn retried) waits for that completion, up to ``completion_wait_ms``, before it is handled:
answering CONCURRENT_TRANSACTIONS at once would cost the producer its client's retry backoff
(librdkafka: 20 ms) for what takes a few milliseconds here. A transaction found in a Prepare
state on load, or whose markers could not all be written, is completed by :meth:`tick`.

Fencing follows Kafka: InitProducerId bumps the producer epoch (a new producer id once the
epoch is exhausted), so the previous incarnation's requests get PRODUCER_FENCED; an open
transaction is aborted first (the caller retries on CONCURRENT_TRANSACTIONS); a transaction
open past its ``transaction.timeout.ms`` is aborted by :meth:`tick` with a bumped epoch.
Empty and completed ids silent for ``transactional.id.expiration.ms`` are tombstoned.

Thread-safe: one lock guards the metadata; marker writes and store appends of a transaction run
outside it while the transaction is marked pending (requests meanwhile get
CONCURRENT_TRANSACTIONS).

Example::

    >>> from fastkafka.coordinator.storage import MemoryOffsetsStore
    >>> from fastkafka.coordinator.producer_ids import ProducerIdManager
    >>> class Ids:
    ...     n = 100
    ...     def reserve(self, size): Ids.n += size; return Ids.n - size
    >>> written = []
    >>> def markers(pid, epoch, coordinator_epoch, commit, partitions):
    ...     written.append((pid, epoch, commit, sorted(partitions))); return {}
    >>> tc = TransactionCoordinator(MemoryOffsetsStore(4), ProducerIdManager(Ids()), markers,
    ...                             clock=lambda: 1000)
    >>> tc.load_all()
    >>> err, pid, epoch = tc.init_producer_id("app", 60000)
    >>> err, pid, epoch
    (0, 100, 0)
    >>> tc.add_partitions("app", pid, epoch, {("t", 0)}), tc.end_txn("app", pid, epoch, True)
    (0, 0)
    >>> written, tc.describe("app").state_name
    ([(100, 0, True, [('t', 0)])], 'CompleteCommit')
    >>> tc.init_producer_id("app", 60000)[1:]       # a new incarnation: the epoch goes up
    (100, 1)
    >>> tc.end_txn("app", pid, epoch, True) == E.ProducerFencedError.code
    True
"""
from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Callable, Iterable

from ..config.definitions import TRANSACTIONAL_ID_EXPIRATION_MS, TRANSACTION_MAX_TIMEOUT_MS
from .. import errors as E
from .formats import partition_for
from .txn_formats import (COMPLETE_ABORT, COMPLETE_COMMIT, DEAD, EMPTY, ONGOING, PREPARE_ABORT,
                          PREPARE_COMMIT, PREPARE_EPOCH_FENCE, STATE_NAMES, TxnRecord,
                          decode_txn_key, decode_txn_value, txn_key, txn_value)

__all__ = ["TransactionCoordinator", "TransactionMetadata", "TRANSACTION_STATE_TOPIC"]

log = logging.getLogger("fastkafka.coordinator.transactions")

TRANSACTION_STATE_TOPIC = "__transaction_state"
MAX_EPOCH = (1 << 15) - 1
NO_EPOCH = -1
MARKER_RETRY_MS = 100

PartitionSet = set[tuple[str, int]]
# (producer_id, producer_epoch, coordinator_epoch, commit, partitions) -> {partition: error code}
# for the partitions whose marker was not written (empty: all written)
MarkerWriter = Callable[[int, int, int, bool, PartitionSet], dict]


def _run_now(work: Callable[[], object]) -> None:
    work()


class TransactionMetadata:
    """One transactional id's producer, epoch, state and partitions (Kafka's TransactionMetadata)."""

    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "last_producer_epoch",
                 "timeout_ms", "state", "partitions", "start_ms", "last_update_ms", "pending")

    def __init__(self, transactional_id: str, producer_id: int, producer_epoch: int,
                 timeout_ms: int, state: int = EMPTY, partitions: PartitionSet | None = None,
                 start_ms: int = -1, last_update_ms: int = -1):
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = NO_EPOCH
        self.timeout_ms = timeout_ms
        self.state = state
        self.partitions: PartitionSet = set(partitions or ())
        self.start_ms = start_ms
        self.last_update_ms = last_update_ms
        self.pending = False             # a write of this transaction is under way

    @property
    def state_name(self) -> str:
        return STATE_NAMES[self.state]

    def record(self) -> TxnRecord:
        return TxnRecord(self.producer_id, self.producer_epoch, self.timeout_ms, self.state,
                         set(self.partitions), self.last_update_ms, self.start_ms)

    def __repr__(self):
        return (f"TransactionMetadata({self.transactional_id!r}, pid={self.producer_id}, "
                f"epoch={self.producer_epoch}, {self.state_name}, {sorted(self.partitions)})")


class TransactionCoordinator:
    """The transactions of every ``__transaction_state`` partition this broker coordinates.

    ``store`` is an offsets-style store over ``__transaction_state`` (``append``/``read``,
    :mod:`.storage`); ``producer_ids`` hands out producer ids; ``write_markers`` writes the
    markers of a completing transaction; ``coordinator_epoch(partition)`` is the leader epoch of
    that ``__transaction_state`` partition (the markers carry it so an old coordinator is
    fenced); ``owns_partition`` (cluster mode) says which partitions this broker leads;
    ``complete_in(work)`` runs the completion of a prepared transaction (its markers, then its
    Complete state) — the broker's marker threads, so that EndTxn is answered first; by default
    at once, before the answer; ``completion_wait_ms`` is how long a producer's request waits
    for its previous transaction's completion before it gets CONCURRENT_TRANSACTIONS.
    """

    def __init__(self, store, producer_ids, write_markers: MarkerWriter, *,
                 clock: Callable[[], int], max_timeout_ms: int = 900_000,
                 expiration_ms: int = 604_800_000, abort_check_interval_ms: int = 10_000,
                 expiration_check_interval_ms: int = 3_600_000,
                 coordinator_epoch: Callable[[int], int] = lambda partition: 0,
                 owns_partition: Callable[[int], bool] | None = None,
                 complete_in: Callable[[Callable[[], object]], object] = _run_now,
                 completion_wait_ms: int = 0):
        self.store = store
        self.num_partitions = store.num_partitions
        self.producer_ids = producer_ids
        self.write_markers = write_markers
        self.clock = clock
        self.max_timeout_ms = max_timeout_ms
        self.expiration_ms = expiration_ms
        self.abort_check_interval_ms = abort_check_interval_ms
        self.expiration_check_interval_ms = expiration_check_interval_ms
        self.coordinator_epoch = coordinator_epoch
        self.owns_partition = owns_partition
        self.complete_in = complete_in
        self.completion_wait_ms = completion_wait_ms
        self.transactions: dict[str, TransactionMetadata] = {}
        self._loaded: set[int] = set()
        self._lock = threading.RLock()
        self._released = threading.Condition(self._lock)     # some transaction stopped being pending
        now = clock()
        self._next_abort_check = now + abort_check_interval_ms
        self._next_expiration_check = now + expiration_check_interval_ms
        self._next_marker_retry = now

    @classmethod
    def from_config(cls, config, store, producer_ids, write_markers: MarkerWriter, **kw):
        """A coordinator with the broker's ``transaction.*`` settings."""
        return cls(store, producer_ids, write_markers,
                   max_timeout_ms=config[TRANSACTION_MAX_TIMEOUT_MS],
                   expiration_ms=config[TRANSACTIONAL_ID_EXPIRATION_MS],
                   abort_check_interval_ms=config[
                       "transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                   expiration_check_interval_ms=config[
                       "transaction.remove.expired.transaction.cleanup.interval.ms"], **kw)

    # --- ownership and loading ---
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def load_all(self) -> None:
        self.load_partitions(range(self.num_partitions))

    def load_partitions(self, partitions: Iterable[int]) -> None:
        """Replay ``__transaction_state`` partitions: the last record per id wins."""
        for p in partitions:
            found: dict[str, TxnRecord | None] = {}
            for rec in self.store.read(p):
                try:
                    tid = decode_txn_key(rec.key)
                    if tid is not None:
                        found[tid] = None if rec.value is None else decode_txn_value(rec.value)
                except E.CorruptRecordError as e:
                    log.warning("%s-%d: skipping an unreadable record (%s)", TRANSACTION_STATE_TOPIC, p, e)
            with self._lock:
                for tid, r in found.items():
                    if r is None:
                        self.transactions.pop(tid, None)
                        continue
                    t = TransactionMetadata(tid, r.producer_id, r.producer_epoch, r.timeout_ms,
                                            r.state, r.partitions, r.start_ms, r.last_update_ms)
                    self.transactions[tid] = t
                self._loaded.add(p)
        self._next_marker_retry = self.clock()      # finish what the last coordinator prepared

    def unload_partitions(self, partitions: Iterable[int]) -> None:
        """Cluster mode: another broker leads these partitions now; forget their transactions."""
        gone = set(partitions)
        with self._lock:
            self._loaded -= gone
            for tid in [t for t in self.transactions if self.partition_for(t) in gone]:
                del self.transactions[tid]

    def _check_available(self, transactional_id: str) -> int:
        p = self.partition_for(transactional_id)
        if self.owns_partition is not None and not self.owns_partition(p):
            return E.NotCoordinatorError.code
        if p not in self._loaded:
            return E.CoordinatorLoadInProgressError.code
        return 0

    def describe(self, transactional_id: str) -> TransactionMetadata | None:
        with self._lock:
            return self.transactions.get(transactional_id)

    def describe_transaction(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        """DescribeTransactions: ``(error, metadata)``; TRANSACTIONAL_ID_NOT_FOUND for an unknown id."""
        code = self._check_available(transactional_id)
        t = None if code else self.describe(transactional_id)
        if not code and t is None:
            code = E.TransactionalIdNotFoundError.code
        return code, t

    def list_transactions(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                          min_duration_ms: int = -1) -> tuple[list[str], list[TransactionMetadata]]:
        """ListTransactions: ``(unknown state names, matching transactions)``; empty filters
        match everything, ``min_duration_ms`` >= 0 keeps those open at least that long."""
        wanted = set(states)
        unknown = sorted(wanted - set(STATE_NAMES))
        pids = set(producer_ids)
        now = self.clock()
        with self._lock:
            found = [t for t in self.transactions.values()
                     if self.partition_for(t.transactional_id) in self._loaded
                     and (not wanted or t.state_name in wanted)
                     and (not pids or t.producer_id in pids)
                     and (min_duration_ms < 0 or (t.state == ONGOING and now - t.start_ms >= min_duration_ms))]
        return unknown, sorted(found, key=lambda t: t.transactional_id)

    # --- persistence: a state is written before it is taken ---
    def _persist(self, t: TransactionMetadata, target: TransactionMetadata, replicated: bool = True) -> int:
        """Write ``target`` (the next state of ``t``, which is pending) and take it; an error code
        if the write failed (``t`` unchanged). ``replicated=False`` takes it once appended (see
        :meth:`_complete`)."""
        code = self._write(t.transactional_id, txn_value(target.record()), target.last_update_ms, replicated)
        if code:
            return code
        with self._lock:
            for name in ("producer_id", "producer_epoch", "timeout_ms", "state", "partitions",
                         "start_ms", "last_update_ms"):
                setattr(t, name, getattr(target, name))
        return 0

    def _write(self, transactional_id: str, value: bytes | None, timestamp_ms: int,
               wait: bool = True) -> int:
        """Append an id's state (None: its tombstone) and, with ``wait``, wait until the store says
        it is replicated (cluster mode: the in-sync replicas have it); 0 or the error to answer."""
        done, codes = threading.Event(), []

        def replicated(code: int) -> None:
            codes.append(code)
            done.set()
            if code and not wait:
                log.warning("transaction %s: a state written was not replicated: error %d", transactional_id, code)
        try:
            self.store.append(self.partition_for(transactional_id), [(txn_key(transactional_id), value)],
                              timestamp_ms, on_replicated=replicated)
        except E.KafkaError as e:
            log.warning("writing transaction %s failed: %s", transactional_id, e)
            return _store_error(e)
        if not wait:
            return 0
        done.wait()          # the store's writer answers every write (its own timeout included)
        if codes[0]:
            log.warning("writing transaction %s failed: error %d", transactional_id, codes[0])
            return _store_error(E.for_code(codes[0])(""))
        return 0

    def _next(self, t: TransactionMetadata, state: int, **changes) -> TransactionMetadata:
        target = TransactionMetadata(t.transactional_id, t.producer_id, t.producer_epoch,
                                     t.timeout_ms, state, t.partitions, t.start_ms, self.clock())
        for name, value in changes.items():
            setattr(target, name, value)
        return target

    def _run_pending(self, t: TransactionMetadata, work: Callable[[], int]) -> int:
        """Run ``work`` (writes, outside the lock) with ``t`` marked pending."""
        try:
            return work()
        finally:
            self._release(t)

    def _release(self, t: TransactionMetadata) -> None:
        with self._lock:
            t.pending = False
            self._released.notify_all()

    def _await_completion(self, transactional_id: str) -> None:
        """Under the lock: while the id's transaction is prepared and being completed (its markers
        under way), wait for that, at most ``completion_wait_ms``; the caller then decides."""
        deadline = None
        while True:
            t = self.transactions.get(transactional_id)
            if t is None or not (t.pending and t.state in (PREPARE_COMMIT, PREPARE_ABORT)):
                return
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.completion_wait_ms / 1000
            if now >= deadline:
                return
            self._released.wait(deadline - now)

    # --- InitProducerId ---
    def init_producer_id(self, transactional_id: str, timeout_ms: int, expected_producer_id: int = -1,
                         expected_epoch: int = -1) -> tuple[int, int, int]:
        """``(error, producer_id, epoch)`` for a transactional producer starting up (KIP-98),
        or bumping its epoch after an error (KIP-360: ``expected_*`` are its current ones)."""
        if not transactional_id:
            return E.InvalidRequestError.code, -1, -1
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return E.InvalidTransactionTimeoutError.code, -1, -1
        code = self._check_available(transactional_id)
        if code:
            return code, -1, -1
        with self._lock:
            self._await_completion(transactional_id)
            t = self.transactions.get(transactional_id)
            if t is None:
                t = TransactionMetadata(transactional_id, self.producer_ids.next_id(), NO_EPOCH,
                                        timeout_ms)
                self.transactions[transactional_id] = t
            if t.pending or t.state in (PREPARE_COMMIT, PREPARE_ABORT):
                return E.ConcurrentTransactionsError.code, -1, -1
            if expected_producer_id != -1 and not (
                    t.producer_id == expected_producer_id
                    and expected_epoch in (t.producer_epoch, t.last_producer_epoch)):
                return E.ProducerFencedError.code, -1, -1
            t.pending = True
            state = t.state
        if state == ONGOING:
            # fence the old incarnation: abort its transaction under a bumped epoch; the caller
            # retries and gets the next epoch once the abort is complete
            code = self._fence_and_abort(t)
            return code or E.ConcurrentTransactionsError.code, -1, -1
        if state not in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT):
            self._release(t)
            return E.InvalidTxnStateError.code, -1, -1

        def bump() -> int:
            if t.producer_epoch >= MAX_EPOCH - 1:      # exhausted: a new producer id, epoch 0
                pid, epoch = self.producer_ids.next_id(), 0
            else:
                pid, epoch = t.producer_id, t.producer_epoch + 1
            last = t.producer_epoch
            code = self._persist(t, self._next(t, EMPTY, producer_id=pid, producer_epoch=epoch,
                                               timeout_ms=timeout_ms, partitions=set(), start_ms=-1))
            if not code:
                t.last_producer_epoch = last
            return code
        code = self._run_pending(t, bump)
        if code:
            return code, -1, -1
        return 0, t.producer_id, t.producer_epoch

    def _producer_txn(self, transactional_id: str, producer_id: int, epoch: int
                      ) -> tuple[int, TransactionMetadata | None]:
        """Under the lock: the transaction a producer's request names, or the error it gets."""
        code = self._check_available(transactional_id)
        if code:
            return code, None
        self._await_completion(transactional_id)
        t = self.transactions.get(transactional_id)
        return _check_producer(t, producer_id, epoch), t

    # --- AddPartitionsToTxn / AddOffsetsToTxn ---
    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                       partitions: PartitionSet) -> int:
        """Add ``partitions`` to the producer's transaction (beginning one); an error code."""
        with self._lock:
            code, t = self._producer_txn(transactional_id, producer_id, epoch)
            if code:
                return code
            assert t is not None, "no error: _check_producer found the producer's transaction"
            if t.state in (PREPARE_COMMIT, PREPARE_ABORT):
                return E.ConcurrentTransactionsError.code
            if t.state in (DEAD, PREPARE_EPOCH_FENCE):
                return E.InvalidTxnStateError.code
            if t.state == ONGOING and partitions <= t.partitions:
                return 0
            ongoing = t.state == ONGOING
            target = self._next(t, ONGOING, partitions=(t.partitions if ongoing else set()) | partitions)
            if not ongoing:
                target.start_ms = target.last_update_ms
            t.pending = True
        return self._run_pending(t, lambda: self._persist(t, target))

    # --- EndTxn ---
    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        """Commit or abort the producer's transaction: 0 once its Prepare state is written (the
        markers and the Complete state follow, see ``complete_in``), or an error code. A retry
        of the same outcome gets CONCURRENT_TRANSACTIONS until the Complete state, then 0."""
        with self._lock:
            code, t = self._producer_txn(transactional_id, producer_id, epoch)
            if code:
                return code
            assert t is not None, "no error: _check_producer found the producer's transaction"
            done, prepared = (COMPLETE_COMMIT, PREPARE_COMMIT) if commit else (COMPLETE_ABORT, PREPARE_ABORT)
            if t.state == done:
                return 0                                  # a retry of an EndTxn that completed
            if t.state == prepared:
                return E.ConcurrentTransactionsError.code
            if t.state != ONGOING:
                return E.InvalidTxnStateError.code
            t.pending = True
        return self._prepare(t, prepared)

    def _fence_and_abort(self, t: TransactionMetadata) -> int:
        epoch = t.producer_epoch + 1 if t.producer_epoch < MAX_EPOCH else t.producer_epoch
        return self._prepare(t, PREPARE_ABORT, producer_epoch=epoch)

    def _prepare(self, t: TransactionMetadata, prepared: int, **changes) -> int:
        """Write ``prepared`` for ``t`` (pending) and hand its completion to ``complete_in``;
        ``t`` stays pending until that is done, so no request and no tick writes it meanwhile."""
        handed = False
        try:
            code = self._persist(t, self._next(t, prepared, **changes))
            if not code:
                try:
                    self.complete_in(lambda: self._run_pending(t, lambda: self._complete(t)))
                    handed = True
                except RuntimeError as e:
                    # the marker threads are stopping: the outcome is written, a next leader finishes it
                    log.info("transaction %s left prepared: %s", t.transactional_id, e)
            return code
        finally:
            if not handed:       # a Prepare state nobody completes is the tick's (or the next leader's)
                self._release(t)

    def _complete(self, t: TransactionMetadata) -> bool:
        """Write the markers of a prepared transaction, then its Complete state. False when some
        marker could not be written yet (the transaction stays prepared; :meth:`tick` retries)."""
        commit = t.state == PREPARE_COMMIT
        p = self.partition_for(t.transactional_id)
        failed = self.write_markers(t.producer_id, t.producer_epoch, self.coordinator_epoch(p),
                                    commit, set(t.partitions))
        # a deleted topic will never take its marker: Kafka drops such partitions too
        left = {tp for tp, code in failed.items() if code != E.UnknownTopicOrPartitionError.code}
        if left:
            log.info("transaction %s: markers to %s not written yet", t.transactional_id, sorted(left))
            with self._lock:
                t.partitions = left
            return False
        # taken once appended, not once replicated: the Prepare state already decided the outcome
        # (a next leader that lacks this record completes the transaction again), and the
        # producer's next state, appended after it, is answered only once replicated, which
        # covers this one. Waiting here put two replicated writes in a row between a commit
        # and the next transaction (Kafka waits; ~1 ms a transaction on three brokers).
        done = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        return not self._persist(t, self._next(t, done, partitions=set()), replicated=False)

    # --- the timer ---
    def tick(self, now: int | None = None) -> None:
        """Complete prepared transactions, abort timed-out ones, expire idle ids."""
        now = self.clock() if now is None else now
        if now >= self._next_marker_retry:
            self._next_marker_retry = now + MARKER_RETRY_MS
            for t in self._claim(lambda t: t.state in (PREPARE_COMMIT, PREPARE_ABORT)):
                self._run_pending(t, functools.partial(self._complete, t))
        if now >= self._next_abort_check:
            self._next_abort_check = now + self.abort_check_interval_ms
            for t in self._claim(lambda t: t.state == ONGOING and t.start_ms + t.timeout_ms < now):
                log.info("transaction %s timed out after %d ms: aborting it", t.transactional_id,
                         t.timeout_ms)
                self._fence_and_abort(t)
        if now >= self._next_expiration_check:
            self._next_expiration_check = now + self.expiration_check_interval_ms
            for t in self._claim(lambda t: t.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
                                 and t.last_update_ms + self.expiration_ms < now):
                self._run_pending(t, functools.partial(self._expire, t))

    def _claim(self, wanted: Callable[[TransactionMetadata], bool]) -> list[TransactionMetadata]:
        """The transactions ``wanted`` selects that no request is writing, marked pending."""
        with self._lock:
            found = [t for t in self.transactions.values() if not t.pending and wanted(t)]
            for t in found:
                t.pending = True
        return found

    def _expire(self, t: TransactionMetadata) -> int:
        code = self._write(t.transactional_id, None, self.clock())
        if code:
            return code
        with self._lock:
            if self.transactions.get(t.transactional_id) is t:
                del self.transactions[t.transactional_id]
        return 0


def _check_producer(t: TransactionMetadata | None, producer_id: int, epoch: int) -> int:
    if t is None or t.producer_id != producer_id:
        return E.InvalidProducerIdMappingError.code
    if t.producer_epoch != epoch:
        return E.ProducerFencedError.code
    if t.pending:
        return E.ConcurrentTransactionsError.code
    return 0


def _store_error(e: E.KafkaError) -> int:
    # what Kafka answers when the state log cannot be written: the client looks the coordinator up again
    if isinstance(e, (E.NotLeaderOrFollowerError, E.UnknownTopicOrPartitionError)):
        return E.NotCoordinatorError.code
    return E.CoordinatorNotAvailableError.code
