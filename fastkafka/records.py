"""Record batches v2 (magic 2): build, iterate and decode to columns, compression included.

The byte work is in :mod:`fastkafka._core.records` (Cython); this module adds the policy the
core leaves out: compression (via :mod:`fastkafka.compression`), the wall clock for records
without a timestamp, control records (transaction markers), and Arrow conversion.

Example::

    >>> from fastkafka import records
    >>> batch = records.build_batch([(b"k", b"v", [("h", b"1")], 1000), (None, b"w", [], 1001)],
    ...                             compression=4, base_offset=10)
    >>> [(r.offset, r.key, r.value) for b in records.iter_batches(batch) for r in b.records()]
    [(10, b'k', b'v'), (11, None, b'w')]
    >>> cols = records.decode_columns(batch)
    >>> list(cols.offsets), cols.value_data
    ([10, 11], b'vw')
"""
from __future__ import annotations

import struct
import time
from typing import Iterable, Iterator

from . import compression as _compression
from . import errors
from ._core import records as _core
from ._core.records import (BatchHeader, Columns, Record, Validation, assign_offsets,
                            batch_index, magic_of, read_header, validate, validate_records)

__all__ = ["Record", "RecordBatch", "BatchHeader", "Columns", "Validation", "build_batch",
           "build_control_batch", "iter_batches", "control_record", "end_txn_marker", "decode_columns",
           "keyless_in_compressed",
           "columns_to_arrow", "validate", "validate_records", "batch_index", "assign_offsets",
           "read_header", "magic_of", "BATCH_OVERHEAD", "CONTROL_ABORT", "CONTROL_COMMIT"]

BATCH_OVERHEAD = _core.BATCH_OVERHEAD
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
# Control record key: version int16, type int16. Value of an end-transaction marker: version
# int16, coordinatorEpoch int32.
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")
DEFAULT_MAX_DECOMPRESSED = _compression.DEFAULT_MAX


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def build_batch(records: Iterable, *, compression: int = 0, base_offset: int = 0,
                timestamp_type: int = 0, producer_id: int = -1, producer_epoch: int = -1,
                base_sequence: int = -1, is_transactional: bool = False, is_control: bool = False,
                partition_leader_epoch: int = -1, base_timestamp: int | None = None,
                compression_level: int | None = None) -> bytes:
    """Build one v2 batch from ``(key, value, headers, timestamp)`` tuples or :class:`Record`\\ s.

    Keys/values are bytes-like or None, headers ``[(str, bytes | None)]`` (or None), a None
    timestamp means now. With ``compression`` != 0 the record stream is always compressed (as
    Java's producer does, even when it does not shrink). Raises ValueError for no records.

    Example::

        >>> b = build_batch([(b"k", b"v", [], 1000)], producer_id=7, producer_epoch=0,
        ...                 base_sequence=0)
        >>> read_header(b).producer_id, len(b)
        (7, 70)
    """
    codec = int(compression)
    if not 0 <= codec <= 4:
        raise errors.UnsupportedCompressionError(f"unknown compression codec {codec}")
    reserve = BATCH_OVERHEAD if codec == 0 else 0
    buf, count, last_delta, base_ts, max_ts = _core.encode_records(
        records, _now_ms(), base_timestamp, base_offset=base_offset, reserve=reserve)
    if count == 0:
        raise ValueError("a record batch needs at least one record")
    if codec:
        compressed = _compression.compress(codec, buf, compression_level)
        buf = bytearray(BATCH_OVERHEAD)
        buf += compressed
    _core.finish_batch(buf, record_count=count, last_offset_delta=last_delta,
                       base_timestamp=base_ts, max_timestamp=max_ts, base_offset=base_offset,
                       partition_leader_epoch=partition_leader_epoch, compression=codec,
                       timestamp_type=timestamp_type, is_transactional=is_transactional,
                       is_control=is_control, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=base_sequence)
    return bytes(buf)


