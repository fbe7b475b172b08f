"""``fastkafka leader-election``: give partitions back to their preferred leader, or a leaderless
partition a leader from outside its ISR, like ``kafka-leader-election.sh`` (ElectLeaders).

A PREFERRED election moves a partition's leadership to its first replica when that one is alive
and in sync (after a broker restart, its partitions are led by the others until then); an
UNCLEAN election gives a partition whose in-sync replicas are all gone a leader from the others,
accepting the loss of what only the ISR held. The partitions come from ``--topic`` and
``--partition``, from a JSON file, or are every partition (``--all-topic-partitions``)::

    >>> parse_election_json('{"partitions": [{"topic": "orders", "partition": 0},'
    ...                     ' {"topic": "orders", "partition": 1}]}')
    [('orders', 0), ('orders', 1)]

The answer is printed as Kafka's tool prints it, one line per outcome::

    >>> from fastkafka import errors
    >>> lines, failed = election_text("PREFERRED", {("orders", 0): None,
    ...     ("orders", 1): errors.ElectionNotNeededError("Leader election not needed for topic partition."),
    ...     ("orders", 2): errors.PreferredLeaderNotAvailableError("Preferred leader 3 is not in sync.")})
    >>> print("\\n".join(lines))
    Successfully completed leader election (PREFERRED) for partitions orders-0
    Valid replica already elected for partitions orders-1
    Error completing leader election (PREFERRED) for partition: orders-2: Preferred leader 3 is not in sync.
        (PREFERRED_LEADER_NOT_AVAILABLE)
    >>> failed
    1
"""
from __future__ import annotations

import json

from fastkafka import errors
from fastkafka.client.admin import AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser

from .reassign import partition_name, read_json

__all__ = ["main", "parse_args", "parse_election_json", "election_text", "ELECTION_TYPES"]

EPILOG = """examples:
  fastkafka leader-election --election-type preferred --all-topic-partitions
  fastkafka leader-election --election-type PREFERRED --topic orders --partition 0
  fastkafka leader-election --election-type preferred --path-to-json-file partitions.json
  fastkafka leader-election --election-type unclean --topic orders --partition 1

partitions.json lists the partitions: {"partitions":[{"topic":"orders","partition":0}]}.
With --all-topic-partitions only the partitions whose leader changed (or could not) are
printed, as in Kafka. The exit status is 1 when a partition could not be elected (a
partition whose right replica already leads is no failure). A client that is not PLAINTEXT
takes its settings from --command-config FILE (Kafka's --admin.config also works)."""

ELECTION_TYPES = {"PREFERRED": 0, "UNCLEAN": 1}


def _parser():
    p = tool_parser("fastkafka leader-election", "Elect the preferred (or, unclean, any live) replica "
                    "as the leader of partitions (kafka-leader-election.sh).", EPILOG)
    p.add_argument("--admin.config", dest="command_config", metavar="FILE", help="the same as --command-config")
    p.add_argument("--election-type", required=True, type=str.upper, choices=list(ELECTION_TYPES),
                   help="PREFERRED: the first replica leads again when it is in sync; UNCLEAN: a partition "
                        "without a leader gets one even from outside its ISR (case does not matter)")
    p.add_argument("--topic", help="the topic of --partition")
    p.add_argument("--partition", type=int, help="the partition of --topic")
    p.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    p.add_argument("--path-to-json-file", metavar="FILE",
                   help='the partitions in a file: {"partitions":[{"topic":"orders","partition":0}]}')
    return p


def parse_args(argv: list[str]):
    """The command line, checked as kafka-leader-election.sh checks it (ToolError says what is wrong)."""
    args = _parser().parse_args(argv)
    chosen = [args.topic is not None, args.all_topic_partitions, args.path_to_json_file is not None]
    if sum(chosen) != 1:
        raise ToolError("One and only one of the following options is required: --topic, "
                        "--all-topic-partitions, --path-to-json-file")
    if args.topic is not None and args.partition is None:
        raise ToolError("Missing required option(s): --partition")
    if args.topic is None and args.partition is not None:
        raise ToolError("Option --partition is only allowed if --topic is used")
    return args


def parse_election_json(text: str | dict, where: str = "the election file") -> list[tuple[str, int]]:
    """The ``(topic, partition)`` pairs of a --path-to-json-file (its text or the object read
    from it); a partition named twice is refused, as Kafka does."""
    if isinstance(text, str):
        try:
            text = json.loads(text)
        except ValueError as e:
            raise ToolError(f"{where} is not valid JSON: {e}") from None
    if not isinstance(text, dict) or "partitions" not in text:
        raise ToolError(f'Replica election data is missing "partitions" field ({where})')
    entries = text["partitions"]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ToolError(f'{where}: "partitions" must be a list of objects')
    out = []
    for e in entries:
        topic, partition = e.get("topic"), e.get("partition")
        if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
            raise ToolError(f'{where}: every entry needs "topic" (a string) and "partition" (an int), '
                            f"got {json.dumps(e)}")
        out.append((topic, partition))
    repeated = sorted({tp for tp in out if out.count(tp) > 1})
    if repeated:
        raise ToolError("Replica election data contains duplicate partitions: "
                        + ",".join(partition_name(tp) for tp in repeated))
    if not out:
        raise ToolError(f"{where} names no partition")
    return out


def election_text(election_type: str, results: dict) -> tuple[list[str], int]:
    """The lines Kafka's tool prints for ``{(topic, partition): None or error}``, and how many
    partitions failed (ELECTION_NOT_NEEDED is no failure: the right replica leads already)."""
    ok = sorted(tp for tp, e in results.items() if e is None)
    noop = sorted(tp for tp, e in results.items() if isinstance(e, errors.ElectionNotNeededError))
    failed = sorted((tp, e) for tp, e in results.items()
                    if e is not None and not isinstance(e, errors.ElectionNotNeededError))
    lines = []
    if ok:
        lines.append(f"Successfully completed leader election ({election_type}) for partitions "
                     + ", ".join(map(partition_name, ok)))
    if noop:
        lines.append("Valid replica already elected for partitions " + ", ".join(map(partition_name, noop)))
    lines += [f"Error completing leader election ({election_type}) for partition: {partition_name(tp)}: "
              f"{e} ({e.name})" for tp, e in failed]
    return lines, len(failed)


def main(argv: list[str]) -> int:
    return run(lambda: _run(parse_args(argv)), "fastkafka leader-election")


def _run(args) -> int:
    if args.path_to_json_file is not None:
        partitions = parse_election_json(read_json(args.path_to_json_file, "election file"),
                                         f"the election file {args.path_to_json_file}")
    elif args.topic is not None:
        partitions = [(args.topic, args.partition)]
    else:
        partitions = None
    with AdminClient(client_config(args)) as admin:
        try:
            results = admin.elect_leaders(ELECTION_TYPES[args.election_type], partitions)
        except errors.ClusterAuthorizationFailedError:
            raise ToolError("Not authorized to perform leader election (CLUSTER_AUTHORIZATION_FAILED)") from None
    lines, failed = election_text(args.election_type, results)
    for line in lines:
        print(line)
    if failed:
        raise ToolError(f"{failed} replica(s) could not be elected")
    return 0
