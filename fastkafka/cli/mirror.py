"""``fastkafka mirror``: copy topics from a source cluster to a target cluster, like MirrorMaker;
``fastkafka mirror translate-offsets``: a consumer group's offsets for the target (MM2's checkpoints).

Example::

    $ fastkafka mirror --source dc1:9092 --target dc2:9092 --whitelist 'orders.*'
    $ fastkafka mirror --source dc1:9092 --target dc2:9092 --topics orders,clicks --exactly-once
    $ fastkafka mirror translate-offsets --target dc2:9092 --group billing --execute
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys

from fastkafka.client.tools import ToolError, parse_pairs, run
from fastkafka.config import load_properties
from fastkafka.metrics_http import MetricsError
from fastkafka.mirror import DEFAULT_GROUP, Mirror, apply_offsets, translate_offsets
from fastkafka.mirror.checkpoints import EMIT_CHECKPOINTS_INTERVAL_S, SYNC_GROUP_OFFSETS_INTERVAL_S
from fastkafka.mirror.naming import checkpoints_topic, offset_syncs_topic
from fastkafka.mirror.syncs import OFFSET_LAG_MAX

EPILOG = f"""examples:
  fastkafka mirror --source dc1:9092 --target dc2:9092 --whitelist 'orders.*|clicks'
  fastkafka mirror --source dc1:9092 --target dc2:9092 --topics orders --exactly-once
  fastkafka mirror --source dc1:9092 --target dc2:9092 --blacklist 'tmp.*' --num-streams 4 \\
      --source-config-file dc1.properties --target-config compression.type=lz4
  fastkafka mirror --source a:9092 --target b:9092 --source-alias A --target-alias B --prefix-topics
  fastkafka mirror --source b:9092 --target a:9092 --source-alias B --target-alias A --prefix-topics
  fastkafka mirror --source dc1:9092 --target dc2:9092 --whitelist 'orders.*' --source-alias dc1 \\
      --emit-checkpoints-interval 10 --checkpoint-groups 'billing|audit.*' --sync-group-offsets
  fastkafka mirror --source dc1:9093 --target dc2:9092 --topics orders --metrics-port 9404 \
      --source-config-file dc1-sasl-ssl.properties --target-config-file dc2-ssl.properties
  fastkafka mirror translate-offsets --target dc2:9092 --source-alias dc1 --group billing
  fastkafka mirror translate-offsets --target dc2:9092 --source-alias dc1 --group billing --execute

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

