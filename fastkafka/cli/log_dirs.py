"""``fastkafka log-dirs``: each broker's log directories and the size of every partition in them,
as JSON like ``kafka-log-dirs.sh --describe``.

Example::

    $ fastkafka log-dirs --describe --topic-list orders
"""
from __future__ import annotations

import json

from fastkafka import errors
from fastkafka.client.admin import AdminClient
from fastkafka.client.tools import client_config, run, tool_parser

EPILOG = """examples:
  fastkafka log-dirs --describe
  fastkafka log-dirs --describe --topic-list orders,bench"""


def _parser():
    p = tool_parser("fastkafka log-dirs", "Describe each broker's log directories.", EPILOG)
    p.add_argument("--describe", action="store_true", required=True, help="describe the log directories")
    p.add_argument("--topic-list", default="", metavar="T1,T2", help="only these topics (default: all)")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return run(lambda: _run(args), "fastkafka log-dirs")


def _run(args) -> int:
    topics = [t.strip() for t in args.topic_list.split(",") if t.strip()] or None
    with AdminClient(client_config(args)) as admin:
        by_broker = admin.describe_log_dirs(topics)
    out = {"version": 1, "brokers": [{"broker": b, "logDirs": [
        {"logDir": d.log_dir, "error": None if not d.error_code else errors.for_code(d.error_code).__name__,
         "totalBytes": d.total_bytes, "usableBytes": d.usable_bytes,
         "partitions": [{"partition": f"{t.name}-{p.partition_index}", "size": p.partition_size,
                         "offsetLag": p.offset_lag, "isFuture": p.is_future_key}
                        for t in d.topics for p in t.partitions]} for d in results]}
        for b, results in by_broker.items()]}
    print(json.dumps(out))
    return 0
