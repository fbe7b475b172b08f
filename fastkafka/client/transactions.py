"""The producer's side of Kafka transactions (KIP-98): what ``transactional.id`` turns on.

:class:`TransactionManager` talks to the transaction coordinator (FindCoordinator with key type
1) on a connection of its own: InitProducerId once (fencing earlier producers with the same
id), AddPartitionsToTxn before the first record of a transaction goes to a partition,
AddOffsetsToTxn + TxnOffsetCommit for :meth:`send_offsets` (consume-transform-produce), EndTxn
to commit or abort. Retriable answers (CONCURRENT_TRANSACTIONS, a coordinator moving or
loading) are retried until ``request.timeout.ms``; PRODUCER_FENCED / INVALID_PRODUCER_EPOCH
are fatal: the producer must be closed.

:class:`~fastkafka.client.producer.Producer` drives it; see its ``begin_transaction`` example.
"""
from __future__ import annotations

import time

from fastkafka import errors
from fastkafka.protocol import API_NAMES, ApiKey

__all__ = ["TransactionManager"]

_RETRIABLE = {errors.ConcurrentTransactionsError.code, errors.CoordinatorLoadInProgressError.code,
              errors.CoordinatorNotAvailableError.code, errors.NotCoordinatorError.code,
              errors.RequestTimedOutError.code}
_MOVED = {errors.CoordinatorNotAvailableError.code, errors.NotCoordinatorError.code}
TRANSACTION_KEY_TYPE = 1
GROUP_KEY_TYPE = 0


class TransactionManager:
    """One transactional producer's coordinator conversation. Not thread-safe: the producer's
    caller runs it (between sends; the sender thread never does)."""

    def __init__(self, cluster, sender, transactional_id: str, timeout_ms: int, *,
                 request_timeout_ms: int, backoff_s: float):
        self.cluster, self.sender = cluster, sender
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.request_timeout_s = request_timeout_ms / 1000
        self.backoff_s = backoff_s
        self.in_transaction = False
        self.partitions: set[tuple[str, int]] = set()
        self.offsets_added = False
        self._conns: dict[tuple[int, str], object] = {}     # (key type, key) -> coordinator

    # --- coordinator plumbing ---
    def _coordinator(self, key_type: int, key: str):
        conn = self._conns.get((key_type, key))
        if conn is None or not conn.connected:
            resp = self.cluster.any_connection().request(
                ApiKey.FIND_COORDINATOR, {"key": key, "key_type": key_type})
            if resp.error_code:
                raise errors.for_code(resp.error_code)(f"no coordinator for {key!r}")
            conn = self.cluster.new_connection(resp.host, resp.port, resp.node_id).connect()
            self._conns[(key_type, key)] = conn
        return conn

    def _call(self, key_type: int, key: str, api_key: int, body: dict, code_of=lambda r: r.error_code):
        """Send until the answer is not retriable; raise its error, or return it."""
        deadline = time.monotonic() + self.request_timeout_s
        while True:
            try:
                resp = self._coordinator(key_type, key).request(api_key, body)
                code = code_of(resp)
            except errors.KafkaError as e:
                if not e.retriable:
                    raise
                code = e.code if e.code in _RETRIABLE else errors.NotCoordinatorError.code
                resp = None
            if code not in _RETRIABLE:
                if code:
                    raise errors.for_code(code)(f"{API_NAMES[api_key]} of {self.transactional_id!r}")
                return resp
            if code in _MOVED:
                conn = self._conns.pop((key_type, key), None)
                if conn is not None:
                    conn.close()
            if time.monotonic() >= deadline:
                raise errors.for_code(code)(f"transaction {self.transactional_id!r}: gave up retrying")
            time.sleep(self.backoff_s)

    def _txn(self, api_key: int, body: dict, code_of=lambda r: r.error_code):
        return self._call(TRANSACTION_KEY_TYPE, self.transactional_id, api_key, body, code_of)

    # --- the transaction ---
    def init(self) -> None:
        """InitProducerId: this producer's id and epoch; earlier producers of the id are fenced."""
        resp = self._txn(ApiKey.INIT_PRODUCER_ID, {"transactional_id": self.transactional_id,
                                                   "transaction_timeout_ms": self.timeout_ms})
        self.sender.set_producer(resp.producer_id, resp.producer_epoch, self.transactional_id)

    def begin(self) -> None:
        if self.sender.transactional_id is None:
            raise errors.InvalidTxnStateError("init_transactions() first")
        if self.in_transaction:
            raise errors.InvalidTxnStateError("a transaction is already open")
        self.in_transaction, self.partitions, self.offsets_added = True, set(), False

    def add_partitions(self, partitions) -> None:
        """Tell the coordinator about partitions this transaction is about to write to."""
        if not self.in_transaction:
            raise errors.InvalidTxnStateError("begin_transaction() first")
        new = set(partitions) - self.partitions
        if not new:
            return
        topics: dict[str, list[int]] = {}
        for t, p in sorted(new):
            topics.setdefault(t, []).append(p)
        s = self.sender
        self._txn(ApiKey.ADD_PARTITIONS_TO_TXN, {
            "v3_and_below_transactional_id": self.transactional_id,
            "v3_and_below_producer_id": s.producer_id, "v3_and_below_producer_epoch": s.producer_epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]},
            code_of=_add_partitions_error)
        self.partitions |= new

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_id: str) -> None:
        """Commit the consumer group's ``offsets`` as part of this transaction."""
        if not self.in_transaction:
            raise errors.InvalidTxnStateError("begin_transaction() first")
        s = self.sender
        ident = {"transactional_id": self.transactional_id, "producer_id": s.producer_id,
                 "producer_epoch": s.producer_epoch}
        self._txn(ApiKey.ADD_OFFSETS_TO_TXN, {**ident, "group_id": group_id})
        self.offsets_added = True
        topics: dict[str, list] = {}
        for (t, p), off in sorted(offsets.items()):
            topics.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                             "committed_metadata": ""})
        self._call(GROUP_KEY_TYPE, group_id, ApiKey.TXN_OFFSET_COMMIT, {
            **ident, "group_id": group_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]},
            code_of=_txn_offset_commit_error)

    def end(self, commit: bool) -> None:
        """EndTxn (the producer flushed first); a transaction that wrote nothing just ends."""
        if not self.in_transaction:
            raise errors.InvalidTxnStateError("no transaction is open")
        if self.partitions or self.offsets_added:
            s = self.sender
            self._txn(ApiKey.END_TXN, {"transactional_id": self.transactional_id,
                                       "producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
                                       "committed": commit})
        self.in_transaction, self.partitions, self.offsets_added = False, set(), False

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


def _add_partitions_error(resp) -> int:
    """AddPartitionsToTxn's first partition error (0: none)."""
    return next((p.partition_error_code for t in resp.results_by_topic_v3_and_below
                 for p in t.results_by_partition if p.partition_error_code), 0)


def _txn_offset_commit_error(resp) -> int:
    """TxnOffsetCommit's first partition error (0: none)."""
    return next((p.error_code for t in resp.topics for p in t.partitions if p.error_code), 0)
