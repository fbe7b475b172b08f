"""Batch reads through real Spark (local[2]) from a real broker, data produced by confluent-kafka."""
import datetime as dt
import json

import pytest
from conftest import create_topic, now_ms, produce, reader

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


def rows_of(df, cols=("partition", "offset", "key", "value")):
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


def test_batch_read_equals_what_was_produced(spark, broker, topic_name):
    create_topic(broker, topic_name, partitions=3)
    base = now_ms() - 3_600_000
    sent = [{"key": b"k%d" % i if i % 5 else None, "value": b"value-%d" % i, "partition": i % 3,
             "headers": [("seq", str(i).encode()), ("nil", None)], "timestamp": base + i}
            for i in range(300)]
    produce(broker, topic_name, sent)
    df = reader(spark, broker, subscribe=topic_name, includeHeaders="true")
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>")
    got = df.collect()
    assert len(got) == 300
    by_value = {bytes(r.value): r for r in got}
    for i, s in enumerate(sent):
        r = by_value[s["value"]]
        assert r.topic == topic_name and r.partition == i % 3 and r.offset == i // 3
        assert (bytes(r.key) if r.key is not None else None) == s["key"]
        assert [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers] == \
            [("seq", str(i).encode()), ("nil", None)]
        assert r.timestampType == 0
        assert r.timestamp.replace(tzinfo=None) == dt.datetime.fromtimestamp(
            (base + i) / 1000, dt.timezone.utc).astimezone().replace(tzinfo=None)
    # Without includeHeaders the schema has no headers column, like Spark's Kafka source.
    assert "headers" not in reader(spark, broker, subscribe=topic_name).columns


def test_starting_and_ending_offsets(spark, broker, topic_name):
    create_topic(broker, topic_name, partitions=2)
    produce(broker, topic_name, [{"value": b"%d" % i, "partition": i % 2} for i in range(200)])
    start = json.dumps({topic_name: {"0": 10, "1": -2}})
    end = json.dumps({topic_name: {"0": 50, "1": -1}})
    got = rows_of(reader(spark, broker, subscribe=topic_name, startingOffsets=start,
                         endingOffsets=end), ("partition", "offset"))
    assert got == [(0, o) for o in range(10, 50)] + [(1, o) for o in range(100)]
    # assign reads just the listed partitions
    got = rows_of(reader(spark, broker, assign=json.dumps({topic_name: [1]})), ("partition",))
    assert got == [(1,)] * 100


def test_starting_and_ending_timestamps(spark, broker, topic_name):
    create_topic(broker, topic_name, partitions=2)
    base = now_ms() - 1_000_000
    produce(broker, topic_name, [{"value": b"%d" % i, "partition": i % 2, "timestamp": base + i * 10}
                                 for i in range(100)])
    df = reader(spark, broker, subscribe=topic_name, startingTimestamp=str(base + 200),
                endingTimestamp=str(base + 600))
    got = sorted(int(r.value) for r in df.collect())
    assert got == list(range(20, 60))
    by_ts = json.dumps({topic_name: {"0": base + 500, "1": base + 0}})
    df = reader(spark, broker, subscribe=topic_name, startingOffsetsByTimestamp=by_ts)
    got = sorted(int(r.value) for r in df.collect())
    assert got == [i for i in range(100) if i % 2 == 1 or i >= 50]
    # No record at/after the timestamp: an error by default, the end with strategy "latest".
    late = str(base + 10_000_000)
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        reader(spark, broker, subscribe=topic_name, startingTimestamp=late).collect()
    assert reader(spark, broker, subscribe=topic_name, startingTimestamp=late,
                  startingOffsetsByTimestampStrategy="latest").count() == 0


def test_min_partitions_splits_ranges(spark, broker, topic_name):
    create_topic(broker, topic_name, partitions=1)
    produce(broker, topic_name, [{"value": b"%d" % i} for i in range(1000)])
    df = reader(spark, broker, subscribe=topic_name, minPartitions="5")
    assert df.rdd.getNumPartitions() >= 5
    offsets = sorted(r.offset for r in df.select("offset").collect())
    assert offsets == list(range(1000))
    assert reader(spark, broker, subscribe=topic_name).rdd.getNumPartitions() == 1


def test_rejected_options_surface_as_spark_errors(spark, broker, topic_name):
    with pytest.raises(Exception, match="starting offset can't be latest for batch queries on Kafka"):
        reader(spark, broker, subscribe=topic_name, startingOffsets="latest").collect()
    with pytest.raises(Exception, match="One of the following options must be specified"):
        reader(spark, broker).collect()


def test_missing_topic_reads_empty(spark, broker):
    assert reader(spark, broker, subscribe="no-such-topic-here").count() == 0
