"""The seeds' low-level consumer: stateless fetches from one broker, the caller keeps offsets.

``SimpleConsumer(host, port, so_timeout, buffer_size)`` holds one connection. Each call is
one request: :meth:`~SimpleConsumer.fetch` (one partition), :meth:`~SimpleConsumer.multifetch`
(several, one round trip), :meth:`~SimpleConsumer.get_offsets_before` (ListOffsets v0: segment
start offsets before a time, newest first; time -1 latest, -2 earliest) and
:meth:`~SimpleConsumer.fetch_arrow` (a ``pyarrow.RecordBatch`` in Spark's Kafka columns).

A fetch asks for ``max_size`` bytes of a partition. If what comes back holds bytes but not
one whole batch — a message larger than the buffer — the fetch is retried with the size
doubled, up to ``max_buffer_size`` (then MessageTooLargeError), as the seeds describe; the
end of a buffer cut inside a batch is detected by the batch's size and ignored.

A :class:`MessageSet` decodes lazily, in Cython (batch walk, CRC, decompression, records),
skipping records before the requested offset and control batches. With
``isolation_level=1`` (read_committed) fetches stop at the last stable offset and the
batches of aborted transactions are skipped too (the broker lists them; see
:meth:`MessageSet.batches`).

Example::

    c = SimpleConsumer("127.0.0.1", 9092, so_timeout=10_000, buffer_size=64 * 1024)
    offset = c.get_offsets_before("orders", 0, -2, 1)[0]            # earliest
    for mo in c.fetch(FetchRequest("orders", 0, offset, 1 << 20)):
        print(mo.offset, mo.message.key, mo.message.value)
    batch = c.fetch_arrow("orders", 0, offset)                    # pyarrow.RecordBatch
    c.close()
"""
from __future__ import annotations

from typing import Iterator, NamedTuple

from fastkafka import errors, records
from fastkafka.protocol import ApiKey

from . import arrow as _arrow
from .connection import BrokerConnection
from .security import ClientSecurity

__all__ = ["SimpleConsumer", "FetchRequest", "MessageSet", "MessageAndOffset", "consumed_batches",
           "LATEST_TIME", "EARLIEST_TIME"]

LATEST_TIME = -1
EARLIEST_TIME = -2
_MAGIC_POS = 16    # the magic byte sits at the same place in v0/v1 messages and v2 batches


class FetchRequest(NamedTuple):
    """The seeds' ``FetchRequest(topic, partition, offset, maxSize)``."""
    topic: str
    partition: int
    offset: int
    max_size: int = 1 << 20


class MessageAndOffset(NamedTuple):
    """A record (``.key``, ``.value``, ``.timestamp``, ``.headers``) and its offset."""
    message: records.Record
    offset: int


def as_v2(buf):
    """Fetched bytes as v2 batches: magic 0/1 message sets (an old broker's log) converted."""
    if len(buf) > _MAGIC_POS and records.magic_of(buf) < 2:
        from fastkafka import legacy  # noqa: PLC0415  (only old logs pay for the import)
        return legacy.to_v2(buf)
    return buf


def consumed_batches(buffer, aborted_transactions=None, start: int = -1) -> Iterator[records.RecordBatch]:
    """The data batches of a fetched ``buffer`` a consumer keeps, whole: control batches are
    skipped, so are batches ending before ``start`` and, given a read_committed fetch's
    ``aborted_transactions`` (``[(producer_id, first_offset)]``), the batches of aborted
    transactions -- a listed producer's transactional batches from its ``first_offset`` up to its
    ABORT marker, as Kafka's consumer drops them."""
    pending = sorted(aborted_transactions or (), key=lambda a: a[1])
    aborting: set[int] = set()
    for batch in records.iter_batches(buffer):
        while pending and pending[0][1] <= batch.last_offset:
            aborting.add(pending.pop(0)[0])
        if batch.is_control:
            if batch.producer_id in aborting and records.control_record(batch) == (0, records.CONTROL_ABORT):
                aborting.discard(batch.producer_id)
            continue
        if batch.last_offset < start or (batch.is_transactional and batch.producer_id in aborting):
            continue
        yield batch


