"""Streaming reads: availableNow runs resume from Spark's checkpoint, rate limits, new partitions."""
import json
import time

import pytest
from conftest import create_topic, produce
from support.waits import wait_for

pytestmark = [pytest.mark.clients, pytest.mark.spark, pytest.mark.timeout(240)]


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


def _memory_query(spark, broker, topic, name, **options):
    r = (spark.readStream.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest"))
    for k, v in options.items():
        r = r.option(k, v)
    return (r.load().selectExpr("CAST(value AS STRING) AS v").writeStream.format("memory")
            .queryName(name).trigger(processingTime="200 milliseconds").start())


def _data_batches(q):
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


def test_min_offsets_per_trigger_waits_for_rows_or_max_trigger_delay(spark, broker, topic_name):
    """minOffsetsPerTrigger=3, maxTriggerDelay=8s: 1 new record waits for the delay; 3 more
    run at once; the first trigger of a run goes through (nothing to read then)."""
    create_topic(broker, topic_name, partitions=2)
    name = "minrows_" + topic_name.replace("-", "_")
    delay = 8.0
    began = time.monotonic()
    q = _memory_query(spark, broker, topic_name, name, minOffsetsPerTrigger="3",
                      maxTriggerDelay="8s")
    try:
        wait_for(lambda: q.lastProgress is not None, 60, "the first trigger", interval=0.2)
        produce(broker, topic_name, [{"value": b"0", "partition": 0}])
        time.sleep(3)
        assert _data_batches(q) == [] and q.exception() is None   # 1 < 3 and the delay is not over
        wait_for(lambda: _data_batches(q), 60, "a batch with rows", lambda: str(q.exception()), 0.2)
        first_at = time.monotonic()
        assert first_at - began >= delay     # only the delay let the lone record through
        assert [p["numInputRows"] for p in _data_batches(q)] == [1]
        produce(broker, topic_name, [{"value": b"%d" % i, "partition": i % 2} for i in (1, 2, 3)])
        produced = time.monotonic()
        wait_for(lambda: len(_data_batches(q)) == 2, 60, "a second batch with rows", lambda: str(q.exception()), 0.2)
        assert time.monotonic() - produced < delay - 2   # the minimum, not the delay, ran it
        assert [p["numInputRows"] for p in _data_batches(q)] == [1, 3]
        assert sorted(int(r.v) for r in spark.table(name).collect()) == [0, 1, 2, 3]
    finally:
        q.stop()


def test_min_and_max_offsets_per_trigger_together(spark, broker, topic_name):
    """With both set the minimum holds batches back and the maximum still caps them."""
    create_topic(broker, topic_name, partitions=1)
    name = "minmax_" + topic_name.replace("-", "_")
    q = _memory_query(spark, broker, topic_name, name, minOffsetsPerTrigger="5",
                      maxOffsetsPerTrigger="4", maxTriggerDelay="10m")
    try:
        wait_for(lambda: q.lastProgress is not None, 60, "the first trigger", interval=0.2)
        produce(broker, topic_name, [{"value": b"%d" % i} for i in range(3)])
        time.sleep(2)  # absence: a batch would have run by now
        assert _data_batches(q) == []
        produce(broker, topic_name, [{"value": b"%d" % i} for i in range(3, 12)])
        # 12 new: a batch of 4 (the max); 8 left >= 5: another 4; then 4 < 5 waits (10m delay)
        wait_for(lambda: len(_data_batches(q)) >= 2, 60, "two batches with rows", lambda: str(q.exception()), 0.2)
        time.sleep(2)  # absence: a batch would have run by now
        assert [p["numInputRows"] for p in _data_batches(q)] == [4, 4]
    finally:
        q.stop()


@pytest.mark.parametrize("opt,value,message", [
    ("minOffsetsPerTrigger", "0", "minOffsetsPerTrigger must be positive"),
    ("maxTriggerDelay", "5 minutes", "Failed to parse time string: 5 minutes"),
    ("maxTriggerDelay", "5w", 'Invalid suffix: "w"'),
])
def test_trigger_options_rejected_like_spark(spark, broker, topic_name, opt, value, message):
    with pytest.raises(Exception, match=message):
        (spark.readStream.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("subscribe", topic_name).option(opt, value).load()
         .writeStream.format("console").start().awaitTermination(30))
