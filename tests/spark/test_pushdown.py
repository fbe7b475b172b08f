"""Filter pushdown (option ``pushFilters`` with Spark's spark.sql.python.filterPushdown.enabled):
results equal the unpushed query on the same data, and the planned ranges are the narrowed ones."""
import datetime as dt

import pytest
from conftest import create_topic, now_ms, produce, reader

from fastkafka.spark.batch import PushdownBatchReader, RangePartition
from fastkafka.spark.options import parse_source_options

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

QUERIES = [
    "partition = 1",
    "partition IN (0, 2) AND offset >= 10 AND offset < 20",
    "offset = 7",
    "offset > 95",
    "timestamp >= '{mid}'",
    "timestamp > '{mid}' AND partition = 2",
    "timestamp < '{mid}' AND offset <= 30",
    "key = X'6B33'",                                          # not pushed: Spark filters it
]


@pytest.fixture(scope="module")
def timeline(broker):
    """3 partitions x 100 records, one second apart in CreateTime, 5 out of order per partition."""
    name = "pushdown-topic"
    create_topic(broker, name, partitions=3)
    base = now_ms() - 10_000_000
    rows = []
    for i in range(300):
        ts = base + 1000 * i - (250_000 if i % 60 == 59 else 0)   # a few late records
        rows.append({"key": b"k%d" % (i % 7), "value": b"v%d" % i, "partition": i % 3, "timestamp": ts})
    produce(broker, name, rows)
    mid = dt.datetime.fromtimestamp((base + 150_000) / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")
    return name, mid


def _rows(df):
    return sorted((r.partition, r.offset, bytes(r.value)) for r in df.collect())


@pytest.mark.parametrize("where", QUERIES)
def test_pushed_query_equals_unpushed(spark, broker, timeline, where):
    name, mid = timeline
    where = where.format(mid=mid)
    plain = reader(spark, broker, subscribe=name).where(where)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        pushed = reader(spark, broker, subscribe=name, pushFilters="true").where(where)
        assert _rows(pushed) == _rows(plain)
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    assert _rows(plain), "every query selects something"


def test_without_the_option_reads_work_with_pushdown_off(spark, broker, timeline):
    name, _ = timeline
    assert reader(spark, broker, subscribe=name).where("offset < 3").count() == 9


def test_planned_ranges_are_narrowed(broker, timeline):
    from pyspark.sql.datasource import GreaterThanOrEqual, In, LessThan
    name, mid = timeline
    opts = parse_source_options({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": name,
                                 "pushFilters": "true"}, streaming=False)
    r = PushdownBatchReader(opts)
    rest = r.pushFilters([In(("partition",), (0, 2)), GreaterThanOrEqual(("offset",), 10),
                          LessThan(("offset",), 20)])
    assert rest == []
    assert [(p.partition, p.start, p.end) for p in r.partitions()] == [(0, 10, 20), (2, 10, 20)]
    r = PushdownBatchReader(opts)
    ts = GreaterThanOrEqual(("timestamp",), dt.datetime.strptime(mid, "%Y-%m-%d %H:%M:%S.%f"))
    assert r.pushFilters([ts]) == [ts]                       # kept: later records may be older
    parts = r.partitions()
    assert all(isinstance(p, RangePartition) and p.end == 100 for p in parts)
    assert [p.start for p in parts] == [50, 50, 50]          # record 150 is offset 50 of partition 0
