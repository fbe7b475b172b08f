"""The writer: Spark DataFrames to topics, checked by reading back with confluent-kafka and Spark."""
import time

import pytest
from conftest import create_topic, reader

pytestmark = [pytest.mark.clients, pytest.mark.spark, pytest.mark.timeout(180)]


def consume_all(broker, topic, n, timeout=30):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            out.append(m)
    c.close()
    return out


def test_write_roundtrip_keys_headers_partitions(spark, broker, topic_name):
    create_topic(broker, topic_name, partitions=3)
    df = spark.range(500).selectExpr(
        "CAST(id AS STRING) AS key", "concat('v-', CAST(id AS STRING)) AS value",
        "CAST(id % 3 AS INT) AS partition",
        "array(named_struct('key', 'n', 'value', CAST(CAST(id AS STRING) AS BINARY))) AS headers")
    df.write.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap) \
        .option("topic", topic_name).mode("append").save()
    msgs = consume_all(broker, topic_name, 500)
    assert len(msgs) == 500
    for m in msgs:
        i = int(m.key())
        assert m.value() == b"v-%d" % i and m.partition() == i % 3
        assert m.headers() == [("n", str(i).encode())]
    # and Spark reads back what Spark wrote
    back = reader(spark, broker, subscribe=topic_name, includeHeaders="true") \
        .selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v").collect()
    assert sorted((r.k, r.v) for r in back) == sorted((str(i), f"v-{i}") for i in range(500))


def test_write_topic_column_and_key_partitioning(spark, broker, topic_name):
    other = topic_name + "-b"
    create_topic(broker, topic_name, partitions=4)
    create_topic(broker, other, partitions=4)
    df = spark.range(200).selectExpr(
        f"IF(id % 2 = 0, '{topic_name}', '{other}') AS topic",
        "CAST(id % 10 AS STRING) AS key", "CAST(CAST(id AS STRING) AS BINARY) AS value")
    df.write.format("fastkafka").mode("append").option("kafka.bootstrap.servers", broker.bootstrap).save()
    got = reader(spark, broker, subscribe=f"{topic_name},{other}") \
        .selectExpr("topic", "CAST(key AS STRING) key", "partition").collect()
    assert len(got) == 200
    assert sum(r.topic == topic_name for r in got) == 100
    from fastkafka.client.partitioner import murmur2_partition
    for r in got:   # the same partition Java's producer picks for the key
        assert r.partition == murmur2_partition(r.key.encode(), 4)


def test_write_errors_surface_as_spark_errors(spark, broker, topic_name):
    df = spark.range(3).selectExpr("CAST(id AS STRING) AS value")
    with pytest.raises(Exception, match="topic option required when no 'topic' attribute is present"):
        df.write.format("fastkafka").mode("append").option("kafka.bootstrap.servers", broker.bootstrap).save()
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        spark.range(3).write.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap) \
            .option("topic", topic_name).mode("append").save()
    create_topic(broker, topic_name, partitions=1)
    with pytest.raises(Exception, match="UnknownTopicOrPartition"):   # no partition 7: the task fails
        df.selectExpr("value", "7 AS partition").write.format("fastkafka") \
            .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic_name) \
            .mode("append").save()


def test_write_mixed_routing_compressed_and_null_key_stickiness(spark, broker, topic_name):
    """Per row: the partition column when set, else murmur2 of the key, else one sticky
    partition for the task's null-key rows (they fit one chunk here); zstd batches."""
    from fastkafka.client.partitioner import murmur2_partition
    create_topic(broker, topic_name, partitions=3)
    df = spark.range(0, 300, 1, 1).selectExpr(
        "IF(id % 3 = 0, NULL, CAST(CAST(id AS STRING) AS BINARY)) AS key",
        "CAST(id AS STRING) AS value",
        "IF(id % 2 = 0, CAST(id % 3 AS INT), NULL) AS partition")
    df.write.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap) \
        .option("kafka.compression.type", "zstd").option("topic", topic_name) \
        .mode("append").save()
    got = reader(spark, broker, subscribe=topic_name) \
        .selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v", "partition").collect()
    assert sorted(int(r.v) for r in got) == list(range(300))
    sticky = set()
    for r in got:
        i = int(r.v)
        if i % 2 == 0:
            assert r.partition == i % 3
        elif r.k is not None:
            assert r.k == str(i) and r.partition == murmur2_partition(r.k.encode(), 3)
        else:
            sticky.add(r.partition)
    assert len(sticky) == 1


def test_columnar_routing_without_spark():
    """_TaskProducer on an Arrow batch with a stub cluster and sender: each row lands where the
    per-row rules say, in row order within its partition; a negative partition is sent as given."""
    import pyarrow as pa
    from fastkafka._core.records_build import finish_batch
    from fastkafka.client.partitioner import murmur2_partition
    from fastkafka.records import iter_batches
    from fastkafka.spark.options import parse_sink_options
    from fastkafka.spark.writer import _TaskProducer

    sizes = {"a": 3, "b": 5}
    sent = []

    class Cluster:
        def partitions_for(self, topic):
            return list(range(sizes[topic]))

        def close(self):
            pass

    class Sender:
        def send(self, chunks):
            sent.extend(chunks)
            return [(tp, enc.count, None, None) for tp, enc in chunks]

    prod = _TaskProducer(parse_sink_options({"kafka.bootstrap.servers": "127.0.0.1:9"}))
    prod.cluster.close()
    prod.cluster, prod.sender = Cluster(), Sender()
    n = 400
    topics = ["a" if i % 3 else "b" for i in range(n)]
    keys = [None if i % 4 == 0 else f"k{i}" for i in range(n)]
    parts = [(-1 if i == 35 else i % 2) if i % 5 == 0 else None for i in range(n)]
    rb = pa.RecordBatch.from_arrays(
        [pa.array(topics), pa.array(keys), pa.array([b"%d" % i for i in range(n)]),
         pa.array(parts, pa.int32())], ["topic", "key", "value", "partition"])
    prod.add(rb.slice(0, 150))
    prod.add(rb.slice(150))
    prod.flush()
    landed, sticky = {}, {}
    for (topic, p), enc in sent:
        buf = finish_batch(enc.buf, record_count=enc.count, last_offset_delta=enc.last_offset_delta,
                           base_timestamp=enc.base_timestamp, max_timestamp=enc.max_timestamp)
        values = [int(r.value) for b in iter_batches(bytes(buf)) for r in b.records()]
        assert values == sorted(values)                     # row order kept per partition
        for i in values:
            landed[i] = (topic, p)
    assert sorted(landed) == list(range(n))
    for i, (topic, p) in landed.items():
        assert topic == topics[i]
        if parts[i] is not None:
            assert p == parts[i]
        elif keys[i] is not None:
            assert p == murmur2_partition(keys[i].encode(), sizes[topic])
        else:
            sticky.setdefault(topic, set()).add(p)
    assert landed[0] == ("b", 0) and landed[35] == ("a", -1) and all(len(ps) == 1 for ps in sticky.values())
