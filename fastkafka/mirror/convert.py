"""Fetched source batches -> record streams for the target, with as little per-record work as
the routing allows.

For one partition's fetch (a :class:`~fastkafka.client.simple_consumer.MessageSet`; with
read_committed only the committed data batches, see ``MessageSet.batches``):

* **copy** -- a big batch (``copy_min`` .. ``max_batch`` bytes of records) whose records all
  follow the position, with consecutive offsets and CreateTime, goes to the target as its record
  stream byte for byte (decompressed if the source compressed it; the target producer compresses
  with its own ``compression.type``): keys, values, headers and timestamps are the source's bytes,
  and the per-record cost is nil.
* **merge** -- smaller batches (Java's producer writes 16 KiB ones) have their records appended to
  streams of up to ``max_batch`` bytes, re-based in Cython with no Python object per record
  (:class:`~fastkafka._core.records_merge.RecordMerger`). A Produce request carries one batch per
  partition, so copying small batches one by one would make the target broker's per-request cost,
  not the bytes, the mirror's limit (measured: ~140 MB/s against ~350 MB/s merged).
* **route** -- when the target topic has another partition count, records are grouped by the
  target partition of their key (murmur2, as Java's producer; records without a key keep their
  source partition modulo the target's count), in source order within each group.

LogAppendTime batches are decoded: each record then carries the append time, which becomes its
CreateTime on the target -- the timestamp a consumer of the source saw. Offsets of the target are
its own (consecutive); translating them is the offset syncs' job (:mod:`~fastkafka.mirror.syncs`),
for which each chunk of a same-partition route carries the source offsets of its first and last
record (``Converted.offsets``; None when records are routed by key: no source offset maps to one
target partition then).

Example::

    >>> from fastkafka import records
    >>> from fastkafka.client.simple_consumer import MessageSet
    >>> buf = records.build_batch([(b"k%d" % i, b"v", [("h", b"1")], 1000 + i) for i in range(3)],
    ...                           base_offset=40)
    >>> out = convert(MessageSet("orders", 1, 41, buf), Route("orders", "dc1.orders", 2, 2))
    >>> [(tp, enc.count, enc.base_timestamp) for tp, enc in out.chunks], out.records, out.next_offset
    ([(('dc1.orders', 1), 2, 1001)], 2, 43)
    >>> out.offsets         # the source offsets of each chunk's first and last record
    [(41, 42)]
"""
from __future__ import annotations

from typing import NamedTuple

from fastkafka import records
from fastkafka._core.records import decode_records
from fastkafka._core.records_build import encode_records
from fastkafka._core.records_merge import RecordMerger
from fastkafka.client.partitioner import murmur2_partition
from fastkafka.client.sender import EncodedRecords

__all__ = ["Route", "Converted", "convert", "COPY_MIN", "MAX_BATCH"]

COPY_MIN = 128 * 1024        # a batch at least this big is copied as it is
MAX_BATCH = 1_000_000        # record bytes per target batch: under brokers' 1 MiB message.max.bytes
_RESERVE = records.BATCH_OVERHEAD


class Route(NamedTuple):
    """Where a source topic goes: its target name and both partition counts."""
    source_topic: str
    target_topic: str
    source_partitions: int
    target_partitions: int

    @property
    def same_partitions(self) -> bool:
        return self.source_partitions == self.target_partitions


class Converted(NamedTuple):
    """One source partition's fetched records, ready to send."""
    source: tuple[str, int]
    next_offset: int               # the source position after these records
    chunks: list                   # [((target topic, partition), EncodedRecords)]
    records: int
    bytes: int
    offsets: list | None = None    # per chunk: (first, last) source offset; None: routed by key


def convert(ms, route: Route, *, copy_min: int = COPY_MIN, max_batch: int = MAX_BATCH) -> Converted:
    """The chunks that copy ``ms`` (fetched from ``ms.offset``) along ``route``."""
    start = ms.offset
    target = (route.target_topic, ms.partition)
    chunks: list = []
    offsets: list | None = [] if route.same_partitions else None
    merger = RecordMerger(max_batch, _RESERVE)      # small batches, same partition
    routed: list = []                               # decoded records of a routed topic
    routed_bytes = count = nbytes = 0
    for batch in ms.batches():
        h = batch.header
        stream = batch.record_stream()
        nbytes += len(stream)
        if not route.same_partitions:
            recs = decode_records(stream, h.base_offset, h.base_timestamp, h.record_count,
                                  timestamp_type=h.timestamp_type, max_timestamp=h.max_timestamp)
            recs = [r for r in recs if r.offset >= start] if h.base_offset < start else recs
            routed += recs
            routed_bytes += len(stream)
            count += len(recs)
        elif (h.base_offset >= start and h.timestamp_type == 0 and h.record_count == h.last_offset_delta + 1
                and copy_min <= len(stream) <= max_batch):
            _merged(target, merger, chunks, offsets)
            offsets.append((h.base_offset, h.base_offset + h.last_offset_delta))
            buf = bytearray(_RESERVE)
            buf += stream
            chunks.append((target, EncodedRecords(buf, h.record_count, h.last_offset_delta,
                                                  h.base_timestamp, h.max_timestamp)))
            count += h.record_count
        else:
            count += merger.add(stream, h.base_offset, h.base_timestamp, h.record_count, start_offset=start,
                                timestamp_type=h.timestamp_type, max_timestamp=h.max_timestamp)
    if routed:
        chunks += _routed(route, ms.partition, routed, routed_bytes, max_batch)
    elif route.same_partitions:
        _merged(target, merger, chunks, offsets)
    return Converted((ms.topic, ms.partition), ms.next_offset, chunks, count, nbytes, offsets)


def _merged(target, merger: RecordMerger, chunks: list, offsets: list) -> None:
    """The merger's streams (in source order, each of at most ``max_batch`` bytes, offset deltas
    0, 1, ...: the target producer numbers sequences by record count) go to ``chunks``, the
    source offsets of each one's first and last record to ``offsets``."""
    for buf, n, last_delta, base_ts, max_ts, first, last in merger.finish():
        offsets.append((first, last))
        chunks.append((target, EncodedRecords(buf, n, last_delta, base_ts, max_ts)))


def _routed(route: Route, partition: int, recs: list, nbytes: int, max_batch: int) -> list:
    n = route.target_partitions
    groups: dict[int, list] = {}
    fallback = partition % n
    for r in recs:
        p = fallback if r.key is None else murmur2_partition(r.key, n)
        groups.setdefault(p, []).append((r.key, r.value, r.headers, r.timestamp))
    out = []
    per = max(1, len(recs) * max_batch // max(nbytes, 1))
    for p, group in sorted(groups.items()):
        for i in range(0, len(group), per):
            out.append(((route.target_topic, p),
                        EncodedRecords(*encode_records(group[i:i + per], 0, reserve=_RESERVE))))
    return out
