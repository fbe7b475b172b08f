"""Streaming reads: availableNow runs resume from Spark's checkpoint, rate limits, new partitions."""
import json

import pytest
from conftest import create_topic, produce

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


def run_available_now(spark, broker, topic, out, chk, **options):
    r = (spark.readStream.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest"))
    for k, v in options.items():
        r = r.option(k, v)
    q = (r.load().selectExpr("CAST(value AS STRING) AS v", "partition", "offset")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(chk))
         .trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None, q.exception()
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


def values(spark, out):
    return sorted(int(r.v) for r in spark.read.parquet(str(out)).collect())


def test_available_now_twice_loads_each_record_once(spark, broker, topic_name, tmp_path):
    create_topic(broker, topic_name, partitions=2)
    out, chk = tmp_path / "out", tmp_path / "chk"
    produce(broker, topic_name, [{"value": b"%d" % i, "partition": i % 2} for i in range(100)])
    run_available_now(spark, broker, topic_name, out, chk)
    assert values(spark, out) == list(range(100))
    produce(broker, topic_name, [{"value": b"%d" % i, "partition": i % 2} for i in range(100, 150)])
    run_available_now(spark, broker, topic_name, out, chk)
    assert values(spark, out) == list(range(150))
    # the checkpoint holds Kafka-style offsets JSON with string partition keys
    offsets_dir = chk / "offsets"
    last = max(offsets_dir.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    assert json.loads(last.read_text().splitlines()[-1]) == {topic_name: {"0": 75, "1": 75}}
    # a third run with nothing new adds nothing
    assert run_available_now(spark, broker, topic_name, out, chk) == []
    assert values(spark, out) == list(range(150))


def test_max_offsets_per_trigger_and_new_partitions(spark, broker, topic_name, tmp_path):
    from confluent_kafka.admin import AdminClient, NewPartitions
    create_topic(broker, topic_name, partitions=1)
    out, chk = tmp_path / "out", tmp_path / "chk"
    produce(broker, topic_name, [{"value": b"%d" % i} for i in range(100)])
    progress = run_available_now(spark, broker, topic_name, out, chk, maxOffsetsPerTrigger="30")
    assert [p["numInputRows"] for p in progress] == [30, 30, 30, 10]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(10)
    produce(broker, topic_name, [{"value": b"%d" % i, "partition": 1 + i % 2} for i in range(100, 140)])
    run_available_now(spark, broker, topic_name, out, chk, maxOffsetsPerTrigger="30")
    assert values(spark, out) == list(range(140))


def test_streaming_rejects_ending_offsets(spark, broker, topic_name):
    with pytest.raises(Exception, match="ending offset not valid in streaming queries"):
        (spark.readStream.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("subscribe", topic_name).option("endingOffsets", "latest").load()
         .writeStream.format("console").start().awaitTermination(30))
