"""confluent-kafka (librdkafka 2.x) against the broker: admin, produce with keys/headers/codecs,
consume from an offset and from a timestamp."""
import time

import pytest

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]


def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create(broker, name, partitions=1, **configs):
    a = admin(broker)  # keep the client alive until the future resolves
    fs = a.create_topics([NewTopic(name, partitions, 1, config=configs)], request_timeout=10)
    fs[name].result(10)


def consume(broker, topic, partitions, n, offset=0, timeout=20):
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, p, offset) for p in partitions])
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        out.append(m)
    c.close()
    return out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_keys_headers_each_codec(broker, codec):
    create(broker, "orders", partitions=2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 5,
                  "acks": "all"})
    for i in range(500):
        p.produce("orders", key=f"k{i}".encode(), value=f"value-{i}".encode() * 3, partition=i % 2,
                  headers=[("seq", str(i).encode()), ("codec", codec.encode())])
    assert p.flush(20) == 0
    msgs = consume(broker, "orders", [0, 1], 500)
    assert len(msgs) == 500
    by_key = {m.key(): m for m in msgs}
    m = by_key[b"k7"]
    assert m.value() == b"value-7" * 3 and m.partition() == 1
    assert m.headers() == [("seq", b"7"), ("codec", codec.encode())]
    for part in (0, 1):  # offsets are dense and in order per partition
        offs = [m.offset() for m in msgs if m.partition() == part]
        assert offs == list(range(250))


def test_consume_from_offset_and_timestamp(broker):
    create(broker, "events")
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    base = int(time.time() * 1000) - 100_000
    for i in range(100):
        p.produce("events", value=b"e%d" % i, timestamp=base + i * 1000)
        p.flush(10)
    msgs = consume(broker, "events", [0], 60, offset=40)
    assert [m.offset() for m in msgs] == list(range(40, 100))
    assert msgs[0].value() == b"e40" and msgs[0].timestamp()[1] == base + 40_000
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    found = c.offsets_for_times([TopicPartition("events", 0, base + 57_500)], timeout=10)
    assert found[0].offset == 58
    found = c.offsets_for_times([TopicPartition("events", 0, base + 10_000_000)], timeout=10)
    assert found[0].offset == -1  # no record that recent: end
    lo, hi = c.get_watermark_offsets(TopicPartition("events", 0), timeout=10)
    assert (lo, hi) == (0, 100)
    c.close()


def test_admin_create_describe_grow_delete(broker):
    a = admin(broker)
    fs = a.create_topics([NewTopic("a1", 3, 1, config={"retention.ms": "60000"}),
                          NewTopic("bad name!", 1, 1),
                          NewTopic("a2", 1, 1, config={"no.such.config": "1"})], request_timeout=10)
    fs["a1"].result(10)
    with pytest.raises(KafkaException) as e:
        fs["bad name!"].result(10)
    assert e.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_EXCEPTION
    with pytest.raises(KafkaException) as e:
        fs["a2"].result(10)
    assert e.value.args[0].code() == confluent_kafka.KafkaError.INVALID_CONFIG
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic("a1", 1, 1)])["a1"].result(10)
    assert e.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS

    md = a.list_topics(timeout=10)
    assert len(md.topics["a1"].partitions) == 3 and "a2" not in md.topics
    assert md.controller_id == broker.broker_id and md.cluster_id == broker.cluster_id

    from confluent_kafka.admin import ConfigResource
    res = a.describe_configs([ConfigResource("topic", "a1")])
    cfg = list(res.values())[0].result(10)
    assert cfg["retention.ms"].value == "60000" and not cfg["retention.ms"].is_default
    assert cfg["segment.bytes"].value == str(1 << 30) and cfg["segment.bytes"].is_default

    a.create_partitions([NewPartitions("a1", 5)])["a1"].result(10)
    assert len(a.list_topics(timeout=10).topics["a1"].partitions) == 5
    with pytest.raises(KafkaException):
        a.create_partitions([NewPartitions("a1", 2)])["a1"].result(10)

    a.delete_topics(["a1"], request_timeout=10)["a1"].result(10)
    assert "a1" not in a.list_topics(timeout=10).topics
    with pytest.raises(KafkaException) as e:
        a.delete_topics(["a1"])["a1"].result(10)
    assert e.value.args[0].code() == confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART


