"""``fastkafka load``: topics -> a Parquet (or other Spark file format) directory, incrementally.

Each run loads what arrived since the previous run, exactly once: it is a Spark structured
streaming query with ``Trigger.AvailableNow`` over the ``fastkafka`` source, writing with Spark's
file sink. The offsets read live in the checkpoint (by default ``OUTPUT/_checkpoint``; Spark's
readers skip ``_`` directories) and the files each micro-batch committed in
``OUTPUT/_spark_metadata``, so a task that fails is redone on the same offset range and its
partial files are never listed: no duplicates, no gaps. This is the seeds' batch-load design —
one task per topic-partition range, offsets stored with the output.

Prints one progress line per micro-batch and a summary; exit status 0 on success, 1 on error.

Example::

    $ fastkafka load --bootstrap-server 127.0.0.1:9092 --topic orders --output warehouse/orders \\
          --partition-by-date --max-offsets-per-trigger 1000000
    batch 0: 1000000 rows, 412000 rows/s, orders 0->1000000
    ...
    loaded 2500000 rows in 3 batches (6.1 s) into warehouse/orders; offsets now {"orders": {"0": 2500000}}

The same load runs on a cluster with ``--master spark://host:7077 --conf spark.executor.memory=2g``,
or through a Spark Connect server with ``--remote sc://host:15002`` (the source is found by name
on the server; nothing is registered from here). The output directory must be one every executor
writes to and the driver lists (shared storage when they are on several hosts).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from fastkafka.config import parse_key_values

__all__ = ["main", "run_load", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastkafka load", description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-server", default="127.0.0.1:9092", help="host:port[,host:port]")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--topic", action="append", help="topic to load (repeatable)")
    src.add_argument("--pattern", help="regular expression of topics to load")
    p.add_argument("--output", required=True, help="output directory")
    p.add_argument("--format", default="parquet", help="Spark file format (parquet, orc, json, csv)")
    p.add_argument("--checkpoint", help="checkpoint directory (default OUTPUT/_checkpoint)")
    p.add_argument("--starting-offsets", default="earliest",
                   help="first run only: earliest, latest or Spark's offsets JSON")
    p.add_argument("--max-offsets-per-trigger", type=int, help="records per micro-batch at most")
    p.add_argument("--partition-by-date", action="store_true",
                   help="partition the output by the record timestamp's date (column 'date')")
    p.add_argument("--include-headers", action="store_true", help="keep the headers column")
    p.add_argument("--cast-strings", action="store_true", help="store key and value as strings")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="any other fastkafka source option (repeatable)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--master", default="local[2]",
                       help="Spark master URL of a new session, as spark-submit's: local[2] (default), "
                            "spark://host:7077 (a standalone cluster), yarn, k8s://...")
    where.add_argument("--remote", metavar="URL",
                       help="run the load through a Spark Connect server (sc://host:15002) instead; "
                            "the server's Python must have fastkafka[spark] installed")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="Spark configuration of the session, as spark-submit's --conf "
                        "(spark.executor.memory=2g; repeatable)")
    return p


def _source_options(args) -> dict:
    opts = {"kafka.bootstrap.servers": args.bootstrap_server,
            "startingOffsets": args.starting_offsets,
            "includeHeaders": str(bool(args.include_headers)).lower()}
    if args.topic:
        opts["subscribe"] = ",".join(args.topic)
    else:
        opts["subscribePattern"] = args.pattern
    if args.max_offsets_per_trigger:
        opts["maxOffsetsPerTrigger"] = str(args.max_offsets_per_trigger)
    opts.update(_key_values(args.option, "--option"))
    return opts


def _key_values(items: list[str], flag: str) -> dict:
    try:
        return parse_key_values(items, flag)
    except ValueError as e:
        raise SystemExit(f"fastkafka load: {e}") from None


def _session(args):
    """The session a load runs in: a Spark Connect client with ``--remote`` (the server finds
    ``format("fastkafka")`` by name; nothing is registered from here), else a new driver on
    ``--master``. Returns ``(spark, stop)``; an already active session is used and not stopped."""
    from pyspark.sql import SparkSession
    conf = _key_values(args.conf, "--conf")
    if args.remote:
        builder = SparkSession.builder.remote(args.remote)
        for key, value in conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate(), True
    import fastkafka.spark as fks
    existing = SparkSession.getActiveSession()
    if existing is not None:
        fks.register(existing)
        return existing, False
    return fks.local_session("fastkafka-load", master=args.master, spark_conf=conf), True


def _offsets(text: str | None) -> dict:
    # Spark reports a first batch's start as "null" (None, or "None" where py4j's None was str()ed),
    # later ones as the offsets JSON.
    return (json.loads(text) if text and text != "None" else None) or {}


def _describe(progress) -> str:
    # progress: a StreamingQueryProgress. Through Spark Connect its JSON carries the row counts only
    # per source, so the properties (which sum the sources when needed) are read, not the keys.
    rate = progress.processedRowsPerSecond or 0.0
    moved = []
    for src in progress.sources:
        start, end = _offsets(src.startOffset), _offsets(src.endOffset)
        for topic, parts in sorted(end.items()):
            for p, off in sorted(parts.items(), key=lambda kv: int(kv[0])):
                before = start.get(topic, {}).get(p)
                if before != off:
                    moved.append(f"{topic}-{p} {before if before is not None else '?'}->{off}")
    return (f"batch {progress.batchId}: {progress.numInputRows} rows, {rate:.0f} rows/s"
            + (", " + ", ".join(moved) if moved else ""))


def run_load(spark, args, out=None, transform=None) -> dict:
    """Run one incremental load with ``spark``; returns ``{"rows", "batches", "seconds",
    "offsets"}`` and prints progress lines to ``out`` (``sys.stdout`` at call time).

    ``transform``, if given, maps the streaming DataFrame (Kafka columns, after
    ``--cast-strings``/``--partition-by-date``) to the one stored -- parse values, drop
    columns; it runs inside each micro-batch's tasks, so a failed task redoes it too.

    Example::

        args = build_parser().parse_args(["--topic", "orders", "--output", "warehouse/orders",
                                          "--cast-strings"])
        run_load(spark, args, transform=lambda df: df.withColumn(
            "order", F.from_json("value", "id long, total double")))
    """
    from pyspark.sql import functions as F
    out = out if out is not None else sys.stdout   # not a default: sys.stdout may be swapped
    checkpoint = args.checkpoint or os.path.join(args.output, "_checkpoint")
    df = spark.readStream.format("fastkafka").options(**_source_options(args)).load()
    if args.cast_strings:
        df = df.withColumn("key", F.col("key").cast("string")) \
               .withColumn("value", F.col("value").cast("string"))
    if args.partition_by_date:
        df = df.withColumn("date", F.to_date("timestamp"))
    if transform is not None:
        df = transform(df)
    writer = df.writeStream.format(args.format).option("path", args.output) \
        .option("checkpointLocation", checkpoint).trigger(availableNow=True)
    if args.partition_by_date:
        writer = writer.partitionBy("date")
    began = time.monotonic()
    query = writer.start()
    seen: set[int] = set()
    rows = batches = 0
    offsets: dict = {}

    def report():
        nonlocal rows, batches, offsets
        for p in query.recentProgress:
            if p.batchId in seen:
                continue
            seen.add(p.batchId)
            if p.numInputRows or any(src.startOffset != src.endOffset for src in p.sources):
                rows += p.numInputRows
                batches += 1
                print(_describe(p), file=out, flush=True)
            for src in p.sources:
                offsets = _offsets(src.endOffset) or offsets

    while not query.awaitTermination(0.5):
        report()
    report()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    seconds = time.monotonic() - began
    print(f"loaded {rows} rows in {batches} batches ({seconds:.1f} s) into {args.output}; "
          f"offsets now {json.dumps(offsets, sort_keys=True)}", file=out, flush=True)
    return {"rows": rows, "batches": batches, "seconds": seconds, "offsets": offsets}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        import pyspark.sql  # noqa: F401 - the spark extra
    except ImportError as e:
        print(f"fastkafka load: needs the spark extra (pip install 'fastkafka[spark]'): {e}",
              file=sys.stderr)
        return 1
    spark, owned = _session(args)
    try:
        run_load(spark, args)
    except Exception as e:  # noqa: BLE001 - one line for the operator, status 1
        print(f"fastkafka load: {e}", file=sys.stderr)
        return 1
    finally:
        if owned:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
