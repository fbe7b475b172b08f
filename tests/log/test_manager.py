"""LogManager: many partitions within the descriptor budget, clean shutdown, checkpoints, deletion."""
import gc
import os
import uuid

import pytest

from fastkafka import errors
from fastkafka.config import KafkaConfig
from fastkafka.log import LogManager
from fastkafka.log.checkpoints import OffsetCheckpointFile
from fastkafka.log.partition_metadata import read_topic_id
from fastkafka.records import build_batch
from fastkafka.uuids import uuid_text

from .conftest import batch


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_2000_partitions_stay_within_the_fd_budget(tmp_path, clock):
    budget = 64
    before = open_fds()
    mgr = LogManager({"log.dirs": f"{tmp_path}/a,{tmp_path}/b", "log.max.open.files": budget,
                      "log.index.size.max.bytes": 4096}, clock=clock, start_scheduler=False)
    logs = [mgr.get_or_create_log("many", p) for p in range(2000)]
    for rnd in range(2):
        for lg in logs:
            lg.append(batch(1))
            # +2: slack for the test's own listdir; +2: each log dir's .lock
            assert open_fds() - before <= budget + 2 + 2
    assert mgr.files.open_count == budget
    for p in (0, 777, 1999):
        assert mgr.get_log("many", p).read(1, 1 << 20).length > 0
    # both dirs are used, the least loaded first
    assert {len([n for n in os.listdir(tmp_path / d) if n.startswith("many-")]) for d in "ab"} == {1000}
    mgr.shutdown()
    assert open_fds() - before <= 2
    again = LogManager({"log.dirs": f"{tmp_path}/a,{tmp_path}/b", "log.max.open.files": budget},
                       clock=clock, start_scheduler=False)
    assert len(again.logs()) == 2000
    assert all(lg.log_end_offset == 2 for lg in again.logs())
    again.shutdown()


def test_clean_shutdown_marker_and_checkpoints(tmp_path, clock):
    cfg = {"log.dirs": str(tmp_path)}
    mgr = LogManager(cfg, clock=clock, start_scheduler=False)
    lg = mgr.get_or_create_log("t", 3, {"segment.bytes": 1000})
    for _ in range(20):
        lg.append(batch(2, ts=clock.now, size=40))
    lg.delete_records(7)
    mgr.shutdown()
    assert os.path.exists(tmp_path / ".kafka_cleanshutdown")
    assert OffsetCheckpointFile(str(tmp_path / "recovery-point-offset-checkpoint")).read() == {("t", 3): 40}
    assert OffsetCheckpointFile(str(tmp_path / "log-start-offset-checkpoint")).read() == {("t", 3): 7}
    mgr = LogManager(cfg, clock=clock, start_scheduler=False)
    assert not os.path.exists(tmp_path / ".kafka_cleanshutdown")   # a crash from now on is noticed
    lg = mgr.get_log("t", 3)
    assert (lg.log_start_offset, lg.log_end_offset, lg.recovery_point) == (7, 40, 40)
    lg.append(batch(1))
    # crash (no shutdown): the next start revalidates from the recovery point
    path = lg.active_segment.log_path
    del mgr, lg
    gc.collect()              # the crashed "process" is gone, and with it its .lock (flock)
    with open(path, "ab") as f:
        f.write(b"\xff" * 100)
    mgr = LogManager(cfg, clock=clock, start_scheduler=False)
    lg = mgr.get_log("t", 3)
    assert lg.log_end_offset == 41 and lg.recovered_bytes_dropped == 100
    mgr.shutdown()


def test_delete_log_and_listeners(tmp_path, clock):
    mgr = LogManager(KafkaConfig({"log.dirs": str(tmp_path), "log.segment.delete.delay.ms": 1000}),
                     clock=clock, start_scheduler=False)
    woke = []
    mgr.on_append(lambda lg: woke.append((lg.topic, lg.partition)))
    lg = mgr.get_or_create_log("gone", 0)
    lg.append(batch(1))
    assert woke == [("gone", 0)]
    assert mgr.delete_log("gone", 0) and mgr.get_log("gone", 0) is None
    # moved aside at once (a new gone-0 would get a directory of its own), removed after the delay
    (doomed,) = [n for n in os.listdir(tmp_path) if n.startswith("gone-0.") and n.endswith("-delete")]
    assert not os.path.exists(tmp_path / "gone-0")
    again = mgr.get_or_create_log("gone", 0)
    again.append(batch(1))
    clock.advance(1000)
    mgr.scheduler.run_due()
    assert not os.path.exists(tmp_path / doomed)
    assert again.log_end_offset == 1 and os.listdir(tmp_path / "gone-0")   # the new log untouched
    mgr.shutdown()