class MessageSet:
    """The records of one partition's fetch (the seeds' ``ByteBufferMessageSet``).

    Iterating yields :class:`MessageAndOffset` from ``offset`` on and raises ``error`` (a
    KafkaError) if the broker answered with one. ``next_offset`` is where the next fetch
    should start; ``high_watermark`` is the partition's end.
    """

    def __init__(self, topic: str, partition: int, offset: int, buffer, error=None,
                 high_watermark: int = -1, log_start_offset: int = -1,
                 aborted_transactions: list[tuple[int, int]] | None = None):
        self.topic, self.partition, self.offset = topic, partition, offset
        self.buffer = as_v2(buffer if buffer is not None else b"")
        self.error = error
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset
        # read_committed: ``[(producer_id, first_offset)]`` of the aborted transactions in the
        # buffer (None: a read_uncommitted fetch, nothing to drop)
        self.aborted_transactions = aborted_transactions
        self._validation = None

    def _valid(self):
        if self._validation is None:
            self._validation = records.validate(self.buffer)
        return self._validation

    @property
    def valid_bytes(self) -> int:
        """Bytes of whole batches (a trailing partial batch is not counted)."""
        return self._valid().valid_bytes

    @property
    def complete(self) -> bool:
        """False when the buffer holds bytes but no whole batch (a message larger than it)."""
        return not (len(self.buffer) and self._valid().batch_count == 0)

    def first_batch_size(self) -> int:
        """Size of the first batch as its header declares it (0 without a whole header)."""
        if len(self.buffer) < records.BATCH_OVERHEAD:
            return 0
        return records.read_header(self.buffer).size

    @property
    def next_offset(self) -> int:
        v = self._valid()
        return max(self.offset, v.last_offset + 1) if v.batch_count else self.offset

    def __iter__(self) -> Iterator[MessageAndOffset]:
        start = self.offset
        for batch in self.batches():
            for r in batch.records():
                if r.offset >= start:
                    yield MessageAndOffset(r, r.offset)

    def batches(self) -> Iterator[records.RecordBatch]:
        """The data batches a consumer sees, whole (the first may start before ``offset``):
        see :func:`consumed_batches`."""
        if self.error is not None:
            raise self.error
        return consumed_batches(self.buffer, self.aborted_transactions, self.offset)

    def columns(self) -> records.Columns:
        """All whole batches decoded into Arrow-layout columns (records before ``offset`` included)."""
        if self.error is not None:
            raise self.error
        return records.decode_columns(self.buffer)

    def to_arrow(self):
        """A ``pyarrow.RecordBatch`` in Spark's Kafka columns, from ``offset`` on."""
        if self.error is not None:
            raise self.error
        return _arrow.to_arrow(self.buffer, self.topic, self.partition, self.offset)

    def __repr__(self):
        return (f"MessageSet({self.topic}-{self.partition}@{self.offset}, {len(self.buffer)} bytes"
                f"{', ' + type(self.error).__name__ if self.error else ''})")


