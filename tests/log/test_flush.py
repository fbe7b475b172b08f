"""Flush policy: flush.messages (M) counts fdatasync calls exactly; flush.ms (S) flushes by time."""
from fastkafka.log import LogManager

from .conftest import batch


def syncs(log):
    return sum(s.file().sync_count for s in log.segments)


def test_default_leaves_flushing_to_the_os(make_log):
    log = make_log()
    for _ in range(500):
        log.append(batch(1))
    assert syncs(log) == 0 and log.recovery_point == 0


def test_flush_every_100_messages_exactly(make_log):
    log = make_log(flush_messages=100)
    for i in range(1, 451):
        log.append(batch(1))
        assert syncs(log) == i // 100, i
        assert log.recovery_point == (i // 100) * 100
    # batches of 30 records: a flush as soon as 100 or more are unflushed
    log2 = make_log(dirname="u-0", flush_messages=100)
    counts = []
    for _ in range(10):
        log2.append(batch(30))
        counts.append(syncs(log2))
    assert counts == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]   # the count restarts at each flush


def test_flush_ms_timer_flushes_idle_data(tmp_path, clock):
    mgr = LogManager({"log.dirs": str(tmp_path)}, clock=clock, start_scheduler=False)
    log = mgr.get_or_create_log("t", 0, {"flush.ms": 1000})
    log.append(batch(5))
    clock.advance(999)
    mgr.scheduler.run_due()
    assert syncs(log) == 0
    clock.advance(1)
    mgr.scheduler.run_due()
    assert syncs(log) == 1 and log.recovery_point == 5
    clock.advance(5000)
    mgr.scheduler.run_due()
    assert syncs(log) == 1        # nothing new to flush
    # an append that finds unflushed data older than flush.ms flushes at once
    log.append(batch(1))
    clock.advance(1000)
    log.append(batch(1))
    assert syncs(log) == 2 and log.recovery_point == 7
    mgr.shutdown()