Consumer offset translation (MirrorMaker 2's): the mirror records offset syncs (source offset ->
target offset, from what the target acknowledged) in mm2-offset-syncs.ALIAS.internal on the target
and, every --emit-checkpoints-interval seconds, translates the committed offsets of the source's
consumer groups (--checkpoint-groups; never the mirror's own) into ALIAS.checkpoints.internal
there (ALIAS: --source-alias, else "source"). `fastkafka mirror translate-offsets --help`: how a
group moves to the target -- it resumes with no record skipped, re-reading at most the few
records between the last offset sync and its position. With --sync-group-offsets the mirror
commits those positions on the target itself, every --sync-group-offsets-interval seconds, for
each group that has no members there and only forward of what it committed there.

A progress line (records/s, MB/s, lag per topic) goes to stderr every --progress-interval
seconds; with --metrics-port, Prometheus metrics are served too (MirrorMaker 2's names as the JMX
exporter spells them: kafka_connect_mirror_mirrorsourceconnector_record_count_total, ...; and
fastkafka_mirror_lag per partition, offset syncs, checkpoints, transactions).
SIGTERM or Ctrl-C stops cleanly: what was copied is committed. All state is in the two clusters:
run it again to resume. Exit status 1 on an error (restart it: it resumes), and on wrong
credentials or an untrusted certificate at once (retrying cannot mend them)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastkafka mirror", usage=(
        "fastkafka mirror --source HOST:PORT --target HOST:PORT [options]\n"
        "       fastkafka mirror translate-offsets --target HOST:PORT --group GROUP [options]"),
        description="Mirror topics between clusters (translate-offsets: a consumer group's offsets for the "
                    "target; see its --help).",
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
    p.add_argument("--offset-lag-max", type=int, default=OFFSET_LAG_MAX, metavar="N",
                   help=f"write an offset sync when a translation would lag N records (default {OFFSET_LAG_MAX})")
    p.add_argument("--no-offset-syncs", action="store_true", help="write no offset syncs")
    p.add_argument("--emit-checkpoints-interval", type=float, default=EMIT_CHECKPOINTS_INTERVAL_S,
                   metavar="S", help=f"seconds between checkpoint rounds, 0 for none "
                   f"(default {EMIT_CHECKPOINTS_INTERVAL_S:g})")
    p.add_argument("--checkpoint-groups", metavar="REGEX",
                   help="the source groups to checkpoint (default: every group but the mirror's)")
    p.add_argument("--sync-group-offsets", action="store_true",
                   help="commit the checkpoints for the groups on the target while they have no members there "
                        "(MM2's sync.group.offsets.enabled)")
    p.add_argument("--sync-group-offsets-interval", type=float, default=SYNC_GROUP_OFFSETS_INTERVAL_S, metavar="S",
                   help=f"seconds between group offset syncs (default {SYNC_GROUP_OFFSETS_INTERVAL_S:g})")
    p.add_argument("--metrics-port", type=int, metavar="PORT",
                   help="serve Prometheus metrics on http://HOST:PORT/metrics (MirrorMaker 2's: records, bytes, "
                        "record age, replication latency, lag per partition; needs pip install 'fastkafka[metrics]')")
    p.add_argument("--metrics-host", default="0.0.0.0", metavar="HOST",
                   help="the interface of --metrics-port (default: all)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return p


TRANSLATE_EPILOG = """examples:
  fastkafka mirror translate-offsets --target dc2:9092 --source-alias dc1 --group billing
  fastkafka mirror translate-offsets --target dc2:9092 --source-alias dc1 --group billing --execute
  fastkafka mirror translate-offsets --target dc2:9092 --source dc1:9092 --source-alias dc1 \\
      --prefix-topics --group billing --execute

Prints GROUP TOPIC PARTITION SOURCE-OFFSET NEW-OFFSET: the group's position in each mirrored
partition of the target. Without --source they come from the latest checkpoints that the mirror
from --source-alias (default "source") wrote to the target -- all that is needed once the source
is gone. With --source, the group's committed offsets on the source now are translated through the
offset syncs on the target (name the topics as the mirror does: --source-alias, --prefix-topics).

A translated offset is MirrorMaker 2's: the target offset of the latest offset sync at or below the
group's source offset, plus one unless they are equal. A consumer starting there on the target
skips no record it had not consumed; it may read again the records between that sync and its
position (at most --offset-lag-max of the mirror, or one copied batch).

--execute commits the offsets for the group on the target, like kafka-consumer-groups
--reset-offsets; the group must have no active members there (stop its consumers on the target
first). Exit status 1 on an error or when no offset could be translated."""


def _translate_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastkafka mirror translate-offsets",
                                description="A consumer group's offsets translated for the target cluster.",
                                epilog=TRANSLATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True, metavar="HOST:PORT", help="target cluster bootstrap servers")
    p.add_argument("--source", metavar="HOST:PORT",
                   help="source cluster bootstrap servers: translate its offsets now (default: checkpoints)")
    for side in ("source", "target"):
        p.add_argument(f"--{side}-config", action="append", default=[], metavar="KEY=VALUE",
                       help=f"a client property for the {side} cluster (repeatable)")
        p.add_argument(f"--{side}-config-file", metavar="FILE",
                       help=f"client properties for the {side} cluster (Java .properties)")
    p.add_argument("--group", required=True, help="the consumer group")
    p.add_argument("--source-alias", metavar="NAME", help="the mirror's --source-alias (default: source)")
    p.add_argument("--prefix-topics", action="store_true",
                   help="the mirror names target topics SOURCE_ALIAS.TOPIC (with --source)")
    p.add_argument("--execute", action="store_true", help="commit the offsets for the group on the target")
    p.add_argument("--dry-run", action="store_true", help="only print them (the default)")
    return p


