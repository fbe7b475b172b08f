"""The controller mutation quota (KIP-599) over raw requests: what each version is answered.
quota.window.num=2 windows of 1 s and 5 partitions per second: a bucket of 10."""
import pytest

from fastkafka.protocol import ApiKey

from support.raw_client import RawClient as Raw


pytestmark = pytest.mark.timeout(60)

THROTTLED = 89


@pytest.fixture
def broker(start_broker):
    b = start_broker(quota_window_num=2, num_partitions=8)
    c = Raw(b.port, "setup")
    resp = c.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [
        {"entity": [{"entity_type": "client-id", "entity_name": None}],
         "ops": [{"key": "controller_mutation_rate", "value": 5.0, "remove": False}]}], "validate_only": False})
    assert resp.entries[0].error_code == 0
    return b


def create(c, version, topics, validate_only=False):
    return c.timed_call(ApiKey.CREATE_TOPICS, version, {"topics": [
        {"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [], "configs": []}
        for n, p in topics], "timeout_ms": 5000, "validate_only": validate_only})


def test_an_old_create_topics_is_done_and_answered_late(broker):
    c = Raw(broker.port, "old")
    # validate_only costs nothing
    resp, _ = create(c, 7, [("v1", 100)], validate_only=True)
    assert resp.topics[0].error_code == 0 and resp.throttle_time_ms == 0
    resp, took = create(c, 2, [("o1", 8), ("o2", 8), ("o3", 1)])      # v2: permissive, throttled by delay
    assert [t.error_code for t in resp.topics] == [0, 0, 0]
    assert 1300 <= resp.throttle_time_ms <= 1400 and took >= 1.2      # -7 tokens: 1.4 s, the response held
    assert broker.topics.get("o3").partitions == 1


def test_metadata_auto_creation_is_charged_but_not_throttled(broker):
    c = Raw(broker.port, "auto")
    resp = c.call(ApiKey.METADATA, 8, {"topics": [{"name": "a1"}, {"name": "a2"}], "allow_auto_topic_creation": True,
                                       "include_cluster_authorized_operations": False,
                                       "include_topic_authorized_operations": False})
    assert [t.error_code for t in resp.topics] == [0, 0] and resp.throttle_time_ms == 0
    resp, _ = create(c, 7, [("after", 1)])              # the bucket is at -6: refused, 1.2 s to wait
    assert resp.topics[0].error_code == THROTTLED and 1000 <= resp.throttle_time_ms <= 1200
    assert broker.topics.get("after") is None
    # another client id has a bucket of its own (the default quota: one rate per client)
    resp, _ = create(Raw(broker.port, "other"), 7, [("other", 1)])
    assert resp.topics[0].error_code == 0 and resp.throttle_time_ms == 0


def test_delete_topics_v4_is_throttled_v5_refused(broker):
    for n in ("d1", "d2", "d3"):
        broker.topics.create(n, 6)
    c = Raw(broker.port, "deleter")
    resp = c.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["d1", "d2"], "timeout_ms": 5000})
    assert [r.error_code for r in resp.responses] == [0, 0] and 350 <= resp.throttle_time_ms <= 400
    # (that connection is muted for the throttle: v4 clients back off themselves) on another at
    # once, the bucket is still below zero: v5 refuses the topic, an unknown one stays unknown
    resp = Raw(broker.port, "deleter").call(ApiKey.DELETE_TOPICS, 5, {"topic_names": ["d3", "d9"], "timeout_ms": 5000})
    assert [(r.name, r.error_code) for r in resp.responses] == [("d3", THROTTLED), ("d9", 3)]
    assert broker.topics.get("d3") is not None
