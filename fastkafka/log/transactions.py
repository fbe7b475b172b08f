"""The transactional half of a partition's log (KIP-98): markers, the last stable offset, the
aborted-transaction index, and the producer state on open and truncation.

``Log`` inherits :class:`TransactionalLog`: these methods run on the Log (its lock, segments,
Appender and producer state) and live here only to keep one job per file.

* A client's produce never carries control batches: the Appender refuses a set holding one
  (status CONTROL_BATCH -> InvalidRecordError), which costs the append path one bit test per
  batch. :meth:`append_marker` builds the COMMIT/ABORT batch and appends it through the same
  one Appender call with ``MARKERS_ALLOWED``; followers copy their leader's markers as they are.
* The producer state (producer_state.py) begins a transaction at a producer's first
  transactional batch and completes it at its marker; an aborted one is appended to the
  ``.txnindex`` of the segment the marker was written to (txn_index.py).
* The last stable offset is ``min(high watermark, first unstable offset)``, computed when read
  from the high watermark and one tuple the producer state publishes: no lock, and it follows
  the high watermark wherever that moves (the Appender in embedded mode, replication otherwise).
* On open the producer state is loaded from the newest snapshot at or below the log end and the
  batches after it are replayed; the transaction-index entries from the replay's start on are
  dropped first and written again by the replay, so a crash between markers rebuilds the same
  index. A truncation reloads the state the same way (the index is truncated with its segment).

Thread-safety: :meth:`append_marker`, :meth:`remove_expired_producers` and
:meth:`describe_producers` take the Log's lock (the loaders run under it);
:attr:`last_stable_offset`, :attr:`first_unstable_offset` and :meth:`aborted_transactions` are
lock-free, like ``Log.read``.

Example::

    >>> import tempfile
    >>> from fastkafka.log import Log
    >>> from fastkafka.records import build_batch
    >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(tmpdir.name + "/orders-0")
    >>> def txn(seq):
    ...     return bytearray(build_batch([(b"k", b"v", [], 1)], producer_id=9, producer_epoch=0,
    ...                                  base_sequence=seq, is_transactional=True))
    >>> log.append(txn(0)).last_offset, log.high_watermark, log.last_stable_offset
    (0, 1, 0)
    >>> log.append_marker(9, 0, coordinator_epoch=1, commit=False, leader_epoch=0).base_offset
    1
    >>> log.last_stable_offset, log.aborted_transactions(0, log.last_stable_offset)
    (2, [(9, 0)])
    >>> log.close(); tmpdir.cleanup()
"""
from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, NamedTuple, cast

from .. import errors
from .._core import appender as _ap
from ..records import build_control_batch
from .producer_state import ProducerStateManager
from .txn_index import AbortedTxn
from .log_fields import LogFields

if TYPE_CHECKING:
    from .log import LogAppendInfo

__all__ = ["TransactionalLog", "ActiveProducer"]

_MARKER_FLAGS = _ap.MARKERS_ALLOWED