def test_every_kafka_topic_config_is_accepted_with_kafka_validation(broker):
    """Kafka's topic-level configs that real clients set (compression.type=lz4 was refused as
    unknown): each accepted with Kafka's validation and reported back by DescribeConfigs."""
    from confluent_kafka.admin import ConfigResource
    from fastkafka.config import topic_config_names
    a = admin(broker)
    configs = {"compression.type": "lz4", "min.insync.replicas": "2",
               "unclean.leader.election.enable": "true", "message.downconversion.enable": "false",
               "message.format.version": "2.8", "max.compaction.lag.ms": "3600000",
               "follower.replication.throttled.replicas": "0:1,1:2",
               "leader.replication.throttled.replicas": "*",
               "message.timestamp.difference.max.ms": "60000", "segment.jitter.ms": "10"}
    a.create_topics([NewTopic("cfg-all", 2, 1, config=configs)])["cfg-all"].result(10)
    cfg = list(a.describe_configs([ConfigResource("topic", "cfg-all")]).values())[0].result(10)
    assert {k: cfg[k].value for k in configs} == configs
    assert set(cfg) == set(topic_config_names())
    assert cfg["local.retention.ms"].value == "-2" and cfg["local.retention.ms"].is_default
    for bad in ({"compression.type": "brotli"}, {"min.insync.replicas": "0"},
                {"leader.replication.throttled.replicas": "a:b"}, {"remote.storage.enable": "true"},
                {"message.format.version": "banana"}):
        with pytest.raises(KafkaException) as e:
            a.create_topics([NewTopic("cfg-bad", 1, 1, config=bad)])["cfg-bad"].result(10)
        assert e.value.args[0].code() == confluent_kafka.KafkaError.INVALID_CONFIG, bad
        assert list(bad)[0] in e.value.args[0].str()
    assert "cfg-bad" not in a.list_topics(timeout=10).topics


def test_authorized_operations_without_an_authorizer_are_all_supported_ones(broker):
    """Metadata v8+ and DescribeGroups v3+ asked for authorized operations: with no authorizer
    Kafka answers every operation the resource type supports (they answered none)."""
    from confluent_kafka import Consumer, TopicCollection
    from confluent_kafka.admin import AclOperation as Op
    a = admin(broker)
    a.create_topics([NewTopic("ops", 1, 1)])["ops"].result(10)
    topic = a.describe_topics(TopicCollection(["ops"]), include_authorized_operations=True)["ops"].result(10)
    assert set(topic.authorized_operations) == {Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE,
                                                Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
    cluster = a.describe_cluster(include_authorized_operations=True).result(10)
    assert set(cluster.authorized_operations) == {Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS,
                                                  Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER,
                                                  Op.DESCRIBE}
    assert a.describe_cluster().result(10).authorized_operations is None     # not asked
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ops-g"})
    try:
        c.subscribe(["ops"])
        c.poll(2)
        group = a.describe_consumer_groups(["ops-g"], include_authorized_operations=True)["ops-g"].result(10)
    finally:
        c.close()
    assert set(group.authorized_operations) == {Op.READ, Op.DESCRIBE, Op.DELETE}


def test_auto_create_on_produce(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    p.produce("auto-created", value=b"x")
    assert p.flush(20) == 0
    assert broker.topics.get("auto-created").partitions == 1
    assert [m.value() for m in consume(broker, "auto-created", [0], 1)] == [b"x"]


def test_delete_records_moves_the_low_watermark(broker):
    create(broker, "dr")
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce("dr", value=b"%d" % i)
    p.flush(10)
    a = admin(broker)
    res = a.delete_records([TopicPartition("dr", 0, 6)])
    list(res.values())[0].result(10)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    assert c.get_watermark_offsets(TopicPartition("dr", 0), timeout=10) == (6, 10)
    c.close()
