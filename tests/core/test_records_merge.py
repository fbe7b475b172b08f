"""RecordMerger (the mirror's merge of small batches): records re-based into streams of at most
max_bytes with offset deltas 0, 1, ... and their own timestamps, whatever the source's deltas were
(out of order timestamps, gaps, LogAppendTime), and corrupt streams refused."""
from __future__ import annotations

import pytest

from fastkafka import records
from fastkafka._core.records import read_header
from fastkafka._core.records_merge import RecordMerger
from fastkafka._core.records_read import decode_records
from fastkafka.errors import CorruptRecordError

RESERVE = records.BATCH_OVERHEAD


def rows(n, start=0, ts=1_000_000):
    # timestamps going back and forth: negative deltas from the stream's first record
    return [(b"k%d" % i, b"v" * (i % 7) if i % 3 else None, [("h", b"%d" % i)] if i % 2 else [],
             ts + (i * 37) % 11 - 5) for i in range(start, start + n)]


def add(m, batch, start_offset=-1):
    h = read_header(batch)
    return m.add(batch[RESERVE:], h.base_offset, h.base_timestamp, h.record_count, start_offset=start_offset,
                 timestamp_type=h.timestamp_type, max_timestamp=h.max_timestamp)


def unpack(chunks):
    out = []
    for buf, n, last_delta, base_ts, max_ts, first, last in chunks:
        assert bytes(buf[:RESERVE]) == bytes(RESERVE) and last_delta == n - 1
        recs = decode_records(bytes(buf[RESERVE:]), 0, base_ts, n)
        assert [r.offset for r in recs] == list(range(n))
        assert base_ts == recs[0].timestamp and max_ts == max(r.timestamp for r in recs)
        out.append(((first, last), [(r.key, r.value, r.headers, r.timestamp) for r in recs]))
    return out


def test_streams_are_cut_at_max_bytes_in_source_order():
    m = RecordMerger(4000, RESERVE)
    for j in range(10):
        assert add(m, records.build_batch(rows(50, 50 * j), base_offset=100 + 50 * j)) == 50
    chunks = m.finish()
    assert len(chunks) > 1 and all(len(c[0]) - RESERVE <= 4000 for c in chunks)
    got = unpack(chunks)
    assert [r for _, rs in got for r in rs] == [tuple(r[:2]) + (r[2], r[3]) for r in rows(500)]
    spans = [span for span, _ in got]
    assert spans[0][0] == 100 and spans[-1][1] == 599
    assert all(b[0] == a[1] + 1 for a, b in zip(spans, spans[1:]))      # no record lost between streams
    assert m.finish() == []


def test_a_record_bigger_than_max_bytes_gets_a_stream_of_its_own():
    m = RecordMerger(100, RESERVE)
    big = [(b"k", b"x" * 500, [], 5), (b"k", b"y", [], 6)]
    assert add(m, records.build_batch(big, base_offset=7)) == 2
    got = unpack(m.finish())
    assert got == [((7, 7), [(b"k", b"x" * 500, [], 5)]), ((8, 8), [(b"k", b"y", [], 6)])]


def test_start_offset_and_log_append_time():
    m = RecordMerger(1 << 20, RESERVE)
    batch = records.build_batch(rows(10), base_offset=20, timestamp_type=1)
    assert read_header(batch).timestamp_type == 1
    assert add(m, batch, start_offset=25) == 5
    ((span, recs),) = unpack(m.finish())
    # LogAppendTime: every record carries the batch's max timestamp
    assert span == (25, 29) and {r[3] for r in recs} == {max(r[3] for r in rows(10))}
    assert [r[0] for r in recs] == [b"k5", b"k6", b"k7", b"k8", b"k9"]


@pytest.mark.parametrize("cut", [1, 10, 30])
def test_a_truncated_or_padded_stream_is_refused(cut):
    batch = records.build_batch(rows(5), base_offset=0)
    h = read_header(batch)
    with pytest.raises(CorruptRecordError):
        RecordMerger(1 << 20, RESERVE).add(batch[RESERVE:-cut], 0, h.base_timestamp, h.record_count)
    with pytest.raises(CorruptRecordError):
        RecordMerger(1 << 20, RESERVE).add(batch[RESERVE:] + b"\0" * cut, 0, h.base_timestamp, h.record_count)
