"""PySpark full scan through the ``fastkafka`` source vs the same query on a Parquet copy.

Starts a broker subprocess (``python -m fastkafka serve``) on a free loopback port, produces
``--records`` records of ``--value-bytes`` bytes with confluent-kafka, copies the topic into
Parquet with Spark (``fastkafka`` read -> Parquet write, timed as the load rate), then runs
``SELECT sum(length(value))`` alternately over the topic and over the Parquet copy, in the same
local[2] SparkSession, and prints a Markdown table: rows/s of each and the ratio.

No timed assertions: the figures go to bench/RESULTS.md by hand (section "PySpark source").

With ``--writer`` it measures the sink instead: a cached DataFrame of ``--records`` rows
(string key, ``--value-bytes`` binary value) written with ``df.write.format("fastkafka")`` into a
``--partitions`` topic, alternating with the same DataFrame written to Parquet (the limit: Spark's
own columnar file sink, same session, same rows), best and median of ``--rounds``.

Example::

    .venv/bin/python bench/bench_spark.py --records 10000000 --rounds 3
    .venv/bin/python bench/bench_spark.py --writer --records 2000000 --rounds 3
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
# Spark's Python workers import the ceiling source below from this module.
os.environ["PYTHONPATH"] = os.pathsep.join([HERE, ROOT, os.environ.get("PYTHONPATH", "")])

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402


class _CeilingReader(DataSourceReader):
    """Yields one pre-built Arrow batch in the Kafka schema over and over: no broker, no
    decoding — the most Spark's Python data source path can carry (the limit for our source)."""

    def __init__(self, records: int, partitions: int, value_bytes: int, rows: int):
        self.records, self.parts, self.value_bytes, self.rows = records, partitions, value_bytes, rows

    def partitions(self):
        return [InputPartition(i) for i in range(self.parts)]

    def read(self, partition):
        import numpy as np
        import pyarrow as pa
        from fastkafka.spark.broker import _string_column, arrow_schema
        k, vb = self.rows, self.value_bytes
        values = pa.Array.from_buffers(pa.binary(), k, [
            None, pa.py_buffer(np.arange(k + 1, dtype=np.int32) * vb), pa.py_buffer(b"x" * vb * k)])
        rb = pa.RecordBatch.from_arrays([
            pa.nulls(k, pa.binary()), values, _string_column("bench", k),
            pa.array(np.zeros(k, np.int32)), pa.array(np.arange(k, dtype=np.int64)),
            pa.array(np.zeros(k, np.int64)).cast(pa.timestamp("us", tz="UTC")),
            pa.array(np.zeros(k, np.int32))], schema=arrow_schema(False))
        mine = self.records // self.parts
        for _ in range(mine // k):
            yield rb
        if mine % k:
            yield rb.slice(0, mine % k)


class CeilingSource(DataSource):
    @classmethod
    def name(cls):
        return "arrow_ceiling"

    def schema(self):
        from fastkafka.spark.source import spark_schema
        return spark_schema(False)

    def reader(self, schema):
        o = self.options
        return _CeilingReader(int(o["records"]), int(o["partitions"]), int(o["value_bytes"]),
                              int(o.get("rows", 150_000)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(log_dir: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "fastkafka", "serve", "--override",
                             f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override",
                             f"log.dirs={log_dir}"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read().decode())
            time.sleep(0.1)
    raise TimeoutError("broker did not start")


def produce(bootstrap: str, topic: str, partitions: int, n: int, value_bytes: int) -> float:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000, "acks": 1})
    value = (b"0123456789abcdef" * (value_bytes // 16 + 1))[:value_bytes]
    began = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
        if i % 10_000 == 0:
            p.poll(0)
    assert p.flush(300) == 0
    return time.perf_counter() - began


def timed(fn) -> tuple[float, object]:
    began = time.perf_counter()
    out = fn()
    return time.perf_counter() - began, out


def bench_writer(args, bootstrap: str, work: str) -> None:
    """``--writer``: fastkafka sink vs Parquet sink over one cached DataFrame, alternating."""
    from confluent_kafka.admin import AdminClient, NewTopic
    import fastkafka.spark as fks
    topic = "bench-writer"
    admin = AdminClient({"bootstrap.servers": bootstrap})   # must outlive the future
    admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
    spark = fks.local_session("bench-spark-writer", sql_shuffle_partitions=2, driver_memory="4g")
    df = spark.range(args.records, numPartitions=2).selectExpr(
        "CAST(id AS STRING) AS key",
        f"CAST(lpad(CAST(id AS STRING), {args.value_bytes}, 'x') AS BINARY) AS value").cache()
    assert df.count() == args.records
    pq = os.path.join(work, "writer.parquet")
    fk_times, pq_times = [], []
    for r in range(args.rounds):   # alternate, so both see the same machine state
        t, _ = timed(lambda: df.write.format("fastkafka").option("kafka.bootstrap.servers", bootstrap)
                     .option("topic", topic).mode("append").save())
        fk_times.append(t)
        t, _ = timed(lambda: df.write.mode("overwrite").parquet(pq))
        pq_times.append(t)
        print(f"round {r}: fastkafka write {fk_times[-1]:.2f} s, parquet write {pq_times[-1]:.2f} s",
              flush=True)
    spark.stop()
    n = args.records
    print()
    print("| write | fastkafka rows/s | Parquet rows/s | fastkafka / Parquet |")
    print("|---|---|---|---|")
    for label, f, p in ((f"best of {args.rounds}", min(fk_times), min(pq_times)),
                        ("median", statistics.median(fk_times), statistics.median(pq_times))):
        print(f"| {n:,} x {args.value_bytes} B, {label} | {n / f:,.0f} | {n / p:,.0f} | {p / f:.2f}x |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--min-partitions", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir)")
    ap.add_argument("--writer", action="store_true",
                    help="measure df.write.format('fastkafka') against a Parquet write instead")
    args = ap.parse_args(argv)

    work = args.dir or tempfile.mkdtemp(prefix="bench-spark-")
    proc, bootstrap = start_broker(os.path.join(work, "broker"))
    try:
        if args.writer:
            bench_writer(args, bootstrap, work)
            return 0
        topic = "bench"
        t_produce = produce(bootstrap, topic, args.partitions, args.records, args.value_bytes)
        print(f"produced {args.records} x {args.value_bytes} B in {t_produce:.1f} s "
              f"({args.records / t_produce:,.0f} records/s, confluent-kafka)", flush=True)

        import fastkafka.spark as fks
        spark = fks.local_session("bench-spark", sql_shuffle_partitions=2,
                                  driver_memory="4g")
        opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
        if args.min_partitions:
            opts["minPartitions"] = str(args.min_partitions)

        def kafka_df():
            return spark.read.format("fastkafka").options(**opts).load()

        pq = os.path.join(work, "copy.parquet")
        shutil.rmtree(pq, ignore_errors=True)
        t_load, _ = timed(lambda: kafka_df().write.parquet(pq))
        print(f"parquet copy (fastkafka -> parquet) in {t_load:.1f} s "
              f"({args.records / t_load:,.0f} rows/s)", flush=True)

        query = "sum(length(value)) AS bytes"
        expect = args.records * args.value_bytes
        spark.dataSource.register(CeilingSource)
        ceiling = spark.read.format("arrow_ceiling").options(
            records=args.records, partitions=args.partitions, value_bytes=args.value_bytes)
        fk_times, pq_times, ce_times = [], [], []
        for r in range(args.rounds):   # alternate, so all see the same machine state
            t, out = timed(lambda: kafka_df().selectExpr(query).collect()[0].bytes)
            assert out == expect, (out, expect)
            fk_times.append(t)
            t, out = timed(lambda: spark.read.parquet(pq).selectExpr(query).collect()[0].bytes)
            assert out == expect, (out, expect)
            pq_times.append(t)
            t, out = timed(lambda: ceiling.load().selectExpr(query).collect()[0].bytes)
            assert out == args.records // args.partitions * args.partitions * args.value_bytes
            ce_times.append(t)
            print(f"round {r}: fastkafka {fk_times[-1]:.2f} s, parquet {pq_times[-1]:.2f} s, "
                  f"arrow ceiling {ce_times[-1]:.2f} s", flush=True)
        spark.stop()
        n = args.records
        fk_best, pq_best = min(fk_times), min(pq_times)
        fk_med, pq_med = statistics.median(fk_times), statistics.median(pq_times)
        print()
        ce_best, ce_med = min(ce_times), statistics.median(ce_times)
        print("| query | fastkafka rows/s | Parquet rows/s | Arrow ceiling rows/s | "
              "fastkafka / Parquet | fastkafka / ceiling |")
        print("|---|---|---|---|---|---|")
        for label, f, p, c in ((f"best of {args.rounds}", fk_best, pq_best, ce_best),
                               ("median", fk_med, pq_med, ce_med)):
            print(f"| sum(length(value)), {label} | {n / f:,.0f} | {n / p:,.0f} | {n / c:,.0f} | "
                  f"{p / f:.2f}x | {c / f:.2f}x |")
        print(f"| copy topic -> Parquet (one pass, all columns) | {n / t_load:,.0f} | | | | |")
    finally:
        proc.terminate()
        proc.wait(30)
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
