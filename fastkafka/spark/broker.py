"""What the Spark source asks the broker: partitions to read, their offsets, and their records.

Built on :class:`fastkafka.client.Cluster` (metadata, one connection per leader). Fetched batches
are decoded by :func:`fastkafka.records.decode_columns` (Cython) into Arrow buffers and shaped
into Spark's Kafka schema without touching records one by one in Python.

Example::

    with connect(opts) as cluster:
        tps = discover(cluster, opts)                      # [("orders", 0), ("orders", 1)]
        latest = list_offsets(cluster, dict.fromkeys(tps, LATEST))
        for rb in fetch_range(cluster, "orders", 0, 0, latest[("orders", 0)], opts):
            ...                                            # pyarrow.RecordBatch in Spark's schema
"""
# Why fetch_range has its own Fetch loop instead of SimpleConsumer.fetch_arrow (measured with a
# one-partition scan of a subprocess broker, the two alternating, best of 5 rounds, records/s):
#   2M x 100 B, two runs:  this loop 17.6 and 13.8 M/s; SimpleConsumer + to_arrow 15.8 and 12.4 M/s
#   0.5M x 1 KiB:          this loop 2.18 M/s;          SimpleConsumer + to_arrow 1.82 M/s
# i.e. the client path is 10-17 % slower, because:
# * MessageSet finds next_offset with records.validate (a CRC pass over the whole 16 MiB fetch)
#   and to_arrow then decodes with the CRC checked again; here batch_index walks headers
#   without the CRC and decode_columns checks it once.
# * SimpleConsumer opens its own connection per leader; this loop reuses the Cluster's.
# * The shape differs: Spark wants timestamp[us, UTC], the list item named "element", headers
#   only with includeHeaders, and rows cut at the range end too; client.arrow gives
#   timestamp[ms], always headers, and cuts only the start. Post-processing its batch costs
#   what spark_columns does, so the decode-to-Arrow step (records.columns_to_arrow) is shared
#   and the shaping stays here.
# Reuse becomes worthwhile once MessageSet can report next_offset without a CRC pass.
from __future__ import annotations

import contextlib
import queue
import threading
from typing import Iterator

import numpy as np
import pyarrow as pa

from fastkafka import errors
from fastkafka import records
from fastkafka._core.records import batch_index
from fastkafka.client import Cluster
from fastkafka.client.simple_consumer import consumed_batches
from fastkafka.protocol import ApiKey

from .options import EARLIEST, LATEST, SourceOptions, client_config
from .planning import DataLossError

__all__ = ["connect", "discover", "list_offsets", "fetch_range", "spark_columns", "EARLIEST",
           "LATEST"]

_TIMESTAMP = pa.timestamp("us", tz="UTC")
# Spark's Kafka schema, in Spark's column order; headers only with includeHeaders.
_HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()),
                                                        pa.field("value", pa.binary())])))
_FIELDS = [pa.field("key", pa.binary()), pa.field("value", pa.binary()),
           pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
           pa.field("offset", pa.int64()), pa.field("timestamp", _TIMESTAMP),
           pa.field("timestampType", pa.int32())]


def arrow_schema(include_headers: bool) -> pa.Schema:
    return pa.schema(_FIELDS + ([pa.field("headers", _HEADERS_TYPE)] if include_headers else []))


@contextlib.contextmanager
def connect(opts: SourceOptions):
    """A :class:`Cluster` for one planning step or one task, closed afterwards; it reaches the
    brokers as ``opts.security`` says (files read here, i.e. on the driver or the executor)."""
    cluster = Cluster(client_config(opts, "fastkafka-spark"))
    try:
        yield cluster
    finally:
        cluster.close()


def discover(cluster: Cluster, opts: SourceOptions) -> list[tuple]:
    """The topic-partitions the subscription covers now, sorted. A subscribed topic that does
    not exist has no partitions (as with Spark: the query sees no rows, it does not fail)."""
    if opts.strategy == "assign":
        return sorted(set(opts.assign))
    if opts.strategy == "subscribe":
        names = list(opts.topics)
        cluster.refresh(names, allow_auto_create=False)
    else:
        cluster.refresh(None)
        names = [t for t, info in cluster.topics.items()
                 if not info.is_internal and opts.matches(t)]
    tps = []
    for name in names:
        info = cluster.topics.get(name)
        if info is None or info.error_code:
            continue
        tps.extend((name, p) for p in info.partitions)
    return sorted(tps)


def list_offsets(cluster: Cluster, queries: dict, isolation_level: int = 0) -> dict[tuple, int]:
    """``{tp: -2 | -1 | timestamp_ms}`` -> ``{tp: offset}`` (-1 when no record is that recent),
    one ListOffsets request per leader; latest is the last stable offset for ``isolation_level``
    1 (read_committed)."""
    by_leader: dict[int, dict] = {}
    for (t, p), ts in queries.items():
        by_leader.setdefault(cluster.leader_for(t, p), {}).setdefault(t, []).append((p, ts))
    out = {}
    for leader, topics in by_leader.items():
        conn = cluster.connection(leader)
        resp = conn.request(ApiKey.LIST_OFFSETS, {
            "replica_id": -1, "isolation_level": isolation_level,
            "topics": [{"name": t, "partitions": [{"partition_index": p, "timestamp": ts}
                                                  for p, ts in parts]}
                       for t, parts in topics.items()]},
            version=conn.version(ApiKey.LIST_OFFSETS, 2 if isolation_level else 1))
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    cluster.invalidate()
                    raise errors.for_code(p.error_code)(f"ListOffsets {t.name}-{p.partition_index}")
                out[(t.name, p.partition_index)] = p.offset
    return out