class ActiveProducer(NamedTuple):
    """One producer of a partition as DescribeProducers reports it (its field names)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class TransactionalLog(LogFields):
    """Log's transaction methods (Log inherits them). See the module docstring."""

    # --- the last stable offset ---
    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided and replicated: the high
        watermark, or the first unstable offset when that is lower (never below the log start
        offset). What read_committed consumers read up to. Lock-free."""
        hw = self._st.high_watermark
        first = self.producer_state.first_unstable_offset(hw)
        if first is None or first >= hw:
            return hw
        return max(first, self._st.log_start_offset)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction that is ongoing, or completed with its
        marker not yet below the high watermark (at least the log start offset); None when there
        is none. Lock-free."""
        first = self.producer_state.first_unstable_offset(self._st.high_watermark)
        return None if first is None else max(first, self._st.log_start_offset)

    def _high_watermark_moved(self) -> None:
        # completed transactions whose marker the high watermark passed are stable (under the lock)
        self.producer_state.on_high_watermark(self._st.high_watermark)

    # --- markers ---
    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, leader_epoch: int, timestamp: int | None = None) -> LogAppendInfo:
        """Append the transaction coordinator's COMMIT (``commit``) or ABORT marker for
        ``producer_id`` -- a control batch stamped with ``leader_epoch`` like a leader's append
        -- completing the producer's ongoing transaction on this partition (a producer with none
        ongoing here only has its epochs recorded). ``timestamp`` defaults to the log's clock.
        Returns the LogAppendInfo. Raises InvalidProducerEpochError (``producer_epoch`` older
        than the producer's), TransactionCoordinatorFencedError (``coordinator_epoch`` older
        than its last marker's), KafkaStorageError. Thread-safe. (Example: the module's.)"""
        buf = bytearray(build_control_batch(
            commit, producer_id, producer_epoch, coordinator_epoch=coordinator_epoch,
            timestamp=self.clock() if timestamp is None else timestamp))
        with self._lock:     # the check and the write are one step for the producer state
            self.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
            try:
                r = self._st.append(buf, leader_epoch, _MARKER_FLAGS)
            except OSError as e:
                raise errors.KafkaStorageError(f"marker append to {self.dir} failed: {e}") from e
            # writes it (a roll first if due); None is only ever a follower's
            info = cast("LogAppendInfo", self._settle(buf, leader_epoch, r))
        for listener in self._append_listeners:          # outside the lock, as Log.append
            listener(self)
        return info

    def _markers_written(self, aborted: list[AbortedTxn]) -> None:
        """After a set with markers was written (under the lock): index the transactions they
        aborted, and let the high watermark settle the ones it already passed."""
        if aborted:
            self._index_aborted(aborted)
        self._high_watermark_moved()

    def _index_aborted(self, aborted: list[AbortedTxn]) -> None:
        segs, bases = self._segments.snapshot()
        for txn in aborted:     # each in the segment holding its marker
            segs[max(bisect_right(bases, txn.last_offset) - 1, 0)].txn_index.append(txn)

    # --- fetch ---
    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[tuple[int, int]]:
        """``(producer_id, first_offset)`` of the aborted transactions overlapping
        [``fetch_offset``, ``upper_bound_offset``) -- what a read_committed Fetch response
        carries for the records it returns: a read_committed fetch reads
        ``log.read(offset, max_bytes, max_offset=log.last_stable_offset)`` and asks for
        ``log.aborted_transactions(offset, <end of what it returns, or the LSO>)``. Lock-free.
        (Example: the module's.)"""
        return [(t.producer_id, t.first_offset)
                for t in self.collect_aborted_transactions(fetch_offset, upper_bound_offset)]

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The index entries behind :meth:`aborted_transactions`: from the segment holding
        ``fetch_offset`` on, each entry whose marker is at or after ``fetch_offset`` and whose
        first offset is before ``upper_bound_offset``, until an entry's last stable offset
        reaches ``upper_bound_offset`` (Kafka's collectAbortedTransactions). Lock-free."""
        if upper_bound_offset <= fetch_offset:
            return []
        segs, bases = self._segments.snapshot()
        out: list[AbortedTxn] = []
        for seg in segs[max(bisect_right(bases, fetch_offset) - 1, 0):]:
            if not seg.txn_index.entries():
                continue
            found, complete = seg.txn_index.collect(fetch_offset, upper_bound_offset)
            out += found
            if complete:
                break
        return out

    # --- producers ---
    def producer_last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its newest data batch in the whole log (the producer
        state sees every append; recovery rebuilds it from snapshots and the log)."""
        with self._lock:
            return self.producer_state.last_offsets()

    def describe_producers(self) -> list[ActiveProducer]:
        """Each producer this partition remembers, with its transaction (DescribeProducers).
        Thread-safe."""
        with self._lock:
            return [ActiveProducer(e.producer_id, e.epoch, e.last_seq, e.last_timestamp,
                                   e.coordinator_epoch, e.current_txn_first_offset)
                    for e in self.producer_state.active()]

    def remove_expired_producers(self, now: int, expiration_ms: int) -> int:
        """Forget producers whose newest batch is ``producer.id.expiration.ms`` old (Kafka
        judges by the batch's max timestamp), never one with a transaction ongoing; returns how
        many."""
        with self._lock:
            return self.producer_state.remove_expired(now, expiration_ms)

    # --- loading ---
    def _load_producer_state(self, rebuild_index: bool) -> None:
        """The producer state of this log from its newest snapshot and the batches after it, put
        in place whole (lock-free readers see the old state or the new). With
        ``rebuild_index`` (opening) the transaction-index entries the replay covers are dropped
        and written again; a truncation keeps them (they describe the batches that remain)."""
        psm = ProducerStateManager()
        start = psm.load(self)
        if rebuild_index:
            segs, bases = self._segments.snapshot()
            for seg in segs[max(bisect_right(bases, start) - 1, 0):]:
                seg.txn_index.truncate_to(start)
        aborted = psm.replay(self, start)
        if rebuild_index and aborted:
            self._index_aborted(aborted)
        psm.on_high_watermark(self._st.high_watermark)
        self.producer_state = psm
