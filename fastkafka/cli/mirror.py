"""``fastkafka mirror``: copy topics from a source cluster to a target cluster, like MirrorMaker.

Example::

    $ fastkafka mirror --source dc1:9092 --target dc2:9092 --whitelist 'orders.*'
    $ fastkafka mirror --source dc1:9092 --target dc2:9092 --topics orders,clicks --exactly-once
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys

from fastkafka.client.tools import ToolError, parse_pairs, run
from fastkafka.config import load_properties
from fastkafka.mirror import DEFAULT_GROUP, Mirror

EPILOG = f"""examples:
  fastkafka mirror --source dc1:9092 --target dc2:9092 --whitelist 'orders.*|clicks'
  fastkafka mirror --source dc1:9092 --target dc2:9092 --topics orders --exactly-once
  fastkafka mirror --source dc1:9092 --target dc2:9092 --blacklist 'tmp.*' --num-streams 4 \\
      --source-config-file dc1.properties --target-config compression.type=lz4
  fastkafka mirror --source a:9092 --target b:9092 --source-alias A --target-alias B --prefix-topics
  fastkafka mirror --source b:9092 --target a:9092 --source-alias B --target-alias A --prefix-topics

The mirror is a consumer group on the source (--group, default the source properties'
group.id, else {DEFAULT_GROUP}, or {DEFAULT_GROUP}-ALIAS with --source-alias) and a producer
on the target. Target topics are
created with the source's partition count and topic configs; topics created on the source later
are picked up. Records keep key, value, headers, timestamp and (if the partition counts match)
partition.

Delivery: at least once by default (source offsets committed after the target acknowledged).
--exactly-once writes the copies and the source offsets in one transaction on the target
(offsets of the group stored on the target); read the target with isolation.level=read_committed.

--prefix-topics names target topics ALIAS.TOPIC (MirrorMaker 2); with --target-alias, topics
whose name carries the target's alias are never mirrored back, so A->B and B->A can both run.

A progress line (records/s, MB/s, lag per topic) goes to stderr every --progress-interval
seconds. SIGTERM or Ctrl-C stops cleanly: what was copied is committed. All state is in the two
clusters: run it again to resume. Exit status 1 on an error (restart it: it resumes)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastkafka mirror", description="Mirror topics between clusters.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", required=True, metavar="HOST:PORT", help="source cluster bootstrap servers")
    p.add_argument("--target", required=True, metavar="HOST:PORT", help="target cluster bootstrap servers")
    for side, alias in (("source", "consumer.config"), ("target", "producer.config")):
        p.add_argument(f"--{side}-config", action="append", default=[], metavar="KEY=VALUE",
                       help=f"a client property for the {side} cluster (repeatable)")
        p.add_argument(f"--{side}-config-file", f"--{alias}", metavar="FILE",
                       help=f"client properties for the {side} cluster (Java .properties: security.protocol, "
                            f"ssl.*, sasl.*, ...); --{side}-config wins over it")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--topics", metavar="A,B", help="these topics")
    which.add_argument("--whitelist", "--include", metavar="REGEX", help="topics whose whole name matches")
    which.add_argument("--blacklist", "--exclude", metavar="REGEX", help="every topic but those matching")
    p.add_argument("--group", help=f"the mirror's consumer group (default: the source properties' "
                   f"group.id, else {DEFAULT_GROUP}[-ALIAS])")
    p.add_argument("--num-streams", type=int, default=1, metavar="N", help="consumer streams (threads)")
    p.add_argument("--source-alias", metavar="NAME", help="the source cluster's name (for --prefix-topics)")
    p.add_argument("--target-alias", metavar="NAME",
                   help="the target cluster's name: its prefixed topics are never mirrored back")
    p.add_argument("--prefix-topics", action="store_true", help="name target topics SOURCE_ALIAS.TOPIC")
    p.add_argument("--exactly-once", action="store_true", help="transactional copies (see below)")
    p.add_argument("--commit-interval-ms", type=int, metavar="MS",
                   help="commit (or transaction) interval (default 5000; 100 with --exactly-once)")
    p.add_argument("--refresh-interval-ms", type=int, default=5000, metavar="MS",
                   help="how often to look for new or changed source topics (default 5000)")
    p.add_argument("--config-sync-interval-ms", type=int, default=30_000, metavar="MS",
                   help="how often to copy changed topic configs (default 30000)")
    p.add_argument("--replication-factor", type=int, default=-1, metavar="N",
                   help="of created target topics (default: the target's default)")
    p.add_argument("--progress-interval", type=float, default=5.0, metavar="S",
                   help="seconds between progress lines, 0 for none (default 5)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return p


def _props(pairs: list[str], path: str | None, what: str) -> dict[str, str]:
    props: dict[str, str] = {}
    if path:
        with open(path, encoding="utf-8") as f:
            props.update(load_properties(f.read()))
    props.update(parse_pairs(pairs, what))
    return props


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return run(lambda: _run(args), "fastkafka mirror")


def _run(args) -> int:
    if args.num_streams < 1:
        raise ToolError("--num-streams must be at least 1")
    if args.prefix_topics and not args.source_alias:
        raise ToolError("--prefix-topics needs --source-alias")
    source = {**_props(args.source_config, args.source_config_file, "--source-config"),
              "bootstrap.servers": args.source}
    target = {**_props(args.target_config, args.target_config_file, "--target-config"),
              "bootstrap.servers": args.target}
    mirror = Mirror(
        source, target, topics=[t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None,
        whitelist=args.whitelist, blacklist=args.blacklist, group=args.group,
        num_streams=args.num_streams, source_alias=args.source_alias, target_alias=args.target_alias,
        prefix_topics=args.prefix_topics, exactly_once=args.exactly_once,
        commit_interval_ms=args.commit_interval_ms, refresh_interval_ms=args.refresh_interval_ms,
        config_sync_interval_ms=args.config_sync_interval_ms,
        replication_factor=args.replication_factor, progress_interval_s=args.progress_interval,
        progress=lambda line: print(line, file=sys.stderr, flush=True))

    def on_signal(signum, _frame):
        logging.getLogger("fastkafka.mirror").info("%s: stopping", signal.Signals(signum).name)
        mirror.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    mirror.run()
    return 0
