"""The admin APIs' flexible versions (KIP-482) against a real broker, raw requests: DescribeConfigs
v3-v4 (types, documentation), AlterConfigs v2, CreatePartitions v2-v3, DeleteRecords v2, DeleteGroups
v2, OffsetForLeaderEpoch v4, ACLs v2-v3, DeleteTopics v6 (topic ids), ListGroups v5 (group types),
FindCoordinator v5, ListOffsets v8-v9 (the tiered-storage timestamps)."""
import uuid

import pytest

from fastkafka import errors as E
from fastkafka.config import TOPIC_KEYS
from fastkafka.protocol import ApiKey
from fastkafka.protocol.types import UUID_ZERO
from fastkafka.records import build_batch

from support.raw_client import RawClient as Raw

pytestmark = pytest.mark.broker_config(group_initial_rebalance_delay_ms=0, super_users="User:ANONYMOUS",
                                       authorizer_class_name="kafka.security.authorizer.AclAuthorizer")

TOPIC, BROKER = 2, 4
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7        # Kafka's ConfigType


def produce(c, topic, partition, n):
    r = c.call(ApiKey.PRODUCE, 7, {"acks": -1, "timeout_ms": 5000, "topic_data": [{"name": topic, "partition_data": [
        {"index": partition, "records": build_batch([(None, b"v", [], 1)] * n)}]}]})
    assert r.responses[0].partition_responses[0].error_code == 0


def describe(c, version, name, keys, docs, rtype=TOPIC):
    r = c.call(ApiKey.DESCRIBE_CONFIGS, version, {
        "resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": docs})
    (res,) = r.results
    assert res.error_code == 0, res.error_message
    return {e.name: e for e in res.configs}


def test_describe_configs_v3_v4_types_and_documentation_and_alter_v2(broker):
    broker.topics.create("cfg", 1)
    c = Raw(broker.port)
    keys = ["retention.ms", "cleanup.policy", "compression.type", "unclean.leader.election.enable",
            "min.insync.replicas"]
    got = describe(c, 4, "cfg", keys, True)
    assert {k: got[k].config_type for k in keys} == {
        "retention.ms": LONG, "cleanup.policy": LIST, "compression.type": STRING,
        "unclean.leader.election.enable": BOOLEAN, "min.insync.replicas": INT}
    assert got["retention.ms"].documentation == TOPIC_KEYS["retention.ms"].doc != ""
    assert all(e.documentation is None for e in describe(c, 3, "cfg", keys, False).values())
    assert describe(c, 4, str(broker.broker_id), ["log.retention.hours"], True, BROKER)[
        "log.retention.hours"].config_type == INT
    r = c.call(ApiKey.ALTER_CONFIGS, 2, {"resources": [{"resource_type": TOPIC, "resource_name": "cfg", "configs": [
        {"name": "retention.ms", "value": "12345"}]}], "validate_only": False})
    assert [(x.error_code, x.resource_name) for x in r.responses] == [(0, "cfg")]
    assert describe(c, 4, "cfg", ["retention.ms"], False)["retention.ms"].value == "12345"


