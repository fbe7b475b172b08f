"""PySpark (bench_spark.py has the helpers), one local[2] session: ``sum(length(value))`` over the
``fastkafka`` source against the same query over a Parquet copy of the topic (the limit: Spark's
own columnar file scan) and the Arrow ceilings; the ``fastkafka`` sink against a Parquet write of
the same cached DataFrame; a 1% time window with filter pushdown against the same query without it.
A warm-up round of every query comes first: the JVM's JIT would charge its compilation to whichever
query ran first."""
import os
import shutil
import tempfile
import time

import pytest
from bench_spark import produce, scan_queries, start_broker, sum_of_lengths, window_queries
from benchkit import compare, pick

RECORDS = pick(2_000_000, 2_000)
VALUE_BYTES = 100
PARTITIONS = 2


@pytest.fixture(scope="module")
def spark_env():
    import fastkafka.spark as fks
    work = tempfile.mkdtemp(prefix="bench-spark-")
    proc, bootstrap = start_broker(os.path.join(work, "broker"))
    spark = None
    try:
        spark = fks.local_session("bench-spark", sql_shuffle_partitions=2, driver_memory="4g")
        yield spark, bootstrap, work
    finally:
        if spark is not None:
            spark.stop()
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def test_scan(benchmark, spark_env):
    spark, bootstrap, work = spark_env
    produce(bootstrap, "bench", PARTITIONS, RECORDS, VALUE_BYTES)
    pq = os.path.join(work, "copy.parquet")
    qs = scan_queries(spark, bootstrap, "bench", RECORDS, PARTITIONS, VALUE_BYTES, pq)
    qs["fastkafka"]().write.parquet(pq)
    expect = RECORDS * VALUE_BYTES
    carried = RECORDS // PARTITIONS * PARTITIONS * VALUE_BYTES

    def checked(name):
        def run():
            assert sum_of_lengths(qs[name]) == (carried if name.startswith("Arrow") else expect), name
        return run
    benchmark.group = "spark"
    compare(benchmark, checked("fastkafka"), {name: checked(name) for name in qs if name != "fastkafka"},
            what=f"sum(length(value)) over {RECORDS:,} x {VALUE_BYTES} B records, fastkafka source",
            amount=RECORDS, unit="k rows/s", scale=1e3, n_rounds=3)


def test_write(benchmark, spark_env):
    spark, bootstrap, work = spark_env
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})   # must outlive the future
    admin.create_topics([NewTopic("bench-writer", PARTITIONS, 1)])["bench-writer"].result(30)
    n = pick(RECORDS // 2, RECORDS)
    df = spark.range(n, numPartitions=2).selectExpr(
        "CAST(id AS STRING) AS key", f"CAST(lpad(CAST(id AS STRING), {VALUE_BYTES}, 'x') AS BINARY) AS value").cache()
    assert df.count() == n
    pq = os.path.join(work, "writer.parquet")
    benchmark.group = "spark"
    compare(benchmark, lambda: df.write.format("fastkafka").option("kafka.bootstrap.servers", bootstrap)
            .option("topic", "bench-writer").mode("append").save(),
            {"Parquet write": lambda: df.write.mode("overwrite").parquet(pq)},
            what=f"write {n:,} x {VALUE_BYTES} B rows, fastkafka sink", amount=n, unit="k rows/s", scale=1e3,
            n_rounds=3)


def test_pushdown(benchmark, spark_env):
    spark, bootstrap, _ = spark_env
    n = pick(RECORDS // 2, RECORDS)
    base = int(time.time() * 1000) - n - 60_000
    produce(bootstrap, "bench-window", PARTITIONS, n, VALUE_BYTES, base_ts=base)
    qs = window_queries(spark, bootstrap, "bench-window", base, n)

    def checked(name):
        query, expect = qs[name]

        def run():
            assert query() == expect, name
        return run
    benchmark.group = "spark"
    compare(benchmark, checked("window, pushed"),
            {"window, not pushed": checked("window, not pushed"), "full scan": checked("full scan")},
            what=f"count(*) of the last 1% of {n:,} records by timestamp, filters pushed", unit="s",
            per_time=False, n_rounds=3)
