"""ListOffsets as Kafka answers it (fastkafka/server/handlers/list_offsets.py): who asks decides
where and up to where (a consumer at the leader up to the high watermark, a follower at the
leader up to the log end, a debugging request at any replica), ``current_leader_epoch`` is
fenced as Fetch fences it, and each answer carries the leader epoch of its offset.

The cluster roles are played by a real Log behind a stand-in replica manager (the handler is
called as the dispatcher calls it); the single-broker half runs a real broker over the wire."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from fastkafka import errors
from fastkafka import protocol as P
from fastkafka.config import LogConfig
from fastkafka.log import Log
from fastkafka.protocol import ApiKey
from fastkafka.records import build_batch
from fastkafka.server.handlers.list_offsets import handle_list_offsets
from fastkafka.server.partition import FOLLOWER, LEADER

from support.raw_client import RawClient


NOT_LEADER, LEADER_NOT_AVAILABLE, FENCED, UNKNOWN_EPOCH, NOT_AVAILABLE = 6, 5, 74, 75, 78
UNSUPPORTED_VERSION = 35
CONSUMER, DEBUG, FOLLOWER_ID = -1, -2, 2


# --- cluster roles, one partition: offsets 0..9 in epochs 3 (0-4) and 5 (5-9), committed to 7 --

def leader_batch(base: int, n: int, epoch: int) -> bytearray:
    return bytearray(build_batch([(b"k", b"v", [], 1000 * (base + i + 1)) for i in range(n)],
                                 base_offset=base, partition_leader_epoch=epoch))


@pytest.fixture
def replica(tmp_path):
    lg = Log(str(tmp_path / "t-0"), LogConfig())
    lg.high_watermark_follows_end = False
    lg.append_as_follower(leader_batch(0, 5, 3) + leader_batch(5, 5, 5))
    lg.update_high_watermark(7)
    part = NS(role=LEADER, leader_epoch=5, epoch_start_offset=5)

    def log(topic, partition):
        if part.role != LEADER:
            raise errors.NotLeaderOrFollowerError("led elsewhere")
        return lg
    services = NS(replicas=NS(get=lambda t, p: part if (t, p) == ("t", 0) else None),
                  topics=NS(log=log, local_log=lambda t, p: lg), authorizer=None)
    yield NS(log=lg, part=part, services=services)
    lg.close()


def list_offsets(replica, timestamp: int, *, replica_id: int = CONSUMER, version: int = 5,
                 current_epoch: int = -1, isolation: int = 0):
    codec = P.codec(ApiKey.LIST_OFFSETS, version)
    req = codec.decode_request(codec.encode_request_body({"replica_id": replica_id, "isolation_level": isolation,
                                                          "topics": [{"name": "t", "partitions": [{
                                                              "partition_index": 0, "current_leader_epoch":
                                                              current_epoch, "timestamp": timestamp,
                                                              "max_num_offsets": 10}]}]}))
    ctx = NS(version=version, codec=codec, services=replica.services, authorize=lambda *a: True)
    p = handle_list_offsets(ctx, req).topics[0].partitions[0]
    if version == 0:
        return p.error_code, list(p.old_style_offsets)
    return (p.error_code, p.offset, p.leader_epoch) if p.error_code == 0 else (p.error_code,)


def test_a_consumer_sees_up_to_the_high_watermark_a_follower_up_to_the_log_end(replica):
    assert list_offsets(replica, -1) == (0, 7, 5)                    # the partition's current epoch
    assert list_offsets(replica, -1, replica_id=FOLLOWER_ID) == (0, 10, 5)
    assert list_offsets(replica, -1, replica_id=DEBUG) == (0, 10, 5)
    assert list_offsets(replica, -2) == (0, 0, 3)                    # the epoch that wrote offset 0
    assert list_offsets(replica, 6000) == (0, 5, 5)                  # record 5 (ts 6000), epoch 5
    assert list_offsets(replica, 3000) == (0, 2, 3)
    assert list_offsets(replica, 9000) == (0, -1, -1)                # record 8: not committed yet
    assert list_offsets(replica, 9000, replica_id=FOLLOWER_ID) == (0, 8, 5)
    assert list_offsets(replica, -1, version=0) == (0, [7, 0])       # v0: capped at the high watermark
    assert list_offsets(replica, -1, version=0, replica_id=FOLLOWER_ID) == (0, [10, 0])
    assert list_offsets(replica, -3, version=0) == (UNSUPPORTED_VERSION, [])


def test_the_leader_epoch_of_the_log_start_follows_it(replica):
    replica.log.delete_records(6)
    assert list_offsets(replica, -2) == (0, 6, 5)
    assert list_offsets(replica, 1000) == (0, 6, 5)                  # older records are gone


def test_current_leader_epoch_is_fenced(replica):
    assert list_offsets(replica, -1, current_epoch=5) == (0, 7, 5)
    assert list_offsets(replica, -1, current_epoch=4) == (FENCED,)
    assert list_offsets(replica, -1, current_epoch=6) == (UNKNOWN_EPOCH,)
    assert list_offsets(replica, -1, current_epoch=4, version=3)[0] == 0     # v3 has no such field


def test_a_follower_replica_answers_only_debugging_requests(replica):
    replica.part.role = FOLLOWER
    assert list_offsets(replica, -1) == (NOT_LEADER,)
    assert list_offsets(replica, -1, replica_id=FOLLOWER_ID) == (NOT_LEADER,)
    assert list_offsets(replica, -2, replica_id=DEBUG) == (0, 0, 3)
    assert list_offsets(replica, -1, replica_id=DEBUG) == (0, 10, 5)
    assert list_offsets(replica, -1, replica_id=DEBUG, current_epoch=4) == (FENCED,)   # fencing first


def test_a_new_leader_behind_the_start_of_its_epoch_has_no_latest_offset_yet(replica):
    replica.part.epoch_start_offset = 9            # elected at 9, still committed only to 7
    assert list_offsets(replica, -1) == (NOT_AVAILABLE,)
    assert list_offsets(replica, -1, version=4) == (LEADER_NOT_AVAILABLE,)
    assert list_offsets(replica, 9000) == (NOT_AVAILABLE,)          # found past the high watermark
    assert list_offsets(replica, 3000) == (0, 2, 3)                  # below it: answered
    assert list_offsets(replica, -2) == (0, 0, 3)
    assert list_offsets(replica, -1, replica_id=FOLLOWER_ID) == (0, 10, 5)   # followers are not held


# --- a single broker: every partition led in epoch 0, the same epoch everywhere --------------

def raw_partition(resp):
    t = resp.topics[0] if hasattr(resp, "topics") else resp.responses[0]
    return t.partitions[0]


def test_single_broker_epoch_is_zero_in_every_api(broker):
    broker.topics.create("e", 1)
    c = RawClient(broker.port)
    records = build_batch([(b"k", b"v", [], 1000 + i) for i in range(3)])
    assert c.call(ApiKey.PRODUCE, 7, {"acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "e", "partition_data": [{"index": 0, "records": records}]}]}).responses[0] \
        .partition_responses[0].error_code == 0
    md = c.call(ApiKey.METADATA, 8, {"topics": [{"name": "e"}], "allow_auto_topic_creation": False,
                                     "include_cluster_authorized_operations": False,
                                     "include_topic_authorized_operations": False})
    epoch = md.topics[0].partitions[0].leader_epoch
    assert epoch == 0

    def lo(ts, current, replica_id=-1):
        p = raw_partition(c.call(ApiKey.LIST_OFFSETS, 5, {"replica_id": replica_id, "isolation_level": 0, "topics": [
            {"name": "e", "partitions": [{"partition_index": 0, "current_leader_epoch": current,
                                          "timestamp": ts}]}]}))
        return p.error_code, p.offset, p.leader_epoch

    def fetch(current):
        return raw_partition(c.call(ApiKey.FETCH, 11, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "", "topics": [
                {"topic": "e", "partitions": [{"partition": 0, "current_leader_epoch": current, "fetch_offset": 0,
                                               "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]})).error_code

    def ofle(current):
        p = raw_partition(c.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, {"replica_id": -1, "topics": [
            {"topic": "e", "partitions": [{"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}]}]}))
        return p.error_code, p.leader_epoch, p.end_offset

    assert lo(-1, epoch) == (0, 3, epoch) and lo(-2, -1) == (0, 0, epoch) and lo(1001, epoch) == (0, 1, epoch)
    assert lo(-1, -1, replica_id=-2) == (0, 3, epoch)
    assert fetch(epoch) == 0 and ofle(epoch) == (0, epoch, 3)
    # a client that believes in a later epoch is told this broker does not know it yet, by all three
    assert lo(-1, epoch + 1)[0] == fetch(epoch + 1) == ofle(epoch + 1)[0] == UNKNOWN_EPOCH
    v1 = raw_partition(c.call(ApiKey.LIST_OFFSETS, 1, {"replica_id": -1, "topics": [
        {"name": "e", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}))
    assert (v1.error_code, v1.offset) == (0, 3)
