"""``fastkafka consume``: print records of a topic, from the start, an offset, a time, or as a group.

Example::

    $ fastkafka consume orders --from-beginning --max-messages 10
    $ fastkafka consume orders --partition 0 --offset 42 --format json
    $ fastkafka consume orders --group billing --timeout-ms 5000
    $ fastkafka consume orders --group billing --zookeeper 127.0.0.1:2181/kafka
"""
from __future__ import annotations

import base64
import json
import signal
import sys
import threading
import time

from fastkafka.client.fetcher import EARLIEST, LATEST, Fetcher
from fastkafka.client.metadata import Cluster
from fastkafka.client.tools import ToolError, client_config, run, tool_parser

EPILOG = """examples:
  fastkafka consume orders --from-beginning --max-messages 10
  fastkafka consume orders --partition 0 --offset 42 --format json
  fastkafka consume orders --timestamp 1700000000000 --format kv
  fastkafka consume orders --group billing --timeout-ms 5000   # commits as it goes
  fastkafka consume orders --group billing --zookeeper 127.0.0.1:2181/kafka   # the seeds' ZooKeeper group

Without --timeout-ms or --max-messages it runs until Ctrl-C."""


def _parser():
    p = tool_parser("fastkafka consume", "Print the records of a topic.", EPILOG)
    p.add_argument("topic")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the earliest offset")
    start.add_argument("-o", "--offset", type=int, help="start at this offset (needs --partition)")
    start.add_argument("-t", "--timestamp", type=int, metavar="MS",
                       help="start at the first record with a timestamp >= MS (epoch ms)")
    p.add_argument("-p", "--partition", type=int, help="only this partition")
    p.add_argument("-g", "--group", help="consume as a member of this consumer group")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                   help="with --group: keep the group and its offsets in ZooKeeper (/consumers/<group>)")
    p.add_argument("-n", "--max-messages", type=int, help="exit after this many records")
    p.add_argument("--timeout-ms", type=int, help="exit after this long without a record")
    p.add_argument("-f", "--format", choices=["value", "kv", "json"], default="value",
                   help="value: the value; kv: key<TAB>value; json: one object per line")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return run(lambda: _run(args), "fastkafka consume")


def _text(b):
    if b is None:
        return None
    try:
        return bytes(b).decode()
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(bytes(b)).decode()


def _formatter(fmt):
    out = sys.stdout.buffer
    if fmt == "value":
        return lambda t, p, o, r: out.write((r.value or b"") + b"\n")
    if fmt == "kv":
        return lambda t, p, o, r: out.write((r.key or b"") + b"\t" + (r.value or b"") + b"\n")

    def as_json(t, p, o, r):
        out.write(json.dumps({"topic": t, "partition": p, "offset": o, "timestamp": r.timestamp,
                              "key": _text(r.key), "value": _text(r.value),
                              "headers": [[k, _text(v)] for k, v in r.headers]}).encode() + b"\n")
    return as_json


def _run(args) -> int:
    if args.offset is not None and args.partition is None:
        raise ToolError("--offset needs --partition")
    if args.zookeeper and not args.group:
        raise ToolError("--zookeeper needs --group")
    write = _formatter(args.format)
    if args.group:
        return _run_group(args, write)
    cfg = client_config(args, **{"fetch.wait.max.ms": 200})
    cluster = Cluster(cfg)
    parts = [args.partition] if args.partition is not None else cluster.partitions_for(args.topic)
    if args.offset is not None:
        start = args.offset
    elif args.timestamp is not None:
        start = ("time", args.timestamp)
    else:
        start = EARLIEST if args.from_beginning else LATEST
    fetcher = Fetcher(cluster)
    count = 0
    # a stop signal is seen between two polls (each waits at most fetch.wait.max.ms), never
    # raised in the middle of a write or a client call
    with _StopSignals() as stop:
        try:
            fetcher.assign({(args.topic, p): start for p in parts})
            idle_since = time.monotonic()
            while stop.signum is None:
                got = False
                for ms in fetcher.poll():
                    for mo in ms:
                        write(ms.topic, ms.partition, mo.offset, mo.message)
                        count += 1
                        got = True
                        if args.max_messages is not None and count >= args.max_messages:
                            return 0
                sys.stdout.flush()
                if got:
                    idle_since = time.monotonic()
                elif args.timeout_ms is not None and (time.monotonic() - idle_since) * 1000 >= args.timeout_ms:
                    return 0
        finally:
            sys.stdout.flush()
            fetcher.close()
            cluster.close()
            print(f"Processed {count} records.", file=sys.stderr)
    return stop.exit_code


class _StopSignals:
    """While active, SIGINT and SIGTERM only note that a stop was asked: the group loop stops
    between two records, so its final commit covers exactly the records that were written.
    (An exception raised by the signal inside a blocked write() would commit a record that never
    reached stdout.) A second signal stops at once, as a second Ctrl-C does."""

    EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}     # 128 + signal, like a JVM tool

    def __init__(self):
        self.signum: int | None = None
        self._previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._note) for s in self.EXIT}
        return self

    def _note(self, signum, _frame):
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)

    @property
    def exit_code(self) -> int:
        return self.EXIT.get(self.signum, 0)


TICK_MS = 100   # the group loop wakes this often without records: to see a stop signal, flush


def _run_group(args, write) -> int:
    from fastkafka.client.consumer_connector import ConsumerTimeout

    from .zookeeper_consumer import create_consumer
    props = {"group.id": args.group, "auto.offset.reset": "earliest" if args.from_beginning else "latest"}
    if args.zookeeper:
        props["zookeeper.connect"] = args.zookeeper
    # the tick wins over -X consumer.timeout.ms: --timeout-ms is counted here
    config = client_config(args, **props).with_overrides(**{"consumer.timeout.ms": TICK_MS})
    connector = create_consumer(config)
    count = 0
    with _StopSignals() as stop:
        try:
            stream = connector.create_message_streams({args.topic: 1})[args.topic][0]
            idle_since = time.monotonic()
            while stop.signum is None:
                try:
                    m = next(stream)
                except ConsumerTimeout:
                    sys.stdout.flush()
                    if args.timeout_ms is not None and \
                            (time.monotonic() - idle_since) * 1000 >= args.timeout_ms:
                        break
                    continue
                except StopIteration:
                    break
                write(m.topic, m.partition, m.offset, m)
                count += 1
                idle_since = time.monotonic()
                if args.max_messages is not None and count >= args.max_messages:
                    break
            sys.stdout.flush()
            connector.commit_offsets()     # what was written, no more: it was handed out
        finally:
            try:
                sys.stdout.flush()
            finally:                       # a closed pipe must not keep us in the group
                connector.shutdown()
                print(f"Processed {count} records.", file=sys.stderr)
    return stop.exit_code
