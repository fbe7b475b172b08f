"""The coordinators' replicated writes (server/coordinator_writer.py) over a real Log, a real
Partition and a real produce purgatory: acknowledged when the high watermark passes them."""
from __future__ import annotations

import time
from types import SimpleNamespace as NS

import pytest

from fastkafka import errors
from fastkafka.config import KafkaConfig, LogConfig
from fastkafka.log import Log
from fastkafka.records import build_batch, iter_batches
from fastkafka.server.coordinator_writer import CoordinatorPartitionWriter
from fastkafka.server.partition import Partition
from fastkafka.server.purgatory import Purgatory

pytestmark = pytest.mark.timeout(30)

TOPIC = "__consumer_offsets"


@pytest.fixture
def setup(tmp_path):
    lg = Log(str(tmp_path / f"{TOPIC}-0"))
    part = Partition(TOPIC, 0, 1, lg)
    part.become_leader(epoch=4, replicas=(1, 2), isr=(1, 2), version=0, now=0)
    purgatory = Purgatory("produce")
    replicas = NS(get=lambda t, p: part, produce_purgatory=purgatory)

    def writer(**kw):
        return CoordinatorPartitionWriter(NS(log=lambda t, p: lg), replicas, TOPIC, **kw)
    yield lg, part, purgatory, writer
    purgatory.shutdown()
    lg.close()


def batch() -> bytearray:
    return bytearray(build_batch([(b"k", b"v", [], 1000)]))


def test_acknowledged_when_the_follower_has_it(setup):
    lg, part, purgatory, writer = setup
    got = []
    writer()(0, batch(), got.append)
    assert got == [] and lg.log_end_offset == 1 and lg.high_watermark == 0
    # stamped with the leader's epoch, as a produced batch is (followers truncate by it)
    assert [b.header.partition_leader_epoch for b in iter_batches(lg.read(0, 1 << 20).read_bytes())] == [4]
    part.follower_fetched(2, 1, now=1)
    purgatory.check((TOPIC, 0))
    assert got == [0]
    writer()(0, batch(), None)        # nobody waits: appended all the same (tombstones)
    assert lg.log_end_offset == 2


def test_the_wait_ends_with_a_timeout_or_a_lost_leadership(setup):
    _, part, purgatory, writer = setup
    timed_out = []
    writer(timeout_ms=50)(0, batch(), timed_out.append)
    lost = []
    writer()(0, batch(), lost.append)
    deadline = time.monotonic() + 5
    while not timed_out and time.monotonic() < deadline:
        time.sleep(0.01)  # poll interval
    assert timed_out == [errors.RequestTimedOutError.code] and lost == []
    part.become_follower(2, 5, (1, 2), (1, 2), 1)
    purgatory.check((TOPIC, 0))
    assert lost == [errors.NotLeaderOrFollowerError.code]
    with pytest.raises(errors.NotLeaderOrFollowerError):
        writer()(0, batch(), lost.append)


def test_a_leadership_regained_in_a_later_epoch_does_not_acknowledge_older_writes(setup):
    _, part, purgatory, writer = setup
    got = []
    writer()(0, batch(), got.append)
    part.become_leader(epoch=6, replicas=(1, 2), isr=(1,), version=2, now=0)   # lost and back
    purgatory.check((TOPIC, 0))
    assert got == [errors.NotLeaderOrFollowerError.code]


def test_min_insync_replicas_and_required_acks(setup):
    lg, part, _, writer = setup
    lg.config = LogConfig.from_broker(KafkaConfig({}), {"min.insync.replicas": "2"})
    part.isr_written((1,), version=1)
    with pytest.raises(errors.NotEnoughReplicasError):
        writer()(0, batch(), print)
    assert lg.log_end_offset == 0                  # refused before the append
    got = []
    writer(required_acks=1)(0, batch(), got.append)
    assert got == [0] and lg.log_end_offset == 1   # the leader's append is enough