def test_retention_runs_on_the_schedule(tmp_path, clock):
    mgr = LogManager({"log.dirs": str(tmp_path), "log.retention.check.interval.ms": 1000,
                      "log.segment.delete.delay.ms": 0}, clock=clock, start_scheduler=False)
    lg = mgr.get_or_create_log("r", 0, {"segment.bytes": 200, "retention.ms": 10_000})
    for i in range(10):
        lg.append(batch(1, ts=clock.now, size=60))
    n = len(lg.segments)
    clock.advance(20_000)
    mgr.scheduler.run_due()
    assert len(lg.segments) == 1 < n
    mgr.shutdown()


def test_producer_ids_expire_on_the_schedule(tmp_path, clock):
    """producer.id.expiration.ms after its newest batch's timestamp a producer's state is gone:
    a sequence that would have been out of order is then accepted as a new start (Kafka's
    behaviour for an unknown producer), while a producer still within the window is checked."""
    mgr = LogManager({"log.dirs": str(tmp_path), "producer.id.expiration.ms": 60_000,
                      "producer.id.expiration.check.interval.ms": 1000}, clock=clock,
                      start_scheduler=False)
    lg = mgr.get_or_create_log("p", 0)

    def idem(pid, seq, ts):
        return bytearray(build_batch([(b"k", b"v", [], ts)], producer_id=pid, producer_epoch=0,
                                     base_sequence=seq))

    lg.append(idem(1, 0, clock.now))
    lg.append(idem(2, 0, clock.now + 50_000))           # newer: still within the window below
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        lg.append(idem(1, 5, clock.now))                # a gap while producer 1 is known
    clock.advance(59_000)
    mgr.scheduler.run_due()
    assert sorted(lg.producer_state.producers) == [1, 2]
    clock.advance(2_000)                                # 61 s after producer 1's batch
    mgr.scheduler.run_due()
    assert sorted(lg.producer_state.producers) == [2]
    assert lg.append(idem(1, 5, clock.now)).base_offset == 2     # forgotten: any start is accepted
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        lg.append(idem(2, 7, clock.now))                # producer 2 is still checked
    mgr.shutdown()


def test_a_log_dir_is_locked_while_its_manager_runs(tmp_path, clock):
    """Kafka's .lock: a second LogManager (another broker) on the same directory fails to start,
    whatever its other directories; after a clean shutdown the directory is free again."""
    from fastkafka.errors import KafkaStorageError
    first = LogManager({"log.dirs": str(tmp_path / "a")}, clock=clock, start_scheduler=False)
    first.get_or_create_log("t", 0).append(batch(1))
    with pytest.raises(KafkaStorageError, match=r"Failed to acquire lock on file \.lock in .*a\. A Kafka "
                                                r"instance in another process or thread is using this directory"):
        LogManager({"log.dirs": f"{tmp_path}/b,{tmp_path}/a"}, clock=clock, start_scheduler=False)
    second = LogManager({"log.dirs": str(tmp_path / "b")}, clock=clock, start_scheduler=False)  # b was let go
    second.shutdown()
    first.shutdown()
    again = LogManager({"log.dirs": str(tmp_path / "a")}, clock=clock, start_scheduler=False)
    assert again.get_log("t", 0).log_end_offset == 1
    again.shutdown()


def test_partition_metadata_records_the_topic_id_and_a_stray_log_is_replaced(tmp_path, clock):
    """KIP-516: ``partition.metadata`` holds the topic id in Kafka's layout; a log left by an
    earlier topic of the same name (another id) is deleted, not served as the new topic's."""
    old_id, new_id = uuid.uuid4(), uuid.uuid4()
    cfg = {"log.dirs": str(tmp_path), "file.delete.delay.ms": 0}
    mgr = LogManager(cfg, clock=clock, start_scheduler=False)
    lg = mgr.get_or_create_log("reused", 0, None, old_id)
    lg.append(batch(3))
    assert (tmp_path / "reused-0" / "partition.metadata").read_text() == f"version: 0\ntopic_id: {uuid_text(old_id)}\n"
    assert mgr.get_or_create_log("reused", 0, None, old_id) is lg        # the same topic: the same log
    mgr.shutdown()
    # the broker comes back after the topic was deleted and created again under its name
    mgr = LogManager(cfg, clock=clock, start_scheduler=False)
    assert mgr.get_log("reused", 0).log_end_offset == 3
    fresh = mgr.get_or_create_log("reused", 0, None, new_id)
    assert fresh.log_end_offset == 0 and read_topic_id(fresh.dir) == new_id
    assert mgr.get_log("reused", 0) is fresh
    mgr.shutdown()
    # a log without the file (written before ids) is taken as the topic's and gets the file
    bare = LogManager({"log.dirs": str(tmp_path / "bare")}, clock=clock, start_scheduler=False)
    bare.get_or_create_log("old", 0).append(batch(2))
    assert read_topic_id(bare.get_log("old", 0).dir) is None
    assert bare.get_or_create_log("old", 0, None, new_id).log_end_offset == 2
    assert read_topic_id(bare.get_log("old", 0).dir) == new_id
    bare.shutdown()