def _props(pairs: list[str], path: str | None, what: str) -> dict[str, str]:
    props: dict[str, str] = {}
    if path:
        with open(path, encoding="utf-8") as f:
            props.update(load_properties(f.read()))
    props.update(parse_pairs(pairs, what))
    return props


def main(argv: list[str]) -> int:
    if argv[:1] == ["translate-offsets"]:
        targs = _translate_parser().parse_args(argv[1:])
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
        return run(lambda: _translate(targs), "fastkafka mirror translate-offsets")
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
    try:
        mirror = _mirror(args, source, target)
    except MetricsError as e:
        raise ToolError(str(e)) from None

    def on_signal(signum, _frame):
        logging.getLogger("fastkafka.mirror").info("%s: stopping", signal.Signals(signum).name)
        mirror.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        mirror.run()
    except MetricsError as e:
        raise ToolError(str(e)) from None
    return 0


def _mirror(args, source: dict, target: dict) -> Mirror:
    return Mirror(
        source, target, topics=[t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None,
        whitelist=args.whitelist, blacklist=args.blacklist, group=args.group,
        num_streams=args.num_streams, source_alias=args.source_alias, target_alias=args.target_alias,
        prefix_topics=args.prefix_topics, exactly_once=args.exactly_once,
        commit_interval_ms=args.commit_interval_ms, refresh_interval_ms=args.refresh_interval_ms,
        config_sync_interval_ms=args.config_sync_interval_ms,
        replication_factor=args.replication_factor, progress_interval_s=args.progress_interval,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
        emit_offset_syncs=not args.no_offset_syncs, offset_lag_max=args.offset_lag_max,
        emit_checkpoints_interval_s=args.emit_checkpoints_interval, checkpoint_groups=args.checkpoint_groups,
        sync_group_offsets_interval_s=args.sync_group_offsets_interval if args.sync_group_offsets else 0.0,
        metrics_port=args.metrics_port, metrics_host=args.metrics_host)


def _translate(args) -> int:
    if args.execute and args.dry_run:
        raise ToolError("--execute and --dry-run exclude each other")
    if args.prefix_topics and not args.source_alias:
        raise ToolError("--prefix-topics needs --source-alias")
    target = {**_props(args.target_config, args.target_config_file, "--target-config"),
              "bootstrap.servers": args.target}
    source = None
    if args.source:
        source = {**_props(args.source_config, args.source_config_file, "--source-config"),
                  "bootstrap.servers": args.source}
    missing: list = []
    found = translate_offsets(target, args.group, source=source, source_alias=args.source_alias,
                              prefix_topics=args.prefix_topics, missing=missing)
    for (topic, p), offset, why in missing:
        print(f"WARN: {topic}-{p} (offset {offset} on the source) cannot be translated: "
              f"{'no offset sync at or below it' if why == -1 else 'no offset sync for it'} in "
              f"{offset_syncs_topic(args.source_alias)}", file=sys.stderr)
    if not found:
        where = (f"no offset syncs in {offset_syncs_topic(args.source_alias)} match its offsets on the source"
                 if source is not None else
                 f"no checkpoint of it in {checkpoints_topic(args.source_alias)} on the target")
        raise ToolError(f"nothing to translate for group '{args.group}': {where}")
    if args.execute:
        apply_offsets(target, args.group, {tp: c.downstream for tp, c in found.items()})
    print("GROUP\tTOPIC\tPARTITION\tSOURCE-OFFSET\tNEW-OFFSET")
    for (topic, p), c in sorted(found.items()):
        print(f"{args.group}\t{topic}\t{p}\t{c.upstream}\t{c.downstream}")
    if not (args.execute or args.dry_run):
        print("(dry run: nothing was committed; add --execute to commit these offsets on the target)",
              file=sys.stderr)
    return 0
