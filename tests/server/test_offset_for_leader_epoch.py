"""OffsetForLeaderEpoch on a single broker: every partition is led in epoch 0 from its start."""
from __future__ import annotations

from fastkafka.client.connection import BrokerConnection
from fastkafka.protocol import ApiKey
from fastkafka.records import build_batch


def ask(broker, topic: str, epoch: int, current: int = -1):
    with BrokerConnection("127.0.0.1", broker.port) as c:
        resp = c.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, {"replica_id": -1, "topics": [
            {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": current,
                                             "leader_epoch": epoch}]}]})
        assert c.versions[ApiKey.OFFSET_FOR_LEADER_EPOCH] == 4      # flexible
    p = resp.topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


def test_epoch_zero_ends_at_the_log_end(broker):
    broker.topics.create("e", 1)
    with BrokerConnection("127.0.0.1", broker.port) as c:
        resp = c.request(ApiKey.PRODUCE, {"acks": -1, "timeout_ms": 5000, "topic_data": [{"name": "e", "partition_data": [
            {"index": 0, "records": build_batch([(b"k", b"v", [], 1)] * 4)}]}]})
        assert resp.responses[0].partition_responses[0].error_code == 0
    assert ask(broker, "e", 0) == (0, 0, 4)
    assert ask(broker, "e", 0, current=0) == (0, 0, 4)
    assert ask(broker, "e", 3) == (0, -1, -1)            # an epoch this log never had: undefined
    assert ask(broker, "missing", 0)[0] == 3             # UNKNOWN_TOPIC_OR_PARTITION
    assert broker.topics.log("e", 0).read(0, 1 << 20).read_bytes()[12:16] == b"\0\0\0\0"  # produce stamps epoch 0
