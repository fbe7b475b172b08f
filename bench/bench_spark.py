"""PySpark helpers for bench/test_bench_spark.py, which holds the figures: a full scan through the
``fastkafka`` source vs the same query on a Parquet copy of the topic and vs the Arrow-ceiling
sources of ``spark_ceiling.py`` (the most Spark's Python data source path carries), the sink
(``df.write.format("fastkafka")``) vs a Parquet write of the same cached DataFrame, and a 1% time
window with filter pushdown vs without it and vs a full scan.

A broker subprocess (``python -m fastkafka serve``) on a free loopback port; records produced with
confluent-kafka. Values are distinct (``values="constant"`` repeats one: Parquet then stores a
single dictionary entry and its scan decodes almost nothing, a case no real topic presents).

    .venv/bin/python -m pytest bench/test_bench_spark.py -p no:cacheprovider
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
# Spark's Python workers import the ceiling source below from this module.
os.environ["PYTHONPATH"] = os.pathsep.join([HERE, ROOT, os.environ.get("PYTHONPATH", "")])

from spark_ceiling import CeilingSource  # noqa: E402


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


def record_values(n: int, value_bytes: int, kind: str):
    """``n`` values of ``value_bytes`` bytes. ``distinct`` (the default): an 8-byte record number
    then bytes from a seeded random pool, so no two rows are equal and nothing compresses, like
    real event payloads; ``constant``: one value repeated, which Parquet stores as a single
    dictionary entry (its scan then decodes almost nothing -- the degenerate case)."""
    if kind == "constant":
        value = (b"0123456789abcdef" * (value_bytes // 16 + 1))[:value_bytes]
        for _ in range(n):
            yield value
        return
    import random
    tail = max(0, value_bytes - 8)
    pool = random.Random(1).randbytes(1 << 20)
    span = len(pool) - tail
    for i in range(n):
        j = (i * 7919) % span
        yield (i.to_bytes(8, "big") + pool[j:j + tail])[:value_bytes]


def produce(bootstrap: str, topic: str, partitions: int, n: int, value_bytes: int,
            values: str = "distinct", base_ts: int | None = None) -> float:
    """Produce ``n`` records; with ``base_ts`` record i gets CreateTime ``base_ts + i`` ms."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000, "acks": 1})
    began = time.perf_counter()
    for i, value in enumerate(record_values(n, value_bytes, values)):
        while True:
            try:
                if base_ts is None:
                    p.produce(topic, value, partition=i % partitions)
                else:
                    p.produce(topic, value, partition=i % partitions, timestamp=base_ts + i)
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


def scan_queries(spark, bootstrap: str, topic: str, records: int, partitions: int, value_bytes: int, parquet: str):
    """name -> DataFrame factory for ``sum(length(value))``: the fastkafka source, the Parquet copy at
    ``parquet``, the Arrow ceiling with Spark's 7 Kafka columns and with ``value`` alone."""
    spark.dataSource.register(CeilingSource)

    def ceiling(columns):
        return lambda: spark.read.format("arrow_ceiling").options(
            records=records, partitions=partitions, value_bytes=value_bytes, columns=columns).load()
    return {"fastkafka": lambda: spark.read.format("fastkafka").options(
                **{"kafka.bootstrap.servers": bootstrap, "subscribe": topic}).load(),
            "Parquet copy": lambda: spark.read.parquet(parquet),
            "Arrow ceiling (7 columns)": ceiling("all"), "Arrow ceiling (value only)": ceiling("value")}


def sum_of_lengths(df_factory) -> int:
    return df_factory().selectExpr("sum(length(value)) AS bytes").collect()[0].bytes


def window_queries(spark, bootstrap: str, topic: str, base_ts: int, n: int):
    """name -> (query returning count(*), expected count): the last 1% of a topic whose record i
    has CreateTime base_ts + i ms, with and without pushFilters, and a full scan."""
    import datetime as dt
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    since = dt.datetime.fromtimestamp((base_ts + n - n // 100) / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")

    def query(pushdown: bool, where):
        df = (spark.read.format("fastkafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("pushFilters", str(pushdown).lower()).load())
        return lambda: (df.where(where) if where else df).selectExpr("count(*) AS n").collect()[0].n
    window = f"timestamp >= '{since}'"
    return {"window, pushed": (query(True, window), n // 100), "window, not pushed": (query(False, window), n // 100),
            "full scan": (query(False, None), n)}
