"""The `fastkafka` command: one sub-command per tool, each a module with ``main(argv) -> int``.

Example::

    $ fastkafka serve --override log.dirs=./data
    $ fastkafka dump-log data/orders-0/00000000000000000000.log
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys

# name -> (module, one-line help). A tool is offered only once its module exists, so the
# command never advertises a sub-command that is not built yet.
TOOLS = {
    "serve": ("fastkafka.cli.serve", "start a broker (Kafka's server.properties names)"),
    "dump-log": ("fastkafka.cli.dump_log", "print batches of .log files and entries of .index/.timeindex files"),
    "topics": ("fastkafka.cli.topics", "create, list, describe, delete topics"),
    "configs": ("fastkafka.cli.configs", "describe and change topic and broker configs"),
    "log-dirs": ("fastkafka.cli.log_dirs", "describe each broker's log directories and partition sizes"),
    "acls": ("fastkafka.cli.acls", "add, remove and list ACLs (kafka-acls.sh)"),
    "reassign": ("fastkafka.cli.reassign", "move partitions between brokers (kafka-reassign-partitions.sh)"),
    "leader-election": ("fastkafka.cli.leader_election", "elect preferred or unclean leaders "
                        "(kafka-leader-election.sh)"),
    "produce": ("fastkafka.cli.produce", "produce lines from stdin or files"),
    "consume": ("fastkafka.cli.consume", "consume records"),
    "groups": ("fastkafka.cli.groups", "list and describe consumer groups"),
    "transactions": ("fastkafka.cli.transactions", "list, describe and abort transactions, find hanging ones "
                     "(kafka-transactions.sh)"),
    "perf": ("fastkafka.cli.perf", "producer / consumer / end-to-end latency and log-dir disk tests"),
    "load": ("fastkafka.cli.load", "load topics into Parquet with PySpark"),
    "mirror": ("fastkafka.cli.mirror", "mirror topics from one cluster to another (MirrorMaker); translate-offsets"),
}


def available() -> dict[str, tuple[str, str]]:
    return {name: spec for name, spec in TOOLS.items() if importlib.util.find_spec(spec[0]) is not None}


def usage(tools: dict[str, tuple[str, str]]) -> str:
    lines = ["usage: fastkafka COMMAND [ARGS...]", "", "commands:"]
    width = max(map(len, tools), default=0)
    lines += [f"  {name:<{width}} {help_}" for name, (_, help_) in tools.items()]
    lines += ["", "`fastkafka COMMAND --help` explains each command; `fastkafka --version` prints the version."]
    return "\n".join(lines)


def version() -> str:
    """The installed package's version (what ``fastkafka --version`` prints)."""
    try:
        return importlib.metadata.version("fastkafka")
    except importlib.metadata.PackageNotFoundError:   # run from a source tree, not installed
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    tools = available()
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(tools))
        return 0
    if argv[0] in ("-V", "--version"):
        print(version())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in tools:
        print(f"fastkafka: unknown command {name!r}\n\n{usage(tools)}", file=sys.stderr)
        return 2
    module = importlib.import_module(tools[name][0])
    try:
        return int(module.main(rest) or 0)
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly, as Unix tools do. Python would
        # otherwise complain again when it flushes stdout at exit, so point it at devnull.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141      # 128 + SIGPIPE, what a shell reports for a tool killed by it


if __name__ == "__main__":
    sys.exit(main())