def test_create_partitions_v3_delete_records_v2_offset_for_leader_epoch_v4(broker):
    broker.topics.create("grow", 1)
    c = Raw(broker.port)
    r = c.call(ApiKey.CREATE_PARTITIONS, 3, {"topics": [{"name": "grow", "count": 3, "assignments": None}],
                                             "timeout_ms": 5000, "validate_only": False})
    assert [(x.name, x.error_code) for x in r.results] == [("grow", 0)]
    assert broker.topics.get("grow").partitions == 3
    produce(c, "grow", 2, 10)
    r = c.call(ApiKey.DELETE_RECORDS, 2, {"topics": [{"name": "grow", "partitions": [
        {"partition_index": 2, "offset": 4}]}], "timeout_ms": 5000})
    (p,) = r.topics[0].partitions
    assert (p.error_code, p.low_watermark) == (0, 4)
    r = c.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [{"topic": "grow", "partitions": [
        {"partition": 2, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
    (p,) = r.topics[0].partitions
    assert (p.error_code, p.leader_epoch, p.end_offset) == (0, 0, 10)


def test_list_offsets_v8_local_start_and_v9_tiered(broker):
    broker.topics.create("lo", 1)
    c = Raw(broker.port)
    produce(c, "lo", 0, 6)
    c.call(ApiKey.DELETE_RECORDS, 2, {"topics": [{"name": "lo", "partitions": [{"partition_index": 0, "offset": 2}]}],
                                      "timeout_ms": 5000})

    def offset(version, ts):
        r = c.call(ApiKey.LIST_OFFSETS, version, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "lo", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts}]}]})
        p = r.topics[0].partitions[0]
        return p.error_code, p.offset, p.leader_epoch
    assert offset(8, -4) == offset(7, -2) == (0, 2, 0)     # the local log is the whole log
    assert offset(9, -5) == (0, -1, -1)                    # nothing tiered
    assert offset(9, -1) == (0, 6, 0)


def test_delete_topics_v6_by_name_or_id(broker):
    gone = broker.topics.create("gone", 1).topic_id
    by_id = broker.topics.create("by-id", 2).topic_id
    c = Raw(broker.port)
    unknown = uuid.uuid4()
    r = c.call(ApiKey.DELETE_TOPICS, 6, {"timeout_ms": 5000, "topics": [
        {"name": "gone", "topic_id": UUID_ZERO}, {"name": None, "topic_id": unknown},
        {"name": "both", "topic_id": unknown}, {"name": "nope", "topic_id": UUID_ZERO},
        {"name": None, "topic_id": by_id}]})
    # as Kafka: each deleted topic answered by its name and its id, however it was asked
    assert [(x.name, x.topic_id, x.error_code) for x in r.responses] == [
        ("gone", gone, 0), (None, unknown, E.UnknownTopicIdError.code),
        ("both", unknown, E.InvalidRequestError.code), ("nope", UUID_ZERO, E.UnknownTopicOrPartitionError.code),
        ("by-id", by_id, 0)]
    assert r.responses[2].error_message == "You may not specify both topic name and topic id."
    assert broker.topics.get("gone") is None and broker.topics.get("by-id") is None
    # a topic created again under a deleted one's name is another topic: another id
    assert broker.topics.create("gone", 1).topic_id not in (gone, UUID_ZERO)
    r = c.call(ApiKey.DELETE_TOPICS, 5, {"timeout_ms": 5000, "topic_names": ["nope"]})
    assert [(x.name, x.error_code) for x in r.responses] == [("nope", E.UnknownTopicOrPartitionError.code)]


def test_list_groups_v5_delete_groups_v2_find_coordinator_v5(broker):
    c = Raw(broker.port)
    r = c.call(ApiKey.FIND_COORDINATOR, 5, {"key_type": 0, "coordinator_keys": ["idle"]})
    assert [(x.key, x.error_code, x.node_id) for x in r.coordinators] == [("idle", 0, broker.broker_id)]
    r = c.call(ApiKey.OFFSET_COMMIT, 2, {"group_id": "idle", "generation_id_or_member_epoch": -1, "member_id": "",
                                         "retention_time_ms": -1, "topics": []})
    broker.topics.create("g", 1)
    r = c.call(ApiKey.OFFSET_COMMIT, 2, {"group_id": "idle", "generation_id_or_member_epoch": -1, "member_id": "",
                                         "retention_time_ms": -1, "topics": [{"name": "g", "partitions": [
                                             {"partition_index": 0, "committed_offset": 0,
                                              "committed_metadata": ""}]}]})
    assert r.topics[0].partitions[0].error_code == 0

    def listed(version, **filters):
        r = c.call(ApiKey.LIST_GROUPS, version, {"states_filter": [], "types_filter": [], **filters})
        assert r.error_code == 0
        return [(g.group_id, g.group_state, g.group_type) for g in r.groups]
    assert listed(5) == [("idle", "Empty", "classic")]
    assert listed(5, types_filter=["Classic"]) == [("idle", "Empty", "classic")]
    assert listed(5, types_filter=["consumer"]) == []            # KIP-848 groups: none in ZooKeeper mode
    assert listed(4, states_filter=["empty"]) == [("idle", "Empty", "classic")]
    r = c.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["idle", "never"]})
    assert sorted((x.group_id, x.error_code) for x in r.results) == [
        ("idle", 0), ("never", E.GroupIdNotFoundError.code)]
    assert listed(5) == []


