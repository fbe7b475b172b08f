"""``fastkafka produce``: one record per line of stdin or of the files given.

Example::

    $ printf 'a\\nb\\n' | fastkafka produce orders
    $ fastkafka produce orders --key-separator : --header source=cli --compression lz4 events.txt
"""
from __future__ import annotations

import sys

from fastkafka.client.producer import Producer, ProducerData
from fastkafka.client.tools import client_config, parse_pairs, run, tool_parser

EPILOG = """examples:
  printf 'a\\nb\\n' | fastkafka produce orders
  fastkafka produce orders --key-separator : < keyed.txt      # lines like  key:value
  fastkafka produce orders -H source=cli --compression lz4 events.txt
  fastkafka produce orders -X acks=1 -X linger.ms=50 big.txt"""

CHUNK = 1000   # unkeyed lines travel in ProducerData lists of this many


def _parser():
    p = tool_parser("fastkafka produce", "Produce one record per line of stdin or FILEs.", EPILOG)
    p.add_argument("topic")
    p.add_argument("files", nargs="*", help="files to read (default: stdin)")
    p.add_argument("-k", "--key-separator", metavar="SEP",
                   help="split each line at the first SEP into key and value")
    p.add_argument("-H", "--header", action="append", default=[], metavar="KEY=VALUE",
                   help="a header added to every record (repeatable)")
    p.add_argument("-z", "--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"],
                   help="compression.type")
    p.add_argument("-p", "--partition", type=int, help="write every record to this partition")
    p.add_argument("--acks", choices=["0", "1", "all", "-1"], help="acks (default all)")
    return p


def main(argv: list[str]) -> int:
    # intermixed: FILEs may follow options (`produce orders -H k=v events.txt`); plain parse_args
    # would give the first positional run all positionals and reject the later file
    args = _parser().parse_intermixed_args(argv)
    return run(lambda: _run(args), "fastkafka produce")


def _lines(files):
    if not files:
        yield from sys.stdin.buffer
        return
    for name in files:
        with open(name, "rb") as f:
            yield from f


def _run(args) -> int:
    over = {"producer.type": "async"}
    if args.compression:
        over["compression.type"] = args.compression
    if args.acks:
        over["acks"] = args.acks
    headers = [(k, v.encode()) for k, v in parse_pairs(args.header, "--header")] or None
    sep = args.key_separator.encode() if args.key_separator else None
    count = 0
    with Producer(client_config(args, **over)) as producer:
        pending: list[bytes] = []

        def flush_pending():
            if pending:
                producer.send(ProducerData(args.topic, None, list(pending), partition=args.partition,
                                           headers=headers))
                pending.clear()

        for line in _lines(args.files):
            line = line.rstrip(b"\r\n")
            count += 1
            if sep is not None:
                key, found, value = line.partition(sep)
                if not found:
                    raise ValueError(f"line {count} has no key separator {args.key_separator!r}")
                producer.send(ProducerData(args.topic, key, [value], partition=args.partition,
                                           headers=headers))
            else:
                pending.append(line)
                if len(pending) >= CHUNK:
                    flush_pending()
        flush_pending()
        producer.flush()
    print(f"Produced {count} records to {args.topic}.", file=sys.stderr)
    return 0