def build_control_batch(commit: bool, producer_id: int, producer_epoch: int, *,
                        coordinator_epoch: int = 0, base_offset: int = 0,
                        timestamp: int | None = None, partition_leader_epoch: int = -1) -> bytes:
    """A transaction marker: a transactional control batch of one COMMIT or ABORT record.

    Example::

        >>> b = next(iter_batches(build_control_batch(True, producer_id=5, producer_epoch=1)))
        >>> b.is_control, control_record(b)
        (True, (0, 1))
    """
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _END_TXN_VALUE.pack(0, coordinator_epoch)
    return build_batch([(key, value, [], timestamp)], base_offset=base_offset,
                       producer_id=producer_id, producer_epoch=producer_epoch,
                       is_transactional=True, is_control=True,
                       partition_leader_epoch=partition_leader_epoch)


class RecordBatch:
    """One batch inside a buffer: the header fields as attributes plus :meth:`records`.

    Holds a memoryview of the batch's bytes (no copy). ``max_decompressed`` bounds what a
    compressed batch may inflate to.
    """

    __slots__ = ("header", "buffer", "max_decompressed")

    def __init__(self, header: BatchHeader, buffer: memoryview,
                 max_decompressed: int = DEFAULT_MAX_DECOMPRESSED):
        self.header = header
        self.buffer = buffer
        self.max_decompressed = max_decompressed

    def __getattr__(self, name):
        # base_offset, last_offset, max_timestamp, compression, is_control, size, ...
        return getattr(self.header, name)

    def record_stream(self) -> bytes | memoryview:
        """The uncompressed record stream (decompressed when the batch is compressed)."""
        stream = self.buffer[BATCH_OVERHEAD:]
        codec = self.header.compression
        if codec:
            stream = _compression.decompress(codec, stream, self.max_decompressed)
        return stream

    def records(self) -> list[Record]:
        """The batch's records (LogAppendTime batches give each record maxTimestamp)."""
        h = self.header
        return _core.decode_records(self.record_stream(), h.base_offset, h.base_timestamp,
                                    h.record_count, timestamp_type=h.timestamp_type,
                                    max_timestamp=h.max_timestamp)

    def __iter__(self):
        return iter(self.records())

    def __repr__(self):
        return f"RecordBatch({self.header!r})"