def test_acls_v3_round_trip_with_the_user_resource_type(broker):
    c = Raw(broker.port)
    USER, DESCRIBE_TOKENS, ALLOW, LITERAL = 7, 14, 3, 3
    acl = {"resource_type": USER, "resource_name": "User:bob", "resource_pattern_type": LITERAL,
           "principal": "User:alice", "host": "*", "operation": DESCRIBE_TOKENS, "permission_type": ALLOW}
    r = c.call(ApiKey.CREATE_ACLS, 3, {"creations": [acl]})
    assert [x.error_code for x in r.results] == [0]
    flt = {"resource_type_filter": USER, "resource_name_filter": None, "pattern_type_filter": LITERAL,
           "principal_filter": None, "host_filter": None, "operation": DESCRIBE_TOKENS, "permission_type": ALLOW}
    r = c.call(ApiKey.DESCRIBE_ACLS, 3, flt)
    assert r.error_code == 0
    assert [(x.resource_type, x.resource_name, [(a.principal, a.operation) for a in x.acls]) for x in r.resources] == [
        (USER, "User:bob", [("User:alice", DESCRIBE_TOKENS)])]
    r = c.call(ApiKey.DELETE_ACLS, 3, {"filters": [flt]})
    assert [[m.resource_name for m in f.matching_acls] for f in r.filter_results] == [["User:bob"]]
    assert c.call(ApiKey.DESCRIBE_ACLS, 2, flt).resources == []


def test_produce_v8_v9_error_message_and_fetch_v12_diverging_epoch(broker):
    broker.topics.create("pf", 1)
    broker.topics.create("compact", 1, configs={"cleanup.policy": "compact"})
    c = Raw(broker.port)
    for v in (8, 9):
        r = c.call(ApiKey.PRODUCE, v, {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
            {"name": "pf", "partition_data": [{"index": 0, "records": build_batch([(None, b"v", [], 1)] * 5)}]},
            {"name": "compact", "partition_data": [{"index": 0, "records": build_batch([(None, b"v", [], 1)])}]}]})
        ok, refused = (t.partition_responses[0] for t in r.responses)
        assert (ok.error_code, ok.base_offset, ok.error_message, list(ok.record_errors)) == (0, 5 * (v - 8), None, [])
        assert refused.error_code == E.InvalidRecordError.code and "key" in refused.error_message
    # the log's epochs: 0 from offset 0, then (as after two leader changes) 3 from offset 10
    lg = broker.topics.log("pf", 0)
    lg.leader_epochs.assign(3, 10)
    produce(c, "pf", 0, 2)

    def fetch(offset, last_epoch, version=12):
        r = c.call(ApiKey.FETCH, version, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": "pf", "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                       "fetch_offset": offset, "last_fetched_epoch": last_epoch,
                                                       "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]})
        p = r.responses[0].partitions[0]
        assert p.error_code == 0
        div = p.diverging_epoch
        return len(p.records or b""), None if div is None else (div.epoch, div.end_offset)
    assert fetch(10, 3)[1] is None and fetch(10, 3)[0] > 0     # in step: records
    assert fetch(8, 0)[1] is None                               # epoch 0 ends at 10, past 8
    # a fetcher that read epoch 1 (this log never had it) up to 12: truncate to epoch 0's end
    assert fetch(12, 1) == (0, (0, 10))
    assert fetch(11, 0) == (0, (0, 10))                         # epoch 0 ended at 10, not 11
    assert fetch(11, 1, version=11) == (fetch(11, -1)[0], None)    # v11 cannot ask: records
