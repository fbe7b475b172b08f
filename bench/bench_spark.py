"""PySpark full scan through the ``fastkafka`` source vs the same query on a Parquet copy.

Starts a broker subprocess (``python -m fastkafka serve``) on a free loopback port, produces
``--records`` records of ``--value-bytes`` bytes with confluent-kafka, copies the topic into
Parquet with Spark (``fastkafka`` read -> Parquet write, timed as the load rate), then runs
``SELECT sum(length(value))`` alternately over the topic, over the Parquet copy and over the
Arrow-ceiling sources of ``spark_ceiling.py``, in the same local[2] SparkSession, after one
untimed warm-up round of each (the JVM's JIT otherwise charges its compilation to whichever query
runs first), and prints a Markdown table: rows/s of each and the ratios.

Values are distinct by default (``--values constant`` repeats one value: Parquet then stores a
single dictionary entry and its scan decodes almost nothing, a case no real topic presents).

No timed assertions: the figures go to bench/RESULTS.md by hand (section "PySpark source").

With ``--writer`` it measures the sink instead: a cached DataFrame of ``--records`` rows
(string key, ``--value-bytes`` binary value) written with ``df.write.format("fastkafka")`` into a
``--partitions`` topic, alternating with the same DataFrame written to Parquet (the limit: Spark's
own columnar file sink, same session, same rows), best and median of ``--rounds``.

Example::

    .venv/bin/python bench/bench_spark.py --records 10000000 --rounds 3
    .venv/bin/python bench/bench_spark.py --writer --records 2000000 --rounds 3
    .venv/bin/python bench/bench_spark.py --pushdown --records 2000000 --rounds 3
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


def bench_pushdown(args, bootstrap: str) -> None:
    """A time-window query reading the last 1% of the topic, with filter pushdown (option
    pushFilters) against the same query without it and against a full scan, alternating."""
    import datetime as dt

    import fastkafka.spark as fks
    topic, n = "bench-window", args.records
    base = int(time.time() * 1000) - n - 60_000
    produce(bootstrap, topic, args.partitions, n, args.value_bytes, args.values, base_ts=base)
    spark = fks.local_session("bench-spark", sql_shuffle_partitions=2, driver_memory="4g")
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    since = dt.datetime.fromtimestamp((base + n - n // 100) / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")
    window = f"timestamp >= '{since}'"

    def query(pushdown: bool, where: str | None):
        df = (spark.read.format("fastkafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("pushFilters", str(pushdown).lower()).load())
        return lambda: (df.where(where) if where else df).selectExpr("count(*) AS n").collect()[0].n

    future = dt.datetime.fromtimestamp(time.time() + 86_400).strftime("%Y-%m-%d %H:%M:%S")
    queries = {"window, pushed": query(True, window), "window, not pushed": query(False, window),
               "full scan": query(False, None),
               # what any query costs before it reads a record: planning in Spark's Python workers
               "empty window, pushed (fixed cost)": query(True, f"timestamp >= '{future}'")}
    times: dict[str, list] = {name: [] for name in queries}
    for r in range(-1, args.rounds):
        for name, q in queries.items():
            t, got = timed(q)
            assert got == {"full scan": n}.get(name, 0 if name.startswith("empty") else n // 100), (name, got)
            if r >= 0:
                times[name].append(t)
    spark.stop()
    full = statistics.median(times["full scan"])
    print()
    print("| query (median of rounds) | seconds | / full scan |")
    print("|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} ({n:,} records, window = last 1%) | {med:.2f} | {med / full:.3f}x |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--min-partitions", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--values", choices=("distinct", "constant"), default="distinct")
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir)")
    ap.add_argument("--writer", action="store_true",
                    help="measure df.write.format('fastkafka') against a Parquet write instead")
    ap.add_argument("--pushdown", action="store_true",
                    help="measure a 1%% time-window query with and without filter pushdown")
    args = ap.parse_args(argv)

    work = args.dir or tempfile.mkdtemp(prefix="bench-spark-")
    proc, bootstrap = start_broker(os.path.join(work, "broker"))
    try:
        if args.writer:
            bench_writer(args, bootstrap, work)
            return 0
        if args.pushdown:
            bench_pushdown(args, bootstrap)
            return 0
        topic = "bench"
        t_produce = produce(bootstrap, topic, args.partitions, args.records, args.value_bytes,
                            args.values)
        print(f"produced {args.records} x {args.value_bytes} B ({args.values}) in {t_produce:.1f} s "
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
        def ceiling(columns):
            return spark.read.format("arrow_ceiling").options(
                records=args.records, partitions=args.partitions, value_bytes=args.value_bytes,
                columns=columns).load()

        queries = {"fastkafka": kafka_df, "parquet": lambda: spark.read.parquet(pq),
                   "ceiling": lambda: ceiling("all"), "ceiling1": lambda: ceiling("value")}
        carried = args.records // args.partitions * args.partitions * args.value_bytes
        times: dict[str, list] = {name: [] for name in queries}
        for r in range(-1, args.rounds):   # alternate, so all see the same machine state
            for name, df in queries.items():
                t, out = timed(lambda: df().selectExpr(query).collect()[0].bytes)
                assert out == (carried if name.startswith("ceiling") else expect), (name, out)
                if r >= 0:                 # round -1 warms the JIT up
                    times[name].append(t)
            if r >= 0:
                print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()),
                      flush=True)
        spark.stop()
        n = args.records
        print()
        print("| query | fastkafka rows/s | Parquet rows/s | Arrow ceiling rows/s (7 / 1 columns) | "
              "fastkafka / Parquet | fastkafka / ceiling |")
        print("|---|---|---|---|---|---|")
        for label, pick in ((f"best of {args.rounds}", min), ("median", statistics.median)):
            f, p, c, c1 = (pick(times[k]) for k in ("fastkafka", "parquet", "ceiling", "ceiling1"))
            print(f"| sum(length(value)), {label} | {n / f:,.0f} | {n / p:,.0f} | "
                  f"{n / c:,.0f} / {n / c1:,.0f} | {p / f:.2f}x | {c / f:.2f}x |")
        print(f"| copy topic -> Parquet (one pass, all columns) | {n / t_load:,.0f} | | | | |")
    finally:
        proc.terminate()
        proc.wait(30)
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
