"""The cleaner merges consecutive segments: grouping limits, reads across the merged segment,
readers of an old snapshot, and a crash at every step of the multi-segment swap."""
import os


from fastkafka.config import LogConfig
from fastkafka.log import Log
from fastkafka.log.cleaner import LogCleaner
from fastkafka.log.files import FileCache
from fastkafka.log.cleaner_swap import MAX_RELATIVE_OFFSET, SegmentInfo, group_segments
from fastkafka.log.scheduler import Scheduler
from fastkafka.records import build_batch, iter_batches
from support.child import run_child

from .conftest import clean_crashing_at, swap_steps_of
from .test_cleaner import all_records


def info(base, end, size=100, oi=8, ti=12):
    return SegmentInfo(base, end, size, oi, ti)


def test_groups_stop_at_segment_bytes():
    segs = [info(0, 10, 100), info(10, 20, 100), info(20, 30, 100), info(30, 40, 250), info(40, 50, 10)]
    assert group_segments(segs, max_bytes=300, max_index_bytes=1 << 20) == [[0, 1, 2], [3, 4]]
    assert group_segments(segs, max_bytes=299, max_index_bytes=1 << 20) == [[0, 1], [2], [3, 4]]
    # a segment larger than the limit is a group of its own
    assert group_segments(segs, max_bytes=50, max_index_bytes=1 << 20) == [[0], [1], [2], [3], [4]]


def test_groups_stop_at_either_index_size():
    segs = [info(0, 10, oi=40, ti=12), info(10, 20, oi=40, ti=12), info(20, 30, oi=8, ti=60)]
    assert group_segments(segs, max_bytes=1 << 30, max_index_bytes=80) == [[0, 1], [2]]
    assert group_segments(segs, max_bytes=1 << 30, max_index_bytes=72) == [[0], [1, 2]]


def test_groups_keep_offsets_within_32_bits_of_their_base():
    top = MAX_RELATIVE_OFFSET
    segs = [info(0, 10), info(10, top + 1), info(top + 1, top + 2), info(top + 2, top + 5)]
    # the second segment's last offset is base + 2^31 - 1: still fits; the third's does not
    assert group_segments(segs, max_bytes=1 << 30, max_index_bytes=1 << 20) == [[0, 1], [2, 3]]


def open_log(path, clock, segment_bytes=1 << 20, clean_shutdown=True, files=None):
    return Log(str(path), LogConfig().with_overrides(
        cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0, segment_bytes=segment_bytes,
        index_interval_bytes=64), scheduler=Scheduler(clock), clock=clock,
        clean_shutdown=clean_shutdown, recovery_point=0, files=files)


def fill(log, clock, segments=6, batches=3, overwrite=True):
    """``segments`` rolled segments of ``batches`` batches of 2 records; with ``overwrite`` every
    third key repeats (so compaction drops records), else all keys are distinct."""
    n = 0
    for _ in range(segments):
        for _ in range(batches):
            recs = []
            for _ in range(2):
                key = b"k%d" % (n % 3 if overwrite and n % 2 else n)
                recs.append((key, b"v%d" % n, [(b"h", b"%d" % n)], clock.now - 10_000 + n))
                n += 1
            log.append(bytearray(build_batch(recs)))
        log.roll()
    return n


def record_at(log, offset):
    """The record a consumer fetching at ``offset`` gets first (the next surviving one): a batch
    emptied below ``offset`` sends it on from the batch's last offset."""
    at = offset
    while at < log.log_end_offset:
        for b in iter_batches(log.read(at, 1).read_bytes()):
            assert b.base_offset <= max(at, b.base_offset) and b.last_offset >= at
            for r in b.records():
                if r.offset >= offset:
                    return (r.offset, r.key, r.value, r.timestamp, r.headers)
            at = b.last_offset + 1
    return None


def full(r):
    return (r.offset, r.key, r.value, r.timestamp, r.headers)


