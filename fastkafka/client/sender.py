"""Turning queued records into Produce requests: build batches, route to leaders, pipeline, retry.

This is the seeds' ``EventHandler``: it takes ``[(topic, partition), records]`` chunks, builds
one v2 record batch per chunk (Cython, compression included), groups them by partition
leader into Produce requests — at most one batch per partition per request, as Kafka
requires from Produce v3 on, and at most ``max.request.size`` bytes — and keeps up to
``max.in.flight.requests.per.connection`` requests in flight per broker. A retriable
partition error (leader moved, not enough replicas, timeout) refreshes metadata and resends
the same batch bytes after ``retry.backoff.ms`` (so an idempotent producer's sequence numbers
stay valid), up to ``retries`` times.

Idempotence: when ``enable.idempotence`` is on, ``acks`` is all and the broker offers
InitProducerId, batches carry the producer id/epoch and per-partition sequence numbers;
otherwise they go without (the broker would reject sequences it cannot check).

A chunk's records are either ``(key, value, headers, timestamp)`` tuples, encoded here, or an
:class:`EncodedRecords` — a record stream some other encoder already wrote (the Spark writer
encodes straight from Arrow buffers); both get their header, compression and sequence number
here, so every batch leaves by the same path.

Used by one thread at a time (the producer's sender thread, or the caller in sync mode).
"""
from __future__ import annotations

import collections
import time
from typing import NamedTuple

from fastkafka import compression as _compression
from fastkafka import errors, records
from fastkafka._core.records_build import finish_batch
from fastkafka.protocol import ApiKey

from .metadata import Cluster

__all__ = ["Sender", "RecordMetadata", "EncodedRecords"]

_DUPLICATE_SEQUENCE = 46   # the broker already has this batch: count it as written
_OUT_OF_ORDER_SEQUENCE = 45


class RecordMetadata(NamedTuple):
    """Where an acknowledged chunk landed: ``offset`` is its first record's offset (-1 with acks=0)."""
    topic: str
    partition: int
    offset: int
    count: int
    log_append_time: int = -1


class EncodedRecords(NamedTuple):
    """An uncompressed v2 record stream behind 61 reserved bytes, as
    ``records_build.encode_records(..., reserve=61)`` and ``ArrowRecordsBuilder.finish()``
    return it; the Sender writes the header (and compresses) in place of the reserve.

    Example::

        >>> from fastkafka._core.records_build import encode_records
        >>> enc = EncodedRecords(*encode_records([(b"k", b"v", [], 5)], 0))
        >>> enc.count, enc.base_timestamp
        (1, 5)
    """
    buf: bytearray
    count: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int


_HEADER = 61   # the batch header the reserve leaves room for (records_layout.pxd)


class _Batch:
    __slots__ = ("tp", "count", "data", "attempts", "leader")

    def __init__(self, tp, count, data):
        self.tp, self.count, self.data = tp, count, data
        self.attempts = 0
        self.leader = -1


