"""``fastkafka perf produce|consume|e2e|disk``: Kafka's perf-test tools and the disk as the limit.

- ``produce`` is kafka-producer-perf-test: ``--num-records``, ``--record-size``, ``--throughput``
  (records/s cap), ``--producer-props``; a window line every 5 s and 50th/95th/99th/99.9th at the end;
- ``consume`` is kafka-consumer-perf-test: its columns (start.time, end.time, data.consumed.in.MB, ...);
- ``e2e`` is Kafka's EndToEndLatency: produce one record, fetch it back, N times;
- ``disk`` measures each log dir's write/read rate and the broker on them (:mod:`fastkafka.cli.perf_disk`).

Example::

    $ fastkafka perf produce bench --num-records 1000000 --record-size 100 --throughput -1
    1000000 records sent, 812345.1 records/sec (77.47 MB/sec), 12.30 ms avg latency, ...
    $ fastkafka perf consume bench --messages 1000000
"""
from __future__ import annotations

import argparse
import sys

from fastkafka.client.tools import client_config, parse_pairs, run, tool_parser, tool_subparsers

EPILOG = """examples:
  fastkafka perf produce bench --num-records 1000000 --record-size 100 --throughput -1
  fastkafka perf produce bench -n 100000 -s 1000 --throughput 50000 --producer-props acks=all linger.ms=5
  fastkafka perf consume bench --messages 1000000 --show-detailed-stats --reporting-interval 100
  fastkafka perf e2e e2e-topic --num-records 1000 --record-size 100 --acks 1
  fastkafka perf disk --log-dirs . --size-mb 32 --no-broker

produce: a line every --reporting-interval ms (Kafka's "N records sent, X records/sec (Y MB/sec),
A ms avg latency, M ms max latency."), then the total with the 50th/95th/99th/99.9th percentiles
of the time from send() to acknowledgement (a log-bucketed histogram, 0.8% precision, bounded
memory). --producer-props and -X take client properties with Kafka's names; -X wins.
consume: kafka-consumer-perf-test's columns; without a group, rebalance.time.ms is the time to
find the leaders and resolve the start offsets. e2e: one record in flight, send -> ack ->
fetched back, timed; Kafka's "Avg latency" and "Percentiles" lines.
disk: see `fastkafka perf disk --help`."""


def _parser():
    p = tool_parser("fastkafka perf", "Producer / consumer performance test (kafka-*-perf-test).", EPILOG)
    sub = tool_subparsers(p)
    pr = sub.add_parser("produce", help="produce records, report throughput and latency percentiles",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    pr.add_argument("topic", nargs="?")
    pr.add_argument("--topic", dest="topic_opt", metavar="TOPIC", help="the topic (or as the first argument)")
    pr.add_argument("-n", "--num-records", type=int, default=100_000)
    pr.add_argument("-s", "--record-size", type=int, default=100, help="value bytes")
    pr.add_argument("--throughput", type=float, default=-1,
                    help="at most this many records/s (-1: as fast as possible, the default)")
    pr.add_argument("--producer-props", nargs="+", default=[], metavar="KEY=VALUE",
                    help="client properties (Kafka names), e.g. acks=all linger.ms=5; -X wins over these")
    pr.add_argument("--chunk", type=int, default=1000, help="records per send() (default 1000)")
    pr.add_argument("--reporting-interval", type=int, default=5000, metavar="MS",
                    help="ms between progress lines (default 5000, Kafka's)")
    pr.add_argument("--progress", action="store_true", help=argparse.SUPPRESS)   # the old bar: lines now
    co = sub.add_parser("consume", help="read a topic from its start, report kafka-consumer-perf-test columns",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    co.add_argument("topic", nargs="?")
    co.add_argument("--topic", dest="topic_opt", metavar="TOPIC", help="the topic (or as the first argument)")
    co.add_argument("-n", "--num-records", "--messages", dest="num_records", type=int, default=100_000)
    co.add_argument("--fetch-size", type=int, default=8 << 20, help="bytes per partition fetch")
    co.add_argument("--timeout-ms", "--timeout", dest="timeout_ms", type=int, default=10_000,
                    help="give up after this long without a record (ms)")
    co.add_argument("--show-detailed-stats", action="store_true", help="a line every --reporting-interval")
    co.add_argument("--reporting-interval", type=int, default=5000, metavar="MS")
    co.add_argument("--hide-header", action="store_true", help="no column header line")
    co.add_argument("--progress", action="store_true", help=argparse.SUPPRESS)
    e2 = sub.add_parser("e2e", help="end-to-end latency: produce one record, fetch it back, N times",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    e2.add_argument("topic")
    e2.add_argument("-n", "--num-records", type=int, default=10_000)
    e2.add_argument("-s", "--record-size", type=int, default=100)
    e2.add_argument("--acks", default="1", choices=["0", "1", "all", "-1"],
                    help="the producer's acks (default 1); 0 times the fetch alone after a fire-and-forget send")
    di = sub.add_parser("disk", help="each log dir's write/read rate, then the broker on them as a ratio")
    from .perf_disk import add_arguments
    add_arguments(di)
    return p


def _topic(args) -> str:
    topic = args.topic_opt or args.topic
    if not topic:
        raise ValueError("a topic is needed (first argument or --topic)")
    return topic


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    action = {"produce": _produce, "consume": _consume, "e2e": _e2e}.get(args.action)
    if action is None:
        from .perf_disk import run_disk
        return run(lambda: run_disk(args), "fastkafka perf")
    return run(lambda: action(args), "fastkafka perf")


def _produce(args) -> int:
    from fastkafka.perf.produce import format_total, run_produce
    props = dict(parse_pairs(args.producer_props, "--producer-props"))
    cfg = client_config(args, **props)
    r = run_produce(cfg, _topic(args), args.num_records, args.record_size, throughput=args.throughput,
                    chunk=args.chunk, reporting_interval_ms=args.reporting_interval, out=sys.stdout)
    print(format_total(r), flush=True)
    return 0 if r.records == args.num_records else 1


def _consume(args) -> int:
    from fastkafka.perf.consume import DETAILED_HEADER, HEADER, format_total, run_consume
    if args.show_detailed_stats and not args.hide_header:
        print(DETAILED_HEADER, flush=True)
    r = run_consume(client_config(args), _topic(args), args.num_records, fetch_size=args.fetch_size,
                    timeout_ms=args.timeout_ms, reporting_interval_ms=args.reporting_interval,
                    detailed=sys.stdout if args.show_detailed_stats else None)
    if not args.hide_header:
        print(HEADER)
    print(format_total(r), flush=True)
    if r.records < args.num_records:
        print(f"fastkafka perf: only {r.records} of {args.num_records} records within {args.timeout_ms} ms",
              file=sys.stderr)
        return 1
    return 0


def _e2e(args) -> int:
    from fastkafka.perf.e2e import format_e2e, run_end_to_end
    h = run_end_to_end(client_config(args), args.topic, args.num_records, args.record_size, acks=args.acks)
    print(format_e2e(h), flush=True)
    return 0