class SimpleConsumer:
    """Stateless fetches from the broker at ``host:port`` (it must lead the partitions asked).

    ``so_timeout`` (ms) bounds each request, ``buffer_size`` is the default fetch size and
    ``max_buffer_size`` the most a fetch doubles up to. ``max_wait_ms``/``min_bytes`` let a
    fetch long-poll for data (default: answer at once).
    """

    def __init__(self, host: str, port: int, so_timeout: int = 30_000, buffer_size: int = 64 * 1024,
                 *, client_id: str = "fastkafka", max_buffer_size: int = 64 << 20,
                 max_wait_ms: int = 0, min_bytes: int = 0, isolation_level: int = 0,
                 security: ClientSecurity | None = None):
        self.host, self.port = host, port
        self.isolation_level = isolation_level     # 1: read_committed
        self.buffer_size = buffer_size
        self.max_buffer_size = max(max_buffer_size, buffer_size)
        self.max_wait_ms, self.min_bytes = max_wait_ms, min_bytes
        self.conn = BrokerConnection(host, port, client_id=client_id, request_timeout_ms=so_timeout
                                     + max_wait_ms, connect_timeout_ms=so_timeout, security=security)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.conn.close()

    # -- fetch ----------------------------------------------------------------------------

    def fetch(self, request: FetchRequest) -> MessageSet:
        """One partition's messages from ``request.offset``; raises the partition's error."""
        ms = self.multifetch([request])[0]
        if ms.error is not None:
            raise ms.error
        return ms

    def multifetch(self, requests: list[FetchRequest]) -> list[MessageSet]:
        """Several partitions in one round trip; a MessageSet per request, in order, each
        carrying its own ``error`` (raised when iterated)."""
        sizes = [r.max_size or self.buffer_size for r in requests]
        results: list[MessageSet | None] = [None] * len(requests)
        todo = list(range(len(requests)))
        while todo:
            got = self._fetch([requests[i]._replace(max_size=sizes[i]) for i in todo])
            again = []
            for i, ms in zip(todo, got):
                results[i] = ms
                if ms.error is not None:
                    continue
                # A broker following KIP-74 returns a whole oversized first batch; the seeds'
                # bound on what a client ever needs to read still applies to it.
                if not ms.complete or ms.first_batch_size() > self.max_buffer_size:
                    if sizes[i] >= self.max_buffer_size or ms.complete:
                        ms.error = errors.MessageTooLargeError(
                            f"{ms.topic}-{ms.partition}@{ms.offset}: a batch larger than "
                            f"max_buffer_size={self.max_buffer_size}")
                    else:
                        sizes[i] = min(sizes[i] * 2, self.max_buffer_size)
                        again.append(i)
            todo = again
        return results

    def _fetch(self, requests: list[FetchRequest]) -> list[MessageSet]:
        topics: dict[str, list] = {}
        for r in requests:
            topics.setdefault(r.topic, []).append(
                {"partition": r.partition, "fetch_offset": r.offset, "partition_max_bytes": r.max_size})
        version = self._version(ApiKey.FETCH, 4)  # v4+ returns record batches v2
        resp = self.conn.request(ApiKey.FETCH, {
            "max_wait_ms": self.max_wait_ms, "min_bytes": self.min_bytes,
            "max_bytes": min(sum(r.max_size for r in requests), 0x7FFFFFFF),
            "isolation_level": self.isolation_level, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}, version)
        if getattr(resp, "error_code", 0):
            raise errors.for_code(resp.error_code)("fetch failed")
        answers = {}
        for t in resp.responses:
            for p in t.partitions:
                answers[t.topic, p.partition_index] = p
        out = []
        for r in requests:
            p = answers.get((r.topic, r.partition))
            if p is None:
                out.append(MessageSet(r.topic, r.partition, r.offset, b"",
                                      errors.UnknownServerError("partition missing from the response")))
                continue
            err = errors.for_code(p.error_code)(f"fetch {r.topic}-{r.partition}@{r.offset}") \
                if p.error_code else None
            aborted = getattr(p, "aborted_transactions", None)
            out.append(MessageSet(r.topic, r.partition, r.offset, p.records, err,
                                  p.high_watermark, p.log_start_offset,
                                  None if aborted is None or not self.isolation_level else
                                  [(a.producer_id, a.first_offset) for a in aborted]))
        return out

    def fetch_arrow(self, topic: str, partition: int, offset: int, max_bytes: int | None = None):
        """Records of ``topic``-``partition`` from ``offset`` as a ``pyarrow.RecordBatch`` with
        Spark's Kafka source columns (see :mod:`fastkafka.client.arrow`)."""
        return self.fetch(FetchRequest(topic, partition, offset,
                                       max_bytes or self.buffer_size)).to_arrow()

    # -- offsets --------------------------------------------------------------------------

    def get_offsets_before(self, topic: str, partition: int, time: int,
                           max_num_offsets: int = 1) -> list[int]:
        """Up to ``max_num_offsets`` offsets before ``time`` (ms; -1 latest, -2 earliest),
        newest first — the start offsets of the log's segments, plus the log end for -1."""
        part = {"partition_index": partition, "timestamp": time, "max_num_offsets": max_num_offsets}
        # v0 is the seeds' request; a broker whose range no longer starts at 0 gets v1+.
        if self.conn.connect().ranges.get(ApiKey.LIST_OFFSETS, (1, 0))[0] == 0:
            p = self._list_offsets(topic, part, 0)
            return list(p.old_style_offsets)
        p = self._list_offsets(topic, part, self._version(ApiKey.LIST_OFFSETS, 1))
        return [p.offset] if p.offset >= 0 and max_num_offsets > 0 else []

    offsets_before = get_offsets_before   # the name DESIGN §7 uses

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int:
        """The first offset whose timestamp is >= ``timestamp`` (ListOffsets v1+); -1 for none."""
        p = self._list_offsets(topic, {"partition_index": partition, "timestamp": timestamp},
                               self._version(ApiKey.LIST_OFFSETS, 1))
        return p.offset

    def _list_offsets(self, topic: str, part: dict, version: int):
        resp = self.conn.request(ApiKey.LIST_OFFSETS, {
            "replica_id": -1, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [part]}]}, version)
        p = resp.topics[0].partitions[0]
        if p.error_code:
            raise errors.for_code(p.error_code)(f"list offsets {topic}-{part['partition_index']}")
        return p

    def _version(self, api_key: int, at_least: int) -> int:
        return self.conn.connect().version(api_key, at_least)