class Sender:
    """Sends record chunks and reports ``(RecordMetadata | None, error | None)`` per chunk."""

    def __init__(self, cluster: Cluster, callbacks=None):
        self.cluster = cluster
        c = cluster.config
        self.acks = c["acks"]
        self.codec = _compression.codec_id(c["compression.type"])
        self.level = c["compression.level"]
        self.timeout_ms = c["request.timeout.ms"]
        self.max_request = c["max.request.size"]
        self.max_in_flight = c["max.in.flight.requests.per.connection"]
        self.retries = c["retries"]
        self.backoff = c["retry.backoff.ms"] / 1000
        self.callbacks = callbacks
        self.want_idempotence = c["enable.idempotence"] and self.acks == -1
        self.producer_id = -1
        self.producer_epoch = -1
        self._sequences: dict[tuple[str, int], int] = collections.defaultdict(int)
        self._pid_checked = False
        self.transactional_id: str | None = None     # set by a TransactionManager

    def set_producer(self, producer_id: int, producer_epoch: int, transactional_id: str) -> None:
        """A transactional producer's id and epoch (from its coordinator): its batches are
        transactional from now on, sequences restart at 0."""
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self.transactional_id = transactional_id
        self._sequences.clear()
        self._pid_checked = True

    # -- producer id ----------------------------------------------------------------------

    def _init_producer_id(self) -> None:
        self._pid_checked = True
        if not self.want_idempotence:
            return
        conn = self.cluster.any_connection()
        if not conn.supports(ApiKey.INIT_PRODUCER_ID):
            return  # the broker cannot check sequences: send plain batches
        resp = conn.request(ApiKey.INIT_PRODUCER_ID,
                            {"transactional_id": None, "transaction_timeout_ms": 60_000})
        if resp.error_code:
            raise errors.for_code(resp.error_code)("InitProducerId failed")
        self.producer_id, self.producer_epoch = resp.producer_id, resp.producer_epoch

    @property
    def idempotent(self) -> bool:
        if not self._pid_checked:
            self._init_producer_id()
        return self.producer_id >= 0

    # -- batches --------------------------------------------------------------------------

    def _build(self, tp, recs) -> _Batch:
        if isinstance(recs, EncodedRecords):
            return self._build_encoded(tp, recs)
        if self.callbacks is not None:
            self.callbacks.before_send(tp[0], tp[1], recs)
        if self.idempotent:
            seq = self._sequences[tp]
            self._sequences[tp] = (seq + len(recs)) & 0x7FFFFFFF
            data = records.build_batch(recs, compression=self.codec, compression_level=self.level,
                                       producer_id=self.producer_id,
                                       producer_epoch=self.producer_epoch, base_sequence=seq,
                                       is_transactional=self.transactional_id is not None)
        else:
            data = records.build_batch(recs, compression=self.codec, compression_level=self.level)
        return _Batch(tp, len(recs), data)

    def _build_encoded(self, tp, enc: EncodedRecords) -> _Batch:
        if enc.count <= 0:
            raise ValueError("a record batch needs at least one record")
        pid, epoch, seq = -1, -1, -1
        if self.idempotent:
            pid, epoch, seq = self.producer_id, self.producer_epoch, self._sequences[tp]
            self._sequences[tp] = (seq + enc.count) & 0x7FFFFFFF
        buf = enc.buf
        if self.codec:
            # Java's producer compresses even when it does not shrink; so do we (build_batch).
            compressed = _compression.compress(self.codec, memoryview(buf)[_HEADER:], self.level)
            buf = bytearray(_HEADER)
            buf += compressed
        finish_batch(buf, record_count=enc.count, last_offset_delta=enc.last_offset_delta,
                     base_timestamp=enc.base_timestamp, max_timestamp=enc.max_timestamp,
                     compression=self.codec, producer_id=pid, producer_epoch=epoch,
                     base_sequence=seq, is_transactional=self.transactional_id is not None)
        return _Batch(tp, enc.count, buf)

    def send(self, chunks: list) -> list[tuple[tuple[str, int], int, RecordMetadata | None,
                                             BaseException | None]]:
        """Send ``[(tp, records | EncodedRecords)]``; returns ``[(tp, count, metadata, error)]``
        per chunk. Callbacks' ``before_send`` sees only plain record lists."""
        results = []
        todo = []
        for tp, recs in chunks:
            try:
                todo.append(self._build(tp, recs))
            except Exception as e:  # noqa: BLE001 - reported per chunk, like a broker error
                results.append((tp, recs.count if isinstance(recs, EncodedRecords) else len(recs),
                                None, e))
        while todo:
            retry = self._send_round(todo, results)
            if retry:
                time.sleep(min(self.backoff * (2 ** (retry[0].attempts - 1)), 1.0))
                self.cluster.invalidate()
            todo = retry
        if self.callbacks is not None:
            for tp, count, md, err in results:
                self.callbacks.on_acknowledgement(tp[0], tp[1], md.offset if md else -1, count, err)
        return results

    def _fail_or_retry(self, b: _Batch, err: BaseException, retry: list, results: list) -> None:
        b.attempts += 1
        if getattr(err, "retriable", False) and b.attempts <= self.retries:
            retry.append(b)
        else:
            results.append((b.tp, b.count, None, err))

    def _send_round(self, batches: list[_Batch], results: list) -> list[_Batch]:
        """One pass: route, send everything pipelined, collect answers; returns what to retry."""
        retry: list[_Batch] = []
        by_node: dict[int, list[_Batch]] = collections.defaultdict(list)
        for b in batches:
            try:
                b.leader = self.cluster.leader_for(*b.tp)
            except errors.KafkaError as e:
                self._fail_or_retry(b, e, retry, results)
                continue
            if len(b.data) > self.max_request:
                results.append((b.tp, b.count, None, errors.MessageTooLargeError(
                    f"a batch of {len(b.data)} bytes exceeds max.request.size={self.max_request}")))
                continue
            by_node[b.leader].append(b)
        queues = {node: collections.deque(self._requests(bs)) for node, bs in by_node.items()}
        in_flight: dict[int, collections.deque] = {node: collections.deque() for node in queues}
        while any(queues.values()) or any(in_flight.values()):
            for node, q in queues.items():
                try:
                    conn = self.cluster.connection(node)
                    while q and conn.in_flight < self.max_in_flight:
                        req = q.popleft()
                        self._send_request(conn, req, in_flight[node], results)
                except errors.KafkaError as e:
                    for req in list(q) + [r for r in in_flight[node]]:
                        for b in req:
                            self._fail_or_retry(b, e, retry, results)
                    q.clear()
                    in_flight[node].clear()
            for node, flight in in_flight.items():
                if not flight:
                    continue
                req = flight[0]
                try:
                    resp = self.cluster.connection(node).receive()
                except errors.KafkaError as e:
                    for r in flight:
                        for b in r:
                            self._fail_or_retry(b, e, retry, results)
                    flight.clear()
                    continue
                flight.popleft()
                self._handle(req, resp, retry, results)
        return retry

    def _requests(self, batches: list[_Batch]):
        """Pack batches into requests: one batch per partition, <= max.request.size bytes, each
        partition's batches in their order."""
        pending = list(batches)
        while pending:
            req, seen, size, rest = [], set(), 0, []
            for b in pending:
                if b.tp in seen or (req and size + len(b.data) > self.max_request):
                    rest.append(b)
                    # A later (smaller) batch of this partition must not overtake this one:
                    # the broker would refuse its sequence number (OutOfOrderSequenceNumber).
                    seen.add(b.tp)
                    continue
                req.append(b)
                seen.add(b.tp)
                size += len(b.data)
            yield req
            pending = rest

    def _send_request(self, conn, req: list[_Batch], flight, results) -> None:
        topics: dict[str, list] = {}
        for b in req:
            topics.setdefault(b.tp[0], []).append({"index": b.tp[1], "records": b.data})
        body = {"transactional_id": self.transactional_id, "acks": self.acks, "timeout_ms": self.timeout_ms,
                "topic_data": [{"name": t, "partition_data": ps} for t, ps in topics.items()]}
        version = conn.version(ApiKey.PRODUCE, at_least=3)  # v3+ carries record batches v2
        if self.acks == 0:
            conn.send(ApiKey.PRODUCE, body, version, expect_response=False)
            for b in req:
                results.append((b.tp, b.count, RecordMetadata(b.tp[0], b.tp[1], -1, b.count), None))
            return
        conn.send(ApiKey.PRODUCE, body, version)
        flight.append(req)

    def _handle(self, req: list[_Batch], resp, retry: list, results: list) -> None:
        answers = {}
        for t in resp.responses:
            for p in t.partition_responses:
                answers[t.name, p.index] = p
        for b in req:
            p = answers.get(b.tp)
            if p is None:
                self._fail_or_retry(b, errors.NetworkException(
                    f"no answer for {b.tp[0]}-{b.tp[1]} in the Produce response"), retry, results)
            elif p.error_code == _OUT_OF_ORDER_SEQUENCE and any(r.tp == b.tp for r in retry):
                # An earlier batch of this partition failed (retriably) while this one was in
                # flight, so the broker saw a gap. The earlier one is resent first, which closes
                # the gap: this one is retried behind it, not failed (as Java's producer does).
                b.attempts += 1
                retry.append(b)
            elif p.error_code and p.error_code != _DUPLICATE_SEQUENCE:
                err = errors.for_code(p.error_code)(f"produce to {b.tp[0]}-{b.tp[1]}")
                self._fail_or_retry(b, err, retry, results)
            else:
                results.append((b.tp, b.count, RecordMetadata(
                    b.tp[0], b.tp[1], p.base_offset, b.count, p.log_append_time_ms), None))
