"""Metadata v9-v12, OffsetCommit v8, OffsetFetch v8 (many groups) and ListOffsets v6-v7 against
a real broker, raw requests, beside their older versions."""
import uuid

import pytest

from fastkafka import errors as E
from fastkafka.protocol import ApiKey
from fastkafka.protocol.types import UUID_ZERO

from support.raw_client import RawClient as Raw

pytestmark = pytest.mark.clients


def test_metadata_v12_topic_ids_and_v10_v11(broker):
    broker.topics.create("m", 2)
    c = Raw(broker.port)
    r = c.call(ApiKey.METADATA, 12, {"topics": [{"name": "m"}], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": True})
    (t,) = r.topics
    # the topic's id (KIP-516), the one the registry gave it
    assert (t.error_code, t.name, t.topic_id, len(t.partitions)) == (0, "m", broker.topics.get("m").topic_id, 2)
    assert t.topic_id != UUID_ZERO
    assert t.topic_authorized_operations > 0 and r.cluster_id == broker.cluster_id
    # by id (v12): the topic by name and id; an id nobody has is UNKNOWN_TOPIC_ID with a null name
    tid = uuid.uuid4()
    r = c.call(ApiKey.METADATA, 12, {"topics": [{"topic_id": tid, "name": None},
                                                {"topic_id": t.topic_id, "name": None}]})
    assert [(x.error_code, x.name, x.topic_id, len(x.partitions)) for x in r.topics] == [
        (E.UnknownTopicIdError.code, None, tid, 0), (0, "m", t.topic_id, 2)]
    # v10/v11 take names only: an id is INVALID_REQUEST for each topic
    r = c.call(ApiKey.METADATA, 11, {"topics": [{"topic_id": tid, "name": "m"}]})
    assert [(t.error_code, t.name) for t in r.topics] == [(E.InvalidRequestError.code, "m")]
    # v10 still answers cluster operations; null topics list every topic
    r = c.call(ApiKey.METADATA, 10, {"topics": None, "include_cluster_authorized_operations": True})
    assert "m" in [t.name for t in r.topics] and r.cluster_authorized_operations > 0
    r = c.call(ApiKey.METADATA, 9, {"topics": [{"name": "nope"}], "allow_auto_topic_creation": False})
    assert [(t.name, t.error_code) for t in r.topics] == [("nope", E.UnknownTopicOrPartitionError.code)]


def commit(c, v, group, offsets):
    return c.call(ApiKey.OFFSET_COMMIT, v, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": [{"name": t, "partitions": [{"partition_index": p, "committed_offset": o,
                                               "committed_leader_epoch": 0, "committed_metadata": "md"}]}
                   for t, p, o in offsets]})


def test_offset_commit_v8_and_offset_fetch_v8_for_several_groups(broker):
    broker.topics.create("o", 2)
    c = Raw(broker.port)
    r = commit(c, 8, "ga", [("o", 0, 5), ("o", 1, 7)])
    assert [p.error_code for t in r.topics for p in t.partitions] == [0, 0]
    assert [p.error_code for t in commit(c, 2, "gb", [("o", 1, 9)]).topics for p in t.partitions] == [0]
    r = c.call(ApiKey.OFFSET_FETCH, 8, {"require_stable": True, "groups": [
        {"group_id": "ga", "topics": None},
        {"group_id": "gb", "topics": [{"name": "o", "partition_indexes": [0, 1]}]},
        {"group_id": "nobody", "topics": [{"name": "o", "partition_indexes": [0]}]}]})
    got = {g.group_id: (g.error_code, sorted((t.name, p.partition_index, p.committed_offset, p.metadata,
                                              p.committed_leader_epoch, p.error_code)
                                             for t in g.topics for p in t.partitions))
           for g in r.groups}
    assert got == {
        "ga": (0, [("o", 0, 5, "md", 0, 0), ("o", 1, 7, "md", 0, 0)]),
        "gb": (0, [("o", 0, -1, "", -1, 0), ("o", 1, 9, "md", -1, 0)]),
        "nobody": (0, [("o", 0, -1, "", -1, 0)])}
    # v7 and v1 answer the same offsets in their own layouts
    r = c.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "ga", "topics": [{"name": "o", "partition_indexes": [1]}]})
    assert [(p.committed_offset, p.error_code) for t in r.topics for p in t.partitions] == [(7, 0)]
    r = c.call(ApiKey.OFFSET_FETCH, 1, {"group_id": "gb", "topics": [{"name": "o", "partition_indexes": [1]}]})
    assert [p.committed_offset for t in r.topics for p in t.partitions] == [9]


def test_list_offsets_v7_max_timestamp(broker):
    from confluent_kafka import Producer
    broker.topics.create("lt", 1)
    prod = Producer({"bootstrap.servers": broker.bootstrap})
    for ts in (1000, 5000, 3000):        # one batch each: the answer is a batch's offset
        prod.produce("lt", b"v", partition=0, timestamp=ts)
        assert prod.flush(10) == 0
    c = Raw(broker.port)

    def ask(v, ts):
        r = c.call(ApiKey.LIST_OFFSETS, v, {"replica_id": -1, "topics": [
            {"name": "lt", "partitions": [{"partition_index": 0, "timestamp": ts}]}]})
        p = r.topics[0].partitions[0]
        return p.error_code, p.offset, p.timestamp
    assert ask(7, -3) == (0, 1, 5000)            # KIP-734: the record with the largest timestamp
    assert ask(6, -1)[:2] == (0, 3) and ask(6, 2000) == (0, 1, 5000)
    assert ask(5, -2)[:2] == (0, 0)