def iter_batches(buf, *, check_crc: bool = True,
                 max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> Iterator[RecordBatch]:
    """Yield each whole batch of ``buf``; a partial trailing batch ends the iteration quietly
    (fetch responses end that way), any other problem raises CorruptRecordError after the
    valid batches before it were yielded.

    Example::

        >>> [b.base_offset for b in iter_batches(build_batch([(None, b"x", [], 1)], base_offset=3))]
        [3]
    """
    view = memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    v = validate(view, check_crc=check_crc)
    for pos, _base, _last, _max_ts, size in batch_index(view[:v.valid_bytes], check_crc=False):
        yield RecordBatch(read_header(view, pos), view[pos:pos + size], max_decompressed)
    if v.error is not None and not v.truncated:
        raise v.error


def control_record(batch: RecordBatch) -> tuple[int, int] | None:
    """``(version, type)`` of a control batch's record (type 0 ABORT, 1 COMMIT), or None for a
    data batch. Raises CorruptRecordError for a control record with a malformed key."""
    if not batch.header.is_control:
        return None
    recs = batch.records()
    if not recs or recs[0].key is None or len(recs[0].key) < _CONTROL_KEY.size:
        raise errors.CorruptRecordError("control batch without a valid control record key")
    return _CONTROL_KEY.unpack_from(recs[0].key)


def end_txn_marker(batch: RecordBatch) -> tuple[bool, int] | None:
    """``(commit, coordinator_epoch)`` of a transaction marker (an end-transaction control
    batch), or None for a data batch, a control batch emptied by compaction or another control
    type. Raises CorruptRecordError for a malformed control record.

    Example::

        >>> end_txn_marker(next(iter_batches(build_control_batch(False, 5, 1, coordinator_epoch=3))))
        (False, 3)
    """
    if not batch.header.is_control or batch.header.record_count == 0:
        return None
    rec = batch.records()[0]
    if rec.key is None or len(rec.key) < _CONTROL_KEY.size:
        raise errors.CorruptRecordError("control batch without a valid control record key")
    _version, kind = _CONTROL_KEY.unpack_from(rec.key)
    if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
        return None
    if rec.value is None or len(rec.value) < _END_TXN_VALUE.size:
        raise errors.CorruptRecordError("transaction marker without a valid value")
    return kind == CONTROL_COMMIT, _END_TXN_VALUE.unpack_from(rec.value)[1]


def keyless_in_compressed(buf, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> int:
    """Records without a key inside the compressed data batches of ``buf`` (control batches
    excepted): what a compacted topic must refuse, found as Kafka does, by decompressing.

    Example::

        >>> keyless_in_compressed(build_batch([(None, b"v", [], 1)], compression=1))
        1
    """
    view = memoryview(buf)
    n = 0
    for _ordinal, pos, size, codec in _core.compressed_batches(buf):
        if not read_header(view, pos).is_control:
            n += _core.count_null_keys(_compression.decompress(
                codec, view[pos + BATCH_OVERHEAD:pos + size], max_decompressed))
    return n


def decode_columns(buf, *, check_crc: bool = True, include_control: bool = False,
                   max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> Columns:
    """Decode every whole batch of ``buf`` into Arrow-layout columns, decompressing compressed
    batches (each bounded by ``max_decompressed``). See :class:`fastkafka._core.records.Columns`.

    Example::

        >>> c = decode_columns(build_batch([(b"a", b"1", [("h", None)], 5)], compression=1))
        >>> list(c.timestamps), c.key_data, list(c.header_offsets), c.header_value_null_count
        ([5], b'a', [0, 1], 1)
    """
    compressed = _core.compressed_batches(buf)
    streams = None
    if compressed:
        view = memoryview(buf)
        streams = [None] * (compressed[-1][0] + 1)
        for ordinal, pos, size, codec in compressed:
            streams[ordinal] = _compression.decompress(
                codec, view[pos + BATCH_OVERHEAD:pos + size], max_decompressed)
    return _core.decode_columns(buf, streams, check_crc=check_crc, include_control=include_control)


def columns_to_arrow(cols: Columns):
    """A ``pyarrow.RecordBatch`` (key, value binary; offset int64; timestamp ms; timestampType
    int32; headers list<struct<key: string, value: binary>>) sharing the columns' buffers.
    Needs pyarrow (the ``spark`` extra)."""
    import pyarrow as pa

    n = cols.count
    buf = pa.py_buffer

    def binary(validity, offsets, data, length, nulls, typ=pa.binary()):
        return pa.Array.from_buffers(typ, length, [None if validity is None else buf(validity),
                                                   buf(offsets), buf(data)], null_count=nulls)

    h = len(cols.header_key_offsets) - 1
    hkeys = binary(None, cols.header_key_offsets, cols.header_key_data, h, 0, pa.string())
    hvals = binary(cols.header_value_validity, cols.header_value_offsets, cols.header_value_data,
                   h, cols.header_value_null_count)
    headers = pa.ListArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), n + 1, [None, buf(cols.header_offsets)]),
        pa.StructArray.from_arrays([hkeys, hvals], ["key", "value"]))
    return pa.RecordBatch.from_arrays([
        binary(cols.key_validity, cols.key_offsets, cols.key_data, n, cols.key_null_count),
        binary(cols.value_validity, cols.value_offsets, cols.value_data, n, cols.value_null_count),
        pa.Array.from_buffers(pa.int64(), n, [None, buf(cols.offsets)]),
        pa.Array.from_buffers(pa.timestamp("ms"), n, [None, buf(cols.timestamps)]),
        pa.Array.from_buffers(pa.int32(), n, [None, buf(cols.timestamp_types)]),
        headers,
    ], ["key", "value", "offset", "timestamp", "timestampType", "headers"])
