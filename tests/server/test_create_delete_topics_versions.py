"""CreateTopics v5-v7 (each created or validated topic described in the answer: partitions,
replication factor, every config with its source; the zero topic id) and DeleteTopics v4-v5
(error messages), raw requests against a real broker, beside the older versions (kafka-python's
admin client at these versions: tests/clients/test_negotiated_versions.py)."""
import pytest

from fastkafka import errors as E
from fastkafka.protocol import ApiKey
from fastkafka.protocol.types import UUID_ZERO

from support.raw_client import RawClient as Raw

pytestmark = pytest.mark.broker_config(num_partitions=3)

DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


def create(c, version, name, validate_only=False, **configs):
    return c.call(ApiKey.CREATE_TOPICS, version, {
        "topics": [{"name": name, "num_partitions": -1, "replication_factor": -1, "assignments": [],
                    "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()]}],
        "timeout_ms": 5000, "validate_only": validate_only}).topics[0]


@pytest.mark.parametrize("version", [5, 6, 7])
def test_create_topics_v5_describes_what_it_created(broker, version):
    c = Raw(broker.port)
    t = create(c, version, f"made{version}", retention_ms="60000")
    assert (t.error_code, t.error_message, t.topic_config_error_code) == (0, None, 0)
    assert (t.num_partitions, t.replication_factor) == (3, 1)      # num.partitions, the embedded 1
    if version >= 7:   # KIP-516: the new topic's id, as Metadata reports it
        assert t.topic_id != UUID_ZERO and t.topic_id == broker.topics.get(f"made{version}").topic_id
    configs = {x.name: (x.value, x.config_source, x.read_only, x.is_sensitive) for x in t.configs}
    assert configs["retention.ms"] == ("60000", DYNAMIC_TOPIC_CONFIG, False, False)
    assert configs["cleanup.policy"] == ("delete", DEFAULT_CONFIG, False, False)
    # the same entries DescribeConfigs gives for the topic
    described = c.call(ApiKey.DESCRIBE_CONFIGS, 2, {"resources": [{
        "resource_type": 2, "resource_name": f"made{version}", "configuration_keys": None}],
        "include_synonyms": False}).results[0].configs
    assert configs == {x.name: (x.value, x.config_source, x.read_only, x.is_sensitive) for x in described}
    assert broker.topics.get(f"made{version}").partitions == 3


def test_create_topics_validate_only_describes_and_creates_nothing(broker):
    c = Raw(broker.port)
    t = create(c, 7, "would", validate_only=True, cleanup_policy="compact")
    assert (t.error_code, t.num_partitions, t.replication_factor) == (0, 3, 1)
    assert {x.name: x.value for x in t.configs}["cleanup.policy"] == "compact"
    assert broker.topics.get("would") is None


def test_create_topics_failures_describe_nothing_and_old_versions_still_work(broker):
    c = Raw(broker.port)
    assert create(c, 4, "old").error_code == 0
    t = create(c, 7, "old")
    assert t.error_code == E.TopicAlreadyExistsError.code and "already exists" in t.error_message
    assert (t.num_partitions, t.replication_factor, t.configs) == (-1, -1, None)
    t = create(c, 5, "bad", retention_ms="soon")
    assert t.error_code == E.InvalidConfigError.code and t.configs is None


def test_delete_topics_v5_carries_error_messages(broker):
    broker.topics.create("gone", 1)
    c = Raw(broker.port)
    r = c.call(ApiKey.DELETE_TOPICS, 5, {"topic_names": ["gone", "never"], "timeout_ms": 5000})
    got = {x.name: (x.error_code, x.error_message) for x in r.responses}
    assert got["gone"] == (0, None)
    assert got["never"][0] == E.UnknownTopicOrPartitionError.code and got["never"][1]
    r = c.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["never"], "timeout_ms": 5000})
    assert [x.error_code for x in r.responses] == [E.UnknownTopicOrPartitionError.code]