def test_merge_respects_segment_bytes(tmp_path, clock):
    log = open_log(tmp_path / "m-0", clock)
    fill(log, clock, segments=7, overwrite=False)
    sizes = [(s.base_offset, s.size) for s in log.segments[:-1]]
    limit = sizes[0][1] * 3 + sizes[0][1] // 2          # room for three segments, not four
    log.config = log.config.with_overrides(segment_bytes=limit)
    before = [full(r) for r in all_records(log)]
    assert LogCleaner(clock=clock).clean(log, force=True)
    # greedy from the front, a group ends where the next segment would exceed segment.bytes
    expected, total = [], None
    for base, size in sizes:
        if total is None or total + size > limit:
            expected.append(base)
            total = 0
        total += size
    cleaned = log.segments[:-1]
    assert [s.base_offset for s in cleaned] == expected and len(expected) == 3
    assert all(s.size <= limit for s in cleaned)
    assert [full(r) for r in all_records(log)] == before        # nothing to drop: merged only
    leftovers = [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap", ".replaced"))]
    assert leftovers == []
    log.close()


def test_reads_by_offset_across_merged_segments_match_the_log_before(tmp_path, clock):
    log = open_log(tmp_path / "r-0", clock)
    n = fill(log, clock)
    before = {o: record_at(log, o) for o in range(n)}
    assert LogCleaner(clock=clock).clean(log, force=True)
    assert len(log.segments) == 2                                 # one merged + the active one
    survivors = {full(r)[0]: full(r) for r in all_records(log)}
    assert len(survivors) < n
    for o in range(n):
        got = record_at(log, o)
        if o in survivors:
            assert got == before[o] == survivors[o]
        else:                                    # compacted away: the next surviving record
            assert got == survivors[min(s for s in survivors if s > o)]
    # the merged segment's rebuilt index answers lookups (several entries, not one scan)
    merged = log.segments[0]
    assert merged.offset_index().entries > 1
    log.close()
    again = open_log(tmp_path / "r-0", clock, clean_shutdown=False)
    assert {o: record_at(again, o) for o in survivors} == survivors
    again.close()


def test_reader_of_an_old_snapshot_keeps_reading_the_replaced_segments(tmp_path, clock):
    # one open file for the whole log: an old segment whose descriptor was evicted reopens it by
    # path, where a merged file or nothing is now -- unless the swap pinned it
    log = open_log(tmp_path / "o-0", clock, files=FileCache(1))
    fill(log, clock)
    old_segments = log.segments
    regions = [log.read(s.base_offset, 1 << 20) for s in old_segments[:-1]]
    expected = [r.read_bytes() for r in regions]
    assert LogCleaner(clock=clock).clean(log, force=True)
    assert len(log.segments) < len(old_segments)
    assert [r.read_bytes() for r in regions] == expected
    # an old snapshot's segments still answer reads from their own (pinned) files
    for seg, data in zip(old_segments[:-1], expected):
        f, pos, length = seg.read(seg.base_offset, 1 << 20)
        assert f.read(pos, length) == data
    log.close()


def swap_steps(tmp_path, clock, monkeypatch):
    """The steps of one three-segment swap, in order, recorded on a throwaway log."""
    log = open_log(tmp_path / "s-0", clock)
    fill(log, clock, segments=3)
    steps = swap_steps_of(log, clock, monkeypatch)
    log.close()
    return steps


def test_a_crash_at_each_step_of_the_swap_recovers_the_log_before_or_after(tmp_path, clock, monkeypatch):
    steps = swap_steps(tmp_path, clock, monkeypatch)
    assert steps == ["cleaned", "replaced", "replaced", "committed", "retired", "retired",
                     "indexes", "renamed"]
    done = open_log(tmp_path / "d-0", clock)
    fill(done, clock, segments=3)
    pre = [full(r) for r in all_records(done)]
    assert LogCleaner(clock=clock).clean(done, force=True)
    post = [full(r) for r in all_records(done)]
    done.close()
    assert post != pre
    for k, name in enumerate(steps):
        log = open_log(tmp_path / f"c{k}-0", clock)
        fill(log, clock, segments=3)
        clean_crashing_at(log, clock, monkeypatch, k)
        # the process died here: the files are as the swap left them; open them again
        reopened = open_log(tmp_path / f"c{k}-0", clock, clean_shutdown=False)
        got = [full(r) for r in all_records(reopened)]
        committed = k >= steps.index("committed")
        assert got == (post if committed else pre), (k, name)
        assert len(reopened.segments) == (2 if committed else 4), (k, name)
        assert not [n for n in os.listdir(reopened.dir) if n.endswith((".cleaned", ".swap", ".replaced"))]
        for r in got:                            # every offset is found through the indexes
            assert record_at(reopened, r[0]) == r
        # the recovered log goes on: appends, and a later cleaning merges what is left
        nxt = reopened.log_end_offset
        assert reopened.append(bytearray(build_batch([(b"k0", b"new", [], clock.now)]))).base_offset == nxt
        reopened.roll()
        assert LogCleaner(clock=clock).clean(reopened, force=True)
        assert len(reopened.segments) == 2
        assert record_at(reopened, nxt)[2] == b"new"
        reopened.close()
        del log                  # the crashed process's objects: never closed (nor used again)


def test_readers_and_a_writer_racing_repeated_merges(tmp_path):
    # in a child interpreter: a reader dereferencing an index the swap unmapped would be a SIGSEGV
    out = run_child(f"""
        import threading, time
        from fastkafka.config import LogConfig
        from fastkafka.log import Log
        from fastkafka.log.cleaner import LogCleaner
        from fastkafka.log.files import FileCache
        from fastkafka.records import build_batch, iter_batches

        log = Log({str(tmp_path / 'x-0')!r}, LogConfig().with_overrides(
            cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0, segment_bytes=2000,
            index_interval_bytes=64), clean_shutdown=True, files=FileCache(2))
        stop, errors, reads = threading.Event(), [], [0]

        def write():
            n = 0
            while not stop.is_set() and n < 3000:   # bounded: a pass's work grows with the log
                log.append(bytearray(build_batch([(b"k%d" % (n % 7), b"v%d" % n, [], 1)])))
                n += 1
                if n % 20 == 0:
                    time.sleep(0.001)      # let the cleaner keep up: rolls during its passes

        def read():
            # reads rolled segments only, through an old snapshot: LogSegment.file() on the
            # active segment races the writer on its own (a reader's set_size can roll the
            # writer's handle back), which is segment.py's, not the cleaner's
            while not stop.is_set():
                try:
                    last = -1
                    for seg in log.segments[:-1]:
                        r = seg.read(seg.base_offset, 1 << 20)
                        if r is None:
                            continue
                        f, pos, length = r
                        for b in iter_batches(f.read(pos, length)):     # CRC-checked
                            for rec in b.records():
                                assert rec.offset > last
                                assert rec.key == b"k%d" % (int(rec.value[1:]) % 7)
                                last = rec.offset
                    reads[0] += 1
                    # a busy loop would hold the GIL so the cleaner waits up to the 5 ms switch
                    # interval after every syscall (a pass took 5-45 s instead of 0.1 s)
                    time.sleep(0.0005)
                except Exception as e:
                    errors.append(repr(e))
                    stop.set()

        threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(2)]
        for t in threads:
            t.start()
        # race for 5 s and at least 3 passes; 90 s only bounds the wait on a loaded machine
        cleaner, passes, began = LogCleaner(), 0, time.monotonic()
        while not stop.is_set() and time.monotonic() - began < 90 and (
                passes < 3 or time.monotonic() - began < 5):
            passes += cleaner.clean(log, force=True)
            cleaner.forget(log)
        stop.set()
        for t in threads:
            t.join()
        assert not errors, errors
        print(passes, reads[0], len(log.segments), round(time.monotonic() - began, 1))
        log.close()
    """, tmp_path)
    passes, reads = map(int, out.split()[:2])
    assert passes >= 3 and reads > 0, out
