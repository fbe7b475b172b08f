"""Retention by time and size, DeleteRecords, delayed removal under a reader's snapshot."""
import os

import pytest

from fastkafka import errors
from fastkafka.records import iter_batches

from .conftest import batch

DAY = 86_400_000


def filled(make_log, clock, n=20, **cfg):
    log = make_log(segment_bytes=300, **cfg)
    for i in range(n):
        log.append(batch(1, ts=clock.now + i * 1000, size=50))   # two batches per segment
    return log


def test_time_retention_uses_the_largest_timestamp_and_never_the_active_segment(make_log, clock):
    log = filled(make_log, clock, retention_ms=DAY, file_delete_delay_ms=0)
    segs = log.segments
    assert len(segs) >= 5
    assert log.delete_old_segments() == 0
    # just past the second segment's newest record: the first two go, nothing else
    clock.now = segs[1].max_timestamp + DAY + 1
    assert log.delete_old_segments() == 2
    assert log.segments == segs[2:] and log.log_start_offset == segs[2].base_offset
    clock.advance(365 * DAY)
    log.delete_old_segments()
    assert log.segments == (segs[-1],)             # the active one stays
    log.scheduler.run_due()
    assert sorted(os.listdir(log.dir)) == sorted(
        os.path.basename(p) for p in (segs[-1].log_path, segs[-1].index_path, segs[-1].time_index_path))
    with pytest.raises(errors.OffsetOutOfRangeError):
        log.read(0, 100)


def test_size_retention_deletes_oldest_whole_segments(make_log, clock):
    log = filled(make_log, clock, retention_bytes=1000, retention_ms=-1)
    total = log.size
    sizes = [s.size for s in log.segments]
    log.delete_old_segments()
    assert log.size <= 1000 + sizes[-1] and log.size > 1000 - max(sizes)
    # deleting one more would go below retention.bytes
    assert log.size - log.segments[0].size < 1000 < total


def test_compact_only_topics_are_not_deleted_by_time(make_log, clock):
    log = filled(make_log, clock, retention_ms=1, cleanup_policy=("compact",))
    clock.advance(DAY)
    assert log.delete_old_segments() == 0


def test_delete_records_advances_the_log_start_offset(make_log, clock):
    log = filled(make_log, clock, file_delete_delay_ms=0)
    seg2 = log.segments[2]
    assert log.delete_records(seg2.base_offset + 1) == seg2.base_offset + 1
    assert log.segments[0] is seg2
    assert log.offset_for_timestamp(-2) == (seg2.base_offset + 1, -1)
    with pytest.raises(errors.OffsetOutOfRangeError):
        log.read(seg2.base_offset, 100)
    assert log.read(seg2.base_offset + 1, 100).length > 0
    with pytest.raises(errors.OffsetOutOfRangeError):
        log.delete_records(log.high_watermark + 1)
    assert log.delete_records(-1) == log.high_watermark == log.log_start_offset


def test_reader_holding_a_snapshot_reads_a_deleted_segment(make_log, clock):
    log = filled(make_log, clock, retention_ms=DAY, file_delete_delay_ms=60_000)
    region = log.read(0, 1 << 20)           # the server holds this while it sends
    expected = region.read_bytes()
    snap = log._segments.snapshot()         # a second reader mid-lookup holds the old list
    clock.advance(365 * DAY)
    assert log.delete_old_segments() >= 1
    first = snap[0][0]
    assert first.log_path.endswith(".deleted") and os.path.exists(first.log_path)
    assert region.read_bytes() == expected
    log._files.forget(first)                 # even with its descriptor evicted...
    assert first.read(0, 1 << 20)[2] > 0     # ...the old snapshot reopens the renamed file
    clock.advance(60_000)
    log.scheduler.run_due()                  # delayed removal
    assert not os.path.exists(first.log_path)
    assert region.read_bytes() == expected   # an fd held by a region stays valid after unlink
    assert [r.offset for b in iter_batches(expected) for r in b.records()][0] == 0
