"""validate's summary, batch_index, and assign_offsets stamping batches in place."""
import struct
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka.record.default_records import DefaultRecordBatch as KpBatch

from fastkafka import errors, records
from fastkafka._core import records as core
from fastkafka.records import build_batch


def batches(counts, codec=0, ts0=1000):
    out = []
    for i, n in enumerate(counts):
        out.append(build_batch([(b"k", b"v%d" % j, [], ts0 + 10 * i + j) for j in range(n)],
                               compression=codec if i % 2 else 0))
    return out


def test_validate_summary_and_batch_index():
    parts = batches([3, 1, 5])
    # offsets as a log would hold them
    data = bytearray(b"".join(parts))
    assert core.assign_offsets(data, 100) == 109
    v = core.validate(bytes(data))
    assert (v.valid_bytes, v.batch_count, v.record_count) == (len(data), 3, 9)
    assert (v.first_offset, v.last_offset, v.max_timestamp) == (100, 108, 1024)
    assert (v.error, v.error_code, v.error_position, v.truncated) == (None, 0, -1, False)
    sizes = [len(p) for p in parts]
    assert core.batch_index(bytes(data)) == [
        (0, 100, 102, 1002, sizes[0]),
        (sizes[0], 103, 103, 1010, sizes[1]),
        (sizes[0] + sizes[1], 104, 108, 1024, sizes[2]),
    ]
    empty = core.validate(b"")
    assert (empty.valid_bytes, empty.batch_count, empty.first_offset, empty.last_offset,
            empty.max_timestamp, empty.error) == (0, 0, -1, -1, -1, None)


def test_validate_accepts_bytes_like():
    data = b"".join(batches([2, 2]))
    for obj in (data, bytearray(data), memoryview(data)):
        assert core.validate(obj).record_count == 4
    import mmap
    m = mmap.mmap(-1, len(data))
    m.write(data)
    assert core.validate(m).batch_count == 2
    m.close()


@pytest.mark.parametrize("codec", [0, 4])
def test_assign_offsets_keeps_crc(codec):
    parts = batches([4, 2, 3], codec=codec)
    data = bytearray(b"".join(parts))
    crcs = [core.read_header(p).crc for p in parts]
    nxt = core.assign_offsets(data, 2**40, partition_leader_epoch=7)
    assert nxt == 2**40 + 9
    pos, base = 0, 2**40
    for p, crc in zip(parts, crcs):
        h = core.read_header(data, pos)
        assert (h.base_offset, h.partition_leader_epoch, h.crc) == (base, 7, crc)
        assert h.timestamp_type == 0
        kp = KpBatch(bytes(data[pos:pos + len(p)]))
        assert kp.validate_crc() and kp.base_offset == base
        assert [r.offset for r in kp] == list(range(base, base + h.record_count))
        pos += len(p)
        base += h.record_count
    assert core.validate(bytes(data)).error is None


def test_assign_offsets_log_append_time():
    data = bytearray(b"".join(batches([3, 2], codec=1)))
    assert core.assign_offsets(data, 5, partition_leader_epoch=1, log_append_time=99_999) == 10
    assert core.validate(bytes(data)).error is None
    pos = 0
    for batch in records.iter_batches(bytes(data)):
        assert batch.timestamp_type == 1 and batch.max_timestamp == 99_999
        # base timestamp is untouched, records read back with the log append time
        assert batch.base_timestamp != 99_999
        assert {r.timestamp for r in batch.records()} == {99_999}
        kp = KpBatch(bytes(data[batch.position:batch.position + batch.size]))
        assert kp.validate_crc() and kp.timestamp_type == 1
        assert [r.timestamp for r in kp] == [99_999] * batch.record_count
        pos += batch.size
    cols = records.decode_columns(bytes(data))
    assert set(cols.timestamps) == {99_999} and set(cols.timestamp_types) == {1}


def test_assign_offsets_respects_last_offset_delta_gaps():
    gap = build_batch([records.Record(0, 1, None, b"a"), records.Record(9, 2, None, b"b")])
    data = bytearray(gap + gap)
    assert core.assign_offsets(data, 0) == 20
    assert core.read_header(data, len(gap)).base_offset == 10


def test_assign_offsets_bad_input():
    data = bytearray(b"".join(batches([2])))
    with pytest.raises(errors.CorruptRecordError, match="position %d" % len(data)):
        core.assign_offsets(data + b"\x00" * 20, 0)
    assert core.read_header(data).base_offset == 0   # stamped before the garbage was found
    with pytest.raises((TypeError, ValueError, BufferError)):
        core.assign_offsets(bytes(data), 0)          # read-only
    assert core.assign_offsets(bytearray(), 42) == 42
    short = bytearray(data)
    struct.pack_into(">i", short, 8, 10)
    with pytest.raises(errors.CorruptRecordError):
        core.assign_offsets(short, 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=8), st.integers(0, 2**62),
       st.integers(-1, 2**31 - 1), st.sampled_from([-1, 0, 2**41]))
def test_assign_offsets_hypothesis(counts, base, epoch, lat):
    data = bytearray(b"".join(batches(counts)))
    assert core.assign_offsets(data, base, epoch, lat) == base + sum(counts)
    v = core.validate(bytes(data))
    assert v.error is None
    assert (v.first_offset, v.last_offset, v.record_count) == (base, base + sum(counts) - 1, sum(counts))
    if lat >= 0:
        assert v.max_timestamp == lat
    cols = core.decode_columns(bytes(data))
    assert list(cols.offsets) == list(range(base, base + sum(counts)))


def test_big_buffers_release_the_gil():
    # > NOGIL_THRESHOLD: validate and assign_offsets run without the GIL; results must not change
    big = [(None, b"x" * 1000, [], 1) for _ in range(300)]
    data = bytearray(build_batch(big) * 8)
    results = []

    def work():
        local = bytearray(data)
        nxt = core.assign_offsets(local, 0, log_append_time=5)
        results.append((nxt, core.validate_records(bytes(local)).error, core.decode_columns(local).count))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [(2400, None, 2400)] * 4
