"""Log: append, read regions (KIP-74, partial tail, bounds), roll, index interval, offsets."""
import pytest
from hypothesis import given, settings, strategies as st

from fastkafka import errors
from fastkafka.records import build_batch, iter_batches

from .conftest import batch


def offsets_in(region):
    """Offsets of the whole batches in a region (a trailing partial batch is ignored)."""
    return [r.offset for b in iter_batches(region.read_bytes()) for r in b.records()]


def test_append_assigns_offsets_and_read_returns_the_containing_batch(make_log):
    log = make_log()
    a = log.append(batch(3))
    b = log.append(batch(2))
    assert (a.base_offset, a.last_offset, a.log_append_time, a.log_start_offset) == (0, 2, -1, 0)
    assert (b.base_offset, b.last_offset) == (3, 4)
    assert log.log_end_offset == log.high_watermark == 5
    r = log.read(4, 1 << 20)
    assert offsets_in(r) == [3, 4]                  # starts at the batch containing offset 4
    assert r.high_watermark == 5 and r.log_start_offset == 0
    assert offsets_in(log.read(1, 1 << 20)) == [0, 1, 2, 3, 4]


def test_read_first_batch_whole_even_when_larger_than_max_bytes_then_partial(make_log):
    log = make_log()
    first = batch(5, size=200)
    log.append(first)
    log.append(batch(5, size=200))
    r = log.read(0, 10)
    assert r.position == 0 and r.length == len(first)      # KIP-74
    r = log.read(0, len(first) + 50)
    assert r.length == len(first) + 50                     # ends inside the second batch
    assert offsets_in(r) == [0, 1, 2, 3, 4]
    r = log.read(0, 10, min_one_message=False)
    assert r.length == 10


def test_read_bounds(make_log):
    log = make_log()
    log.append(batch(2))
    log.append(batch(2))
    assert log.read(4, 100).length == 0                    # at the end: nothing yet
    with pytest.raises(errors.OffsetOutOfRangeError):
        log.read(5, 100)
    with pytest.raises(errors.OffsetOutOfRangeError):
        log.read(-1, 100)
    r = log.read(0, 1 << 20, max_offset=2)                 # e.g. the high watermark
    assert offsets_in(r) == [0, 1]
    assert log.read(2, 1 << 20, max_offset=2).length == 0


def test_append_rejects_bad_input_and_leaves_log_intact(make_log):
    log = make_log(max_message_bytes=500, segment_bytes=4000)
    log.append(batch(1))
    bad = batch(2)
    bad[-1] ^= 0xFF                                       # CRC no longer matches
    with pytest.raises(errors.CorruptMessageError):
        log.append(bad)
    with pytest.raises(errors.CorruptMessageError):
        log.append(batch(2)[:-3])                         # truncated
    with pytest.raises(errors.InvalidRecordError):
        log.append(bytearray())
    with pytest.raises(errors.MessageTooLargeError):
        log.append(batch(1, size=600))
    with pytest.raises(errors.RecordListTooLargeError):
        log.append(batch(1, size=400) * 10)
    assert log.log_end_offset == 1
    assert offsets_in(log.read(0, 1 << 20)) == [0]
    assert log.append(batch(1)).base_offset == 1


def test_roll_by_size_and_time_and_index_interval(make_log, clock):
    log = make_log(segment_bytes=1000, index_interval_bytes=150, segment_ms=60_000)
    one = len(batch(1, size=50))
    for _ in range(40):
        log.append(batch(1, size=50))
    segs = log.segments
    assert len(segs) > 1 and all(s.size <= 1000 for s in segs)
    assert [s.base_offset for s in segs] == sorted(s.base_offset for s in segs)
    first = segs[0]
    # one index entry each time more than 150 bytes were appended since the last one
    assert first.offset_index().entries == (first.size // one - 1) // (150 // one + 1)
    n = len(log.segments)
    clock.advance(60_000)
    log.append(batch(1))
    assert len(log.segments) == n + 1 and log.active_segment.base_offset == 40
    for off in range(41):
        assert offsets_in(log.read(off, 1))[0] <= off


def test_log_append_time_topic_stamps_the_clock(make_log, clock):
    log = make_log(message_timestamp_type="LogAppendTime")
    info = log.append(batch(2, ts=5))
    assert info.log_append_time == clock.now
    recs = [r for b in iter_batches(log.read(0, 1 << 20).read_bytes()) for r in b.records()]
    assert [r.timestamp for r in recs] == [clock.now, clock.now]


def test_offsets_by_timestamp_earliest_latest_and_legacy(make_log):
    log = make_log(segment_bytes=600)
    for i in range(20):
        log.append(batch(2, ts=1000 + 10 * i))      # records at 1000+10i, 1001+10i
    assert log.offset_for_timestamp(-2) == (0, -1)
    assert log.offset_for_timestamp(-1) == (40, -1)
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (1, 1001)
    assert log.offset_for_timestamp(1055) == (12, 1060)
    assert log.offset_for_timestamp(1191) == (39, 1191)
    assert log.offset_for_timestamp(1192) is None
    assert log.offset_for_timestamp(-3) == (39, 1191)
    bases = [s.base_offset for s in log.segments]
    assert log.offsets_before(-1, 100) == [40] + bases[::-1]
    assert log.offsets_before(-2, 100) == [0]
    assert log.offsets_before(-1, 2) == [40, bases[-1]]
    assert log.offsets_before(0, 10) == []


def test_append_listeners_are_woken(make_log):
    log = make_log()
    seen = []
    log.on_append(lambda lg: seen.append(lg.log_end_offset))
    log.append(batch(3))
    assert seen == [3]


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 300)), min_size=1, max_size=40),
       interval=st.sampled_from([0, 100, 4096]))
