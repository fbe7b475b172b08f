"""A full disk is KAFKA_STORAGE_ERROR, never a crash.

The indexes are sparse files written through a mapping; a store into a hole on a full disk is
answered with SIGBUS, which kills the process. Each case runs in a child process on a small tmpfs
of its own (mounted as root: the test fails rather than skipping if it cannot), so a SIGBUS shows
as the child's signal instead of taking pytest down with it.
"""
from __future__ import annotations

import textwrap

import pytest

from support.child import run_child
from support.disks import small_tmpfs

pytestmark = pytest.mark.timeout(120)

# Shared by the children: the log lives on the small filesystem, FILL eats what is left of it.
PRELUDE = """
import logging, os, sys
from fastkafka import errors
from fastkafka.log import LogManager
from fastkafka.records import build_batch, iter_batches
from support.disks import fill

fs = sys.argv[1]
FILL = os.path.join(fs, "fill")
logging.basicConfig(stream=sys.stdout, format="%(message)s")   # what the broker logs, for the test to read

def values(log):
    region = log.read(0, 1 << 20)
    return [r.value for b in iter_batches(region.read_bytes()) for r in b.records()]

def batch(v):
    return bytearray(build_batch([(None, v, [], 1000)]))

def open_log():
    mgr = LogManager({"log.dirs": os.path.join(fs, "data")}, start_scheduler=False)
    return mgr, mgr.get_or_create_log("t", 0, {"index.interval.bytes": 0})
"""


@pytest.fixture
def small_fs(tmp_path):
    with small_tmpfs(tmp_path / "fs") as fs:
        yield fs


def run(body: str, fs) -> str:
    """The child's stdout (and log); a SIGBUS is its exit code -7."""
    return run_child(PRELUDE + textwrap.dedent(body), fs.parent, str(fs), timeout=60)


def test_an_append_whose_index_entry_needs_a_new_block_is_refused_and_leaves_the_log_as_it_was(small_fs):
    # An offset index entry per batch (index.interval.bytes 0), batches of B bytes, and a first
    # batch that puts the log's end mid-page when the index's first page (512 entries) is nearly
    # full. Then the disk fills: the log's page still has room, the index needs its second page.
    # Before, the store into that hole killed the process.
    out = run("""
        mgr, log = open_log()
        index = lambda: log.segments[-1].offset_index()
        B = len(batch(b"v000"))
        pad = next(p for p in (batch(b"p" * n) for n in range(5000)) if (len(p) + 512 * B) % 4096 == 1000)
        log.append(pad)
        for i in range(500):
            log.append(batch(b"v%03d" % i))
        assert index().entries == 500 and log.size % 4096 == (1000 - 12 * B) % 4096, (index().entries, log.size)
        fill(FILL)
        taken = 500
        while True:
            size = log.size
            try:
                log.append(batch(b"v%03d" % taken))
            except errors.KafkaStorageError as e:
                print("refused:", e)
                break
            taken += 1
        # the log's page had room: the refusal was the index's, before a byte reached the log
        assert size % 4096 + B <= 4096 and log.size == size and index().entries == taken < 512, (size, taken)
        assert log.log_end_offset == taken + 1 and values(log)[1:] == [b"v%03d" % i for i in range(taken)]
        os.unlink(FILL)
        assert log.append(batch(b"v%03d" % taken)).base_offset == taken + 1
        mgr.shutdown()
        mgr, log = open_log()
        assert values(log)[1:] == [b"v%03d" % i for i in range(taken + 1)]
        mgr.shutdown()
        print("ok")
    """, small_fs)
    assert "refused:" in out and "No space left on device" in out and "ok" in out.splitlines()


def test_a_log_manager_stops_on_a_full_disk_without_its_marker_and_recovers_the_log_whole(small_fs):
    # Closing and checkpointing find no room: shutdown logs it and goes on; the dir gets no
    # clean-shutdown marker, so the next start recovers its logs.
    out = run("""
        from fastkafka.log.checkpoints import CLEAN_SHUTDOWN_FILE
        mgr, log = open_log()
        for i in range(200):
            log.append(batch(b"v%d" % i))
        mgr.shutdown()
        mgr, log = open_log()
        log.append(batch(b"v200"))
        fill(FILL)
        mgr.shutdown()
        assert not os.path.exists(os.path.join(fs, "data", CLEAN_SHUTDOWN_FILE))
        os.unlink(FILL)
        mgr, log = open_log()
        assert values(log) == [b"v%d" % i for i in range(201)]
        mgr.shutdown()
        print("ok")
    """, small_fs)
    assert "recovered at the next start: [Errno 28] No space left on device" in out and "ok" in out.splitlines()