def _string_column(text: str, n: int) -> pa.Array:
    # One value repeated: offsets are an arithmetic progression, data the bytes n times.
    raw = text.encode()
    offs = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs), pa.py_buffer(raw * n)])


def spark_columns(cols, topic: str, partition: int, lo: int, hi: int,
                  include_headers: bool) -> pa.RecordBatch | None:
    """Decoded columns -> a RecordBatch in Spark's Kafka schema holding offsets ``[lo, hi)``.

    A fetch returns whole batches, so the first may start before ``lo`` and the last run past
    ``hi``; offsets ascend within a partition, so the rows to keep are one slice.
    """
    if cols.count == 0:
        return None
    offsets = np.frombuffer(cols.offsets, dtype=np.int64)
    a = int(np.searchsorted(offsets, lo, "left"))
    b = int(np.searchsorted(offsets, hi, "left"))
    if a >= b:
        return None
    base = records.columns_to_arrow(cols).slice(a, b - a)
    n = b - a
    arrays = [base.column(0), base.column(1), _string_column(topic, n),
              pa.array(np.full(n, partition, dtype=np.int32)), base.column(2),
              base.column(3).cast(_TIMESTAMP), base.column(4)]
    if include_headers:
        arrays.append(base.column(5).cast(_HEADERS_TYPE))  # Spark names the list item "element"
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))


_DONE = object()


def prefetched(batches: Iterator, depth: int = 2) -> Iterator:
    """Run ``batches`` in a thread ``depth`` items ahead of the consumer.

    A Spark task's Python worker spends its time writing each Arrow batch to the JVM; the next
    fetch (socket reads and Cython decoding, both without the GIL) proceeds meanwhile. Errors
    are re-raised in the consumer; abandoning the generator stops the thread at its next item.
    """
    q: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def run():
        try:
            for item in batches:
                if stop.is_set():
                    return
                q.put(item)
            q.put(_DONE)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            q.put(e)

    t = threading.Thread(target=run, name="fastkafka-spark-fetch", daemon=True)
    t.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while t.is_alive():     # unblock a put() so the thread sees ``stop``
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass


def fetch_range(cluster: Cluster, topic: str, partition: int, start: int, end: int,
                opts: SourceOptions, max_wait_ms: int = 500) -> Iterator[pa.RecordBatch]:
    """Yield Arrow batches of the records at offsets ``[start, end)`` of one partition.

    Offsets deleted by retention meanwhile raise :class:`DataLossError` when ``failOnDataLoss``
    is on and are skipped otherwise; so is a range that ends past what the partition holds.
    read_committed (``kafka.isolation.level``) reads up to the last stable offset and drops the
    batches of aborted transactions, a whole batch at a time, before they are decoded.
    """
    committed = opts.isolation_level == 1
    pos = start
    while pos < end:
        conn = cluster.connection(cluster.leader_for(topic, partition))
        resp = conn.request(ApiKey.FETCH, {
            "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1,
            "max_bytes": opts.fetch_max_bytes, "isolation_level": opts.isolation_level, "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": partition, "fetch_offset": pos, "log_start_offset": -1,
                "partition_max_bytes": opts.fetch_max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""}, version=conn.version(ApiKey.FETCH, 4))
        part = resp.responses[0].partitions[0]
        if part.error_code == errors.OffsetOutOfRangeError.code:
            pos = _skip_lost(cluster, topic, partition, pos, end, opts)
            continue
        if part.error_code:
            cluster.invalidate()
            raise errors.for_code(part.error_code)(f"Fetch {topic}-{partition} at {pos}")
        data = part.records
        index = batch_index(data, check_crc=False) if data else []
        if not index:
            available = part.last_stable_offset if committed else part.high_watermark
            if available <= pos:
                # The partition no longer holds what was planned (truncated or deleted).
                _lost(opts, topic, partition, pos, end, available)
                return
            continue
        if committed and part.aborted_transactions:
            aborted = [(a.producer_id, a.first_offset) for a in part.aborted_transactions]
            data = b"".join(b.buffer for b in consumed_batches(data, aborted))
        rb = spark_columns(records.decode_columns(data), topic, partition, pos, end,
                           opts.include_headers) if data else None
        if rb is not None:
            yield rb
        pos = index[-1][2] + 1   # after the last offset of the last whole batch (gaps included)


def _lost(opts, topic, partition, pos, end, available) -> None:
    if opts.fail_on_data_loss:
        raise DataLossError(f"Cannot fetch offsets [{pos}, {end}) of {topic}-{partition}: the "
                            f"partition now ends at {available}. Set the source option "
                            f"\"failOnDataLoss\" to \"false\" to skip lost records.")


def _skip_lost(cluster, topic, partition, pos, end, opts) -> int:
    earliest = list_offsets(cluster, {(topic, partition): EARLIEST})[(topic, partition)]
    if earliest <= pos:   # out of range above the end: nothing more to read
        _lost(opts, topic, partition, pos, end, earliest)
        return end
    if opts.fail_on_data_loss:
        raise DataLossError(f"Cannot fetch offset {pos} of {topic}-{partition}: the earliest "
                            f"available offset is {earliest}. Set the source option "
                            f"\"failOnDataLoss\" to \"false\" to skip lost records.")
    return min(earliest, end)