def test_every_offset_reads_from_its_batch(tmp_path_factory, sizes, interval):
    from fastkafka.config import LogConfig
    from fastkafka.log import Log
    log = Log(str(tmp_path_factory.mktemp("h") / "t-0"),
              LogConfig().with_overrides(segment_bytes=2000, index_interval_bytes=interval),
              clean_shutdown=True)
    spans = []
    for n, size in sizes:
        info = log.append(batch(n, size=size))
        spans.append((info.base_offset, info.last_offset))
    for base, last in spans:
        for off in range(base, last + 1):
            got = offsets_in(log.read(off, 1))
            assert got[0] == base and got[-1] == last
    log.close()


def test_full_index_rolls_and_multi_batch_sets_are_indexed_per_batch(make_log):
    # 24-byte indexes: 3 offset entries, 2 time entries; the segment rolls once either is full
    log = make_log(segment_index_bytes=24, index_interval_bytes=1)
    for k in range(3):                   # three batches per append, timestamps rising
        log.append(bytearray().join(batch(1, ts=1000 + 3 * k + j) for j in range(3)))
    assert log.log_end_offset == 9
    # each append fills a fresh index (entries for its 2nd and 3rd batch), so the next one rolls;
    # entries name each batch's own (last offset, position), not the whole append's
    one = len(batch(1))
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    for s in log.segments:
        idx = s.offset_index()
        assert [idx.entry(i) for i in range(idx.entries)] == [(s.base_offset + 1, one), (s.base_offset + 2, 2 * one)]
    for off in range(9):
        assert offsets_in(log.read(off, 1))[0] == off


def test_compacted_topic_rejects_records_without_a_key(make_log):
    log = make_log(cleanup_policy=("compact",))
    log.append(batch(2, key=b"k"))
    for codec in (0, 1):                 # uncompressed and gzip: keys are checked after decompression
        mixed = bytearray(build_batch([(b"k", b"v", [], 1), (None, b"v", [], 2)], compression=codec))
        with pytest.raises(errors.InvalidRecordError) as e:
            log.append(mixed)
        assert e.value.code == 87        # INVALID_RECORD, as Kafka answers
    assert log.log_end_offset == 2       # nothing of a refused set was written
    assert log.append(batch(1, key=b"k2")).base_offset == 2
    plain = make_log(dirname="p-0")      # delete policy: keyless records are fine
    assert plain.append(batch(2, key=None)).last_offset == 1


def test_a_config_change_switches_append_paths_and_thresholds(make_log, clock):
    """Log.config is policy: a live change (as LogManager does for topic configs) moves appends
    between the one-call path and the general one, and its limits apply from the next append."""
    from fastkafka.config import LogConfig
    log = make_log()
    assert log.append(batch(2, ts=5)).log_append_time == -1
    log.config = LogConfig().with_overrides(message_timestamp_type="LogAppendTime")
    info = log.append(batch(2, ts=5))
    assert info.base_offset == 2 and info.log_append_time == clock.now
    log.config = LogConfig().with_overrides(max_message_bytes=200, flush_messages=3)
    with pytest.raises(errors.MessageTooLargeError):
        log.append(batch(5, size=100))
    syncs = log.active_segment.file().sync_count
    log.append(batch(1))
    assert log.active_segment.file().sync_count == syncs + 1      # 5 unflushed >= 3
    assert log.recovery_point == log.log_end_offset == 5


def test_read_only_and_non_buffer_input(make_log):
    log = make_log()
    assert log.append(bytes(batch(2))).base_offset == 0           # copied, then the fast path
    assert log.log_end_offset == 2
    with pytest.raises(TypeError):
        log.append("not a buffer")
    assert offsets_in(log.read(0, 1 << 20)) == [0, 1]


def test_an_evicted_active_file_is_reopened_at_the_published_end(make_log):
    """The FileCache may drop the active segment's handle between appends and a reader may open a
    new one; appends go on at the published end, never over the last batch."""
    log = make_log()
    log.append(batch(3))
    seg = log.active_segment
    log._files.forget(seg)
    reader = seg.file()                      # a reader's handle: where it would append is not its business
    assert offsets_in(log.read(0, 1 << 20)) == [0, 1, 2]
    log.append(batch(2))
    assert seg.file() is reader and reader.size == seg.size
    assert offsets_in(log.read(0, 1 << 20)) == [0, 1, 2, 3, 4]


def test_a_reader_never_moves_where_the_writer_appends(make_log):
    """LogSegment.file() is the readers' door too: it never sets a handle's size. When the
    descriptor budget drops the active segment's file and a reader opens it again, the appender
    reopens through writer_file(), at the published size, and appends after its last batch."""
    log = make_log()
    log.append(batch(3))
    seg = log.active_segment
    f = seg.file()
    end = f.size
    assert seg.file() is f and f.size == end == seg.size
    log._files.forget(seg)                    # evicted: the appender was told (file_dropped)
    g = seg.file()                            # a reader's open
    assert g is not f and g.size == end
    log.append(batch(2))
    assert offsets_in(log.read(0, 1 << 20)) == [0, 1, 2, 3, 4]
