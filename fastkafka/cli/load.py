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
          --partition-by date,partition --max-offsets-per-trigger 1000000
    batch 0: 1000000 rows, 61.2 MB written, 412000 rows/s, 1500000 offsets behind latest, orders-0 ?->1000000
    ...
    loaded 2500000 rows in 3 batches (6.1 s, 153.0 MB written) into warehouse/orders; offsets now
    {"orders": {"0": 2500000}}

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
    p.add_argument("--format", default="parquet",
                   help="Spark file format: parquet (default), orc, json, csv, or delta where delta-spark "
                        "is installed")
    p.add_argument("--checkpoint", help="checkpoint directory (default OUTPUT/_checkpoint)")
    p.add_argument("--starting-offsets", default="earliest",
                   help="first run only: earliest, latest or Spark's offsets JSON")
    p.add_argument("--max-offsets-per-trigger", type=int, help="records per micro-batch at most")
    p.add_argument("--partition-by", metavar="COL[,COL]", default="",
                   help="partition the output by these columns: any column stored (topic, partition, key "
                        "with --cast-strings, or one a transform adds), or date / hour, derived from "
                        "the record timestamp (the event time)")
    p.add_argument("--partition-by-date", action="store_true", help="the same as --partition-by date")
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


# partition columns derived from the record timestamp (event time), by name
_EVENT_TIME = {"date": lambda F: F.to_date("timestamp"),
               "hour": lambda F: F.date_format("timestamp", "yyyy-MM-dd-HH")}


def partition_columns(args) -> list[str]:
    """The output's partition columns: ``--partition-by``'s, then ``date`` for ``--partition-by-date``."""
    names = [c.strip() for c in args.partition_by.split(",") if c.strip()]
    if args.partition_by_date and "date" not in names:
        names.append("date")
    return names


def _offsets(text: str | None) -> dict:
    # Spark reports a first batch's start as "null" (None, or "None" where py4j's None was str()ed),
    # later ones as the offsets JSON.
    return (json.loads(text) if text and text != "None" else None) or {}


class _WrittenBytes:
    """Bytes each micro-batch wrote, from the file sink's log (``OUTPUT/_spark_metadata/<batch>``,
    every 10th batch a ``.compact`` file listing all files so far). None where the log cannot
    be read from here (a Connect server's or a remote file system, Delta's own log)."""

    def __init__(self, output: str):
        self.log_dir = os.path.join(output, "_spark_metadata")
        self.seen: set[str] = set()

    def __call__(self, batch_id: int) -> int | None:
        for name in (str(batch_id), f"{batch_id}.compact"):
            try:
                with open(os.path.join(self.log_dir, name)) as f:
                    lines = f.read().splitlines()[1:]          # the first line is the log's version
            except OSError:
                continue
            total = 0
            for line in lines:
                entry = json.loads(line)
                if entry.get("action") == "add" and entry["path"] not in self.seen:
                    self.seen.add(entry["path"])
                    total += entry.get("size", 0)
            return total
        return None


def _behind(src) -> int | None:
    """Records between what the batch read and the latest offsets the source saw (Spark's
    ``maxOffsetsBehindLatest``, summed over partitions); None when the source did not say."""
    latest, end = _offsets(getattr(src, "latestOffset", None)), _offsets(src.endOffset)
    if not latest:
        return None
    return sum(max(0, int(off) - int(end.get(t, {}).get(p, off)))
               for t, parts in latest.items() for p, off in parts.items())


def _describe(progress, written: int | None = None) -> str:
    # progress: a StreamingQueryProgress. Through Spark Connect its JSON carries the row counts only
    # per source, so the properties (which sum the sources when needed) are read, not the keys.
    rate = progress.processedRowsPerSecond or 0.0
    moved = []
    behind = None
    for src in progress.sources:
        start, end = _offsets(src.startOffset), _offsets(src.endOffset)
        for topic, parts in sorted(end.items()):
            for p, off in sorted(parts.items(), key=lambda kv: int(kv[0])):
                before = start.get(topic, {}).get(p)
                if before != off:
                    moved.append(f"{topic}-{p} {before if before is not None else '?'}->{off}")
        b = _behind(src)
        if b is not None:
            behind = (behind or 0) + b
    return (f"batch {progress.batchId}: {progress.numInputRows} rows"
            + (f", {written / 1e6:.1f} MB written" if written is not None else "")
            + f", {rate:.0f} rows/s"
            + (f", {behind} offsets behind latest" if behind is not None else "")
            + (", " + ", ".join(moved) if moved else ""))


def run_load(spark, args, out=None, transform=None) -> dict:
    """Run one incremental load with ``spark``; returns ``{"rows", "batches", "seconds",
    "offsets", "bytes"}`` (bytes written, None where the sink's log is not readable from here)
    and prints progress lines to ``out`` (``sys.stdout`` at call time).

    ``transform``, if given, maps the streaming DataFrame (Kafka columns, after
    ``--cast-strings``/``--partition-by``'s derived columns) to the one stored -- parse values, drop
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
    partition_by = partition_columns(args)
    for name in partition_by:
        if name in _EVENT_TIME:
            df = df.withColumn(name, _EVENT_TIME[name](F))
    if transform is not None:
        df = transform(df)
    unknown = [c for c in partition_by if c not in df.columns]
    if unknown:
        raise ValueError(f"--partition-by: no column {', '.join(unknown)} (the columns stored are "
                         f"{', '.join(df.columns)}; date and hour are derived from timestamp)")
    writer = df.writeStream.format(args.format).option("path", args.output) \
        .option("checkpointLocation", checkpoint).trigger(availableNow=True)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    began = time.monotonic()
    query = writer.start()
    seen: set[int] = set()
    rows = batches = 0
    written: int | None = None
    batch_bytes = _WrittenBytes(args.output)
    offsets: dict = {}

    def report():
        nonlocal rows, batches, offsets, written
        for p in query.recentProgress:
            if p.batchId in seen:
                continue
            seen.add(p.batchId)
            if p.numInputRows or any(src.startOffset != src.endOffset for src in p.sources):
                rows += p.numInputRows
                batches += 1
                nbytes = batch_bytes(p.batchId)
                if nbytes is not None:
                    written = (written or 0) + nbytes
                print(_describe(p, nbytes), file=out, flush=True)
            for src in p.sources:
                offsets = _offsets(src.endOffset) or offsets

    while not query.awaitTermination(0.5):
        report()
    report()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    seconds = time.monotonic() - began
    size = f", {written / 1e6:.1f} MB written" if written is not None else ""
    print(f"loaded {rows} rows in {batches} batches ({seconds:.1f} s{size}) into {args.output}; "
          f"offsets now {json.dumps(offsets, sort_keys=True)}", file=out, flush=True)
    return {"rows": rows, "batches": batches, "seconds": seconds, "offsets": offsets, "bytes": written}


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
