"""kafka-python 3.x against the broker (idempotence off until the coordinator exists)."""
import time

import pytest

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402
from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]


def consumer(broker):
    return KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                         consumer_timeout_ms=30_000, fetch_max_wait_ms=100)   # the tests stop at a count


@pytest.mark.parametrize("codec", [None, "gzip", "lz4", "zstd", "snappy"])
def test_produce_consume_with_keys_and_headers(broker, codec):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("kp", num_partitions=2, replication_factor=1)])
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False, acks=1,
                      compression_type=codec, linger_ms=5)
    futures = [p.send("kp", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2,
                      headers=[("n", b"%d" % i)]) for i in range(200)]
    p.flush(20)
    md = [f.get(10) for f in futures]
    assert sorted(m.offset for m in md if m.partition == 0) == list(range(100))
    p.close()
    c = consumer(broker)
    c.assign([TopicPartition("kp", 0), TopicPartition("kp", 1)])
    c.seek_to_beginning()
    got = []
    for m in c:
        got.append(m)
        if len(got) == 200:
            break
    c.close()
    assert len(got) == 200
    m = next(m for m in got if m.key == b"k9")
    assert (m.value, m.partition, m.headers) == (b"v9", 1, [("n", b"9")])
    admin.close()


def test_seek_to_offset_and_timestamp(broker):
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
    base = int(time.time() * 1000) - 50_000
    for i in range(50):
        p.send("kts", value=b"%d" % i, timestamp_ms=base + i * 1000).get(10)
    p.close()
    c = consumer(broker)
    tp = TopicPartition("kts", 0)
    c.assign([tp])
    found = c.offsets_for_times({tp: base + 20_500})
    assert found[tp].offset == 21 and found[tp].timestamp == base + 21_000
    assert c.beginning_offsets([tp])[tp] == 0 and c.end_offsets([tp])[tp] == 50
    c.seek(tp, 45)
    got = []
    for m in c:
        got.append(m.value)
        if len(got) == 5:
            break
    assert got == [b"45", b"46", b"47", b"48", b"49"]
    c.close()


def test_admin_create_and_delete(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("ka", num_partitions=4, replication_factor=1,
                                  topic_configs={"cleanup.policy": "compact"})])
    assert "ka" in admin.list_topics()
    assert broker.topics.get("ka").partitions == 4
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("ka", num_partitions=1, replication_factor=1)])
    admin.delete_topics(["ka"])
    assert "ka" not in admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics(["ka"])
    admin.close()


def test_admin_creates_topic_with_compression_type(broker):
    """kafka-python's admin: compression.type (and the other standard topic configs) accepted."""
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import InvalidConfigurationError
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        a.create_topics([NewTopic("kp-lz4", 1, 1, topic_configs={"compression.type": "lz4",
                                                                  "min.insync.replicas": "1"})])
        res = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-lz4")])
        entries = res["topic"]["kp-lz4"]
        assert entries["compression.type"]["value"] == "lz4"
        assert entries["compression.type"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert entries["min.insync.replicas"]["value"] == "1"
        with pytest.raises(InvalidConfigurationError):
            a.create_topics([NewTopic("kp-bad", 1, 1, topic_configs={"compression.type": "brotli"})])
    finally:
        a.close()
