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
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

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
    p.add_argument("--master", default="local[2]", help="Spark master for a new session")
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
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"fastkafka load: --option needs KEY=VALUE, got {item!r}")
        opts[key.strip()] = value.strip()
    return opts


def _offsets(text: str | None) -> dict:
    # Spark reports a first batch's start as "null" (or None), later ones as the offsets JSON.
    return (json.loads(text) if text else None) or {}


def _describe(progress: dict) -> str:
    rows = progress["numInputRows"]
    rate = progress.get("processedRowsPerSecond") or 0.0
    moved = []
    for src in progress.get("sources", []):
        start, end = _offsets(src.get("startOffset")), _offsets(src.get("endOffset"))
        for topic, parts in sorted(end.items()):
            for p, off in sorted(parts.items(), key=lambda kv: int(kv[0])):
                before = start.get(topic, {}).get(p)
                if before != off:
                    moved.append(f"{topic}-{p} {before if before is not None else '?'}->{off}")
    return (f"batch {progress['batchId']}: {rows} rows, {rate:.0f} rows/s"
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
            if p["batchId"] in seen:
                continue
            seen.add(p["batchId"])
            if p["numInputRows"] or any(src.get("startOffset") != src.get("endOffset")
                                        for src in p.get("sources", [])):
                rows += p["numInputRows"]
                batches += 1
                print(_describe(p), file=out, flush=True)
            for src in p.get("sources", []):
                offsets = _offsets(src.get("endOffset")) or offsets

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
        import fastkafka.spark as fks
        from pyspark.sql import SparkSession
    except ImportError as e:
        print(f"fastkafka load: needs the spark extra (pip install 'fastkafka[spark]'): {e}",
              file=sys.stderr)
        return 1
    existing = SparkSession.getActiveSession()
    spark = existing or fks.local_session("fastkafka-load", master=args.master)
    fks.register(spark)
    try:
        run_load(spark, args)
    except Exception as e:  # noqa: BLE001 - one line for the operator, status 1
        print(f"fastkafka load: {e}", file=sys.stderr)
        return 1
    finally:
        if existing is None:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
