"""The replica fetcher against a real leader (an in-process broker) and a bare Log as the copy:
what it does when the leader answers OFFSET_OUT_OF_RANGE (Kafka's fetchOffsetAndTruncate) and
how it follows the leader's log start offset. The three-broker version with ZooKeeper is
tests/cluster/test_follower_log_start.py."""
from __future__ import annotations

import contextlib
import time

from fastkafka.config import KafkaConfig, LogConfig
from fastkafka.log import Log
from fastkafka.records import build_batch, iter_batches
from fastkafka.server.replica_fetcher import ReplicaFetcher

from support.waits import wait_for


def batch(n: int, base: int = 0, epoch: int = -1) -> bytearray:
    now = int(time.time() * 1000)           # recent: time retention keeps them
    return bytearray(build_batch([(b"k", b"v%d" % i, [], now + i) for i in range(n)],
                                 base_offset=base, partition_leader_epoch=epoch))


@contextlib.contextmanager
def following(leader, copy: Log):
    config = KafkaConfig({"replica.fetch.wait.max.ms": 50, "replica.fetch.backoff.ms": 50})
    f = ReplicaFetcher(2, 1, lambda: ("127.0.0.1", leader.port), lambda t, p: copy, config)
    f.add("orders", 0, epoch=0)
    f.start()
    try:
        yield f
    finally:
        f.stop()


def batches_from(lg: Log, offset: int) -> list[tuple[int, bytes]]:
    """(base offset, bytes after the offset field) of each batch holding ``offset`` or later."""
    out = []
    while offset < lg.log_end_offset:
        got = list(iter_batches(lg.read(offset, 1 << 20).read_bytes()))
        out += [(b.base_offset, bytes(b.buffer[8:])) for b in got]
        offset = got[-1].base_offset + got[-1].last_offset_delta + 1
    return out


def test_a_copy_behind_the_leaders_log_start_starts_over_there(broker, tmp_path):
    broker.topics.create("orders", 1)
    leader = broker.topics.log("orders", 0)
    for _ in range(10):
        leader.append(batch(3), leader_epoch=0)    # offsets 0..29, three to a batch
    assert leader.delete_records(16) == 16         # inside the batch 15..17
    copy = Log(str(tmp_path / "copy" / "orders-0"), LogConfig())
    copy.append_as_follower(batch(3, 0, 0) + batch(3, 3, 0))   # what it copied before it went away
    with following(broker, copy):
        wait_for(lambda: copy.log_end_offset == 30)
    assert copy.log_start_offset == leader.log_start_offset == 16
    assert copy.segments[0].base_offset == 15      # the batch holding the log start, whole
    assert batches_from(copy, 16) == batches_from(leader, 16)
    assert copy.leader_epochs.entries() == leader.leader_epochs.entries() == [(0, 16)]


def test_a_copy_past_the_leaders_end_truncates_to_it(broker, tmp_path):
    broker.topics.create("orders", 1)
    leader = broker.topics.log("orders", 0)
    for _ in range(3):
        leader.append(batch(2))                    # offsets 0..5
    copy = Log(str(tmp_path / "copy" / "orders-0"), LogConfig())
    copy.append_as_follower(leader.read(0, 1 << 20).read_bytes())
    copy.append_as_follower(batch(4, 6, 0))        # a tail the leader never had (unclean election)
    with following(broker, copy):
        wait_for(lambda: copy.log_end_offset == 6)
        leader.append(batch(1))
        wait_for(lambda: copy.log_end_offset == 7)
    assert batches_from(copy, 0) == batches_from(leader, 0)


def test_the_copy_follows_the_leaders_log_start(broker, tmp_path):
    broker.topics.create("orders", 1, configs={"segment.bytes": "200"})
    leader = broker.topics.log("orders", 0)
    copy = Log(str(tmp_path / "copy" / "orders-0"), LogConfig(segment_bytes=200, file_delete_delay_ms=0))
    with following(broker, copy):
        for _ in range(8):
            leader.append(batch(2))
        wait_for(lambda: copy.log_end_offset == 16)
        assert len(copy.segments) > 3 and copy.log_start_offset == 0
        leader.delete_records(9)
        wait_for(lambda: copy.log_start_offset == 9)   # from the next fetch's answer
    assert copy.segments[0].base_offset == leader.segments[0].base_offset
    assert [s.base_offset for s in copy.segments] == [s.base_offset for s in leader.segments]
    assert batches_from(copy, 9) == batches_from(leader, 9)
