"""The log's Cython against use after close and readers racing the writer's close/truncate.

Each crash-prone scenario runs in a child interpreter: a dereference of an unmapped index is a
SIGSEGV (exit 139 / -11) that would otherwise take the whole test session down with it.
"""
import pytest

from fastkafka._core.index import OffsetIndex, TimeIndex
from fastkafka._core.segment import IndexCursor, SegmentFile
from fastkafka.records import build_batch
from support.child import run_child

from .conftest import batch


def test_a_closed_index_raises_instead_of_reading_the_unmapped_pages(tmp_path):
    oi = OffsetIndex(str(tmp_path / "00000000000000000100.index"), 100, 4096)
    ti = TimeIndex(str(tmp_path / "00000000000000000100.timeindex"), 100, 4096)
    for i in range(5):
        oi.append(101 + 10 * i, 100 * i)
        ti.append(1000 + i, 101 + 10 * i)
    oi.close()
    ti.delete()
    assert oi.closed and ti.closed and oi.entries == 5
    for call in (lambda: oi.lookup(120), lambda: oi.entry(0), lambda: oi.last_offset,
                 lambda: oi.truncate_to(120), oi.is_valid, lambda: oi.append(200, 900),
                 lambda: oi.resize(4096), oi.reset,
                 lambda: ti.lookup(1002), lambda: ti.entry(0), lambda: ti.last_entry,
                 lambda: ti.truncate_to(120), ti.is_valid, lambda: ti.append(2000, 200)):
        with pytest.raises(ValueError, match="closed"):
            call()
    oi.close()      # idempotent
    # the C floor lookup of the fetch path answers "no entry": the scan starts at position 0
    f = SegmentFile(str(tmp_path / "00000000000000000100.log"), create=True)
    f.append(build_batch([(b"k", b"v", [], 1)] * 50, base_offset=100))     # offsets 100..149
    assert f.region(oi, 121, 1 << 20, f.size) == (0, f.size)
    assert f.locate(oi, 121, f.size)[:3] == (0, 100, 149)
    with pytest.raises(ValueError, match="closed"):     # the time index has room: it is asked
        IndexCursor(0, bytes_since_last_index_entry=1).index_batches(batch(1), OffsetIndex(
            str(tmp_path / "00000000000000000000.index"), 0, 4096), ti)
    f.close()


def test_reset_after_trim_touches_only_the_file(tmp_path):
    # after a trim the mapping reaches past the end of the file: a memset of the whole mapping
    # there is a SIGBUS
    run_child("""
        import os, tempfile
        from fastkafka._core.index import OffsetIndex
        p = os.path.join(tempfile.mkdtemp(), "00000000000000000000.index")
        idx = OffsetIndex(p, 0, 1 << 20)
        idx.append(1, 0)
        idx.trim()
        idx.reset()
        assert idx.entries == 0 and os.path.getsize(p) == 8
    """, tmp_path)


def test_a_failed_pread_raises(tmp_path):
    f = SegmentFile(str(tmp_path / "x.log"), create=True)
    f.append(b"abcdef")
    assert f.read(1, 100) == b"bcdef"       # end of file: a short read, not an error
    f.close()
    d = SegmentFile(str(tmp_path), writable=False)   # pread on a directory fails (EISDIR)
    with pytest.raises(OSError):
        d.read(0, 4)
    d.close()


READERS_VS_CLOSE = """
    import os, sys, tempfile, threading, time
    sys.setswitchinterval(1e-6)       # switch threads between nearly any two bytecodes
    from fastkafka.config import LogConfig
    from fastkafka.log import Log
    from fastkafka.log.files import FileCache
    from fastkafka.log.scheduler import Scheduler
    from fastkafka.records import build_batch

    clock = lambda: 1_700_000_000_000
    log = Log(os.path.join(tempfile.mkdtemp(), "t-0"),
              LogConfig().with_overrides(segment_bytes=4096, index_interval_bytes=100),
              files=FileCache(64), scheduler=Scheduler(clock), clock=clock)
    for i in range(300):
        log.append(bytearray(build_batch([(b"k", b"v" * 50, [], 1000 + i)])))
    log.update_high_watermark(log.log_end_offset)
    end = log.log_end_offset
    stop = time.monotonic() + 3
    bad = []

    def reader(k):
        n = 0
        while time.monotonic() < stop:
            off = (n * 37 + k) % (end - 1)       # below end - 1: never truncated
            try:
                if log.read(off, 1000).length == 0:
                    bad.append(("empty read", off))
                if log.offset_for_timestamp(1000 + off) is None:
                    bad.append(("no offset for timestamp", 1000 + off))
            except Exception as e:
                bad.append(repr(e))
            n += 1

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    rounds = 0
    while time.monotonic() < stop:
        WRITER
        rounds += 1
    for t in threads:
        t.join()
    assert not bad, bad[:5]
    print(rounds)
"""


@pytest.mark.parametrize("writer", [
    "log.close()",                                          # shutdown, partition deletion
    # a follower truncating into a rolled segment (reopened as the active one), then rolling
    "log.truncate_to(end - 1); log.append(bytearray(build_batch([(b'k', b'v' * 50, [], 1299)])));"
    " log.update_high_watermark(log.log_end_offset); log.roll()",
])
def test_lock_free_readers_survive_the_writer_closing_indexes(writer, tmp_path):
    """Fetches and ListOffsets run without the log's lock; closing a log (or reopening a segment
    as active) must never unmap an index under one of them. Before the fix this died of SIGSEGV
    within about a second."""
    assert int(run_child(READERS_VS_CLOSE.replace("WRITER", writer), tmp_path)) > 0


def test_a_new_empty_partition_maps_no_index(make_log):
    """Opening a log whose active segment is empty maps nothing: a broker creating thousands
    of partitions must not spend two of the process's vm.max_map_count mappings on each."""
    log = make_log()
    seg = log.active_segment
    assert log.log_end_offset == 0
    assert seg._offset_index is None and seg._time_index is None
    log.append(batch(2))
    assert seg._offset_index is not None and log.log_end_offset == 2
    log.close()
    reopened = make_log()
    assert reopened.log_end_offset == 2
