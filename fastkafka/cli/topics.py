"""``fastkafka topics``: create, list, describe, delete topics, add partitions, show configs.

Example::

    $ fastkafka topics create orders --partitions 3 --config retention.ms=60000
    $ fastkafka topics list
    $ fastkafka topics describe orders
    $ fastkafka topics describe --under-replicated-partitions
    $ fastkafka topics add-partitions orders --partitions 6
    $ fastkafka topics configs orders
    $ fastkafka topics delete orders

kafka-topics.sh's spelling works too, so its scripts and habits carry over::

    $ fastkafka topics --bootstrap-server 127.0.0.1:9092 --create --topic orders --partitions 3 \
          --replication-factor 1 --config retention.ms=60000
    $ fastkafka topics --alter --topic orders --partitions 6
    $ fastkafka topics --describe --topic orders
    $ fastkafka topics --delete --topic orders
"""
from __future__ import annotations

from fastkafka.client.admin import AdminClient
from fastkafka.uuids import uuid_text
from fastkafka.client.tools import client_config, parse_pairs, run, tool_parser, tool_subparsers

EPILOG = """examples:
  fastkafka topics create orders --partitions 3 --config retention.ms=60000
  fastkafka topics list
  fastkafka topics describe orders
  fastkafka topics describe --under-replicated-partitions
  fastkafka topics add-partitions orders --partitions 6
  fastkafka topics configs orders
  fastkafka topics --describe --topic orders
  fastkafka topics delete orders

kafka-topics.sh's spelling works too: --create, --alter --partitions, --describe, --list and
--delete, each with --topic.

Configs change at run time with `fastkafka configs`; its --help lists the topic configs that are
accepted but change nothing yet."""


def _parser():
    p = tool_parser("fastkafka topics", "Create, list, describe and delete topics.", EPILOG)
    sub = tool_subparsers(p)
    c = sub.add_parser("create", help="create a topic")
    c.add_argument("topic")
    c.add_argument("-p", "--partitions", type=int, default=1, help="number of partitions (default 1)")
    c.add_argument("-r", "--replication-factor", type=int, default=1)
    c.add_argument("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                   help="topic config override, e.g. cleanup.policy=compact (repeatable)")
    c.add_argument("--if-not-exists", action="store_true", help="no error if it exists")
    sub.add_parser("list", help="list topic names").add_argument(
        "--internal", action="store_true", help="include internal topics")
    d = sub.add_parser("describe", help="partitions, leaders, replicas and offsets")
    d.add_argument("topics", nargs="*", help="topics (default: all)")
    d.add_argument("--under-replicated-partitions", action="store_true",
                   help="only partitions whose ISR is smaller than their replica list")
    d.add_argument("--unavailable-partitions", action="store_true", help="only partitions without a leader")
    x = sub.add_parser("delete", help="delete topics")
    x.add_argument("topics", nargs="+")
    a = sub.add_parser("add-partitions", help="grow a topic to --partitions partitions")
    a.add_argument("topic")
    a.add_argument("-p", "--partitions", type=int, required=True, help="new total")
    g = sub.add_parser("configs", help="show a topic's configuration")
    g.add_argument("topic")
    g.add_argument("--all", action="store_true", help="include defaults")
    return p


_KAFKA_ACTIONS = {"--create": "create", "--list": "list", "--describe": "describe", "--delete": "delete",
                  "--alter": "add-partitions"}


def kafka_style(argv: list[str]) -> list[str]:
    """kafka-topics.sh's arguments (``--create --topic t ...``) in this tool's (``create t ...``);
    others unchanged.

    >>> kafka_style(["--bootstrap-server", "h:9092", "--create", "--topic", "t", "--partitions", "2"])
    ['--bootstrap-server', 'h:9092', 'create', 't', '--partitions', '2']
    >>> kafka_style(["--describe", "--topic", "a", "--topic", "b"]), kafka_style(["list"])
    (['describe', 'a', 'b'], ['list'])
    """
    actions = [a for a in argv if a in _KAFKA_ACTIONS]
    if len(actions) != 1:
        return argv
    common, rest, topics = [], [], []
    it = iter(argv)
    for a in it:
        if a in ("-b", "--bootstrap-server", "-X", "--property", "--command-config"):
            common += [a, next(it, "")]
        elif a == "--topic":
            topics.append(next(it, ""))
        elif a != actions[0]:
            rest.append(a)
    return common + [_KAFKA_ACTIONS[actions[0]]] + topics + rest


def main(argv: list[str]) -> int:
    args = _parser().parse_args(kafka_style(argv))
    return run(lambda: _run(args), "fastkafka topics")


def _every(_p) -> bool:
    return True


def _partition_filter(args):
    """kafka-topics' --under-replicated-partitions / --unavailable-partitions."""
    if args.under_replicated_partitions:
        return lambda p: len(p.isr) < len(p.replicas)
    if args.unavailable_partitions:
        return lambda p: p.leader < 0
    return _every


def _run(args) -> int:
    from fastkafka import errors
    with AdminClient(client_config(args)) as admin:
        if args.action == "create":
            try:
                admin.create_topic(args.topic, args.partitions, args.replication_factor,
                                   dict(parse_pairs(args.config, "--config")))
            except errors.TopicAlreadyExistsError:
                if not args.if_not_exists:
                    raise
            print(f"Created topic {args.topic}.")
        elif args.action == "list":
            for name in admin.list_topics(args.internal):
                print(name)
        elif args.action == "describe":
            infos = admin.describe_topics(args.topics or None)
            only = _partition_filter(args)
            for name in sorted(infos):
                t = infos[name]
                shown = [pid for pid in sorted(t.partitions) if only(t.partitions[pid])]
                if only is not _every and not shown:
                    continue
                latest = admin.list_offsets(name, -1)
                earliest = admin.list_offsets(name, -2)
                print(f"Topic: {name}\tTopicId: {uuid_text(t.topic_id)}\tPartitionCount: {len(t.partitions)}")
                for pid in shown:
                    p = t.partitions[pid]
                    print(f"\tPartition: {pid}\tLeader: {p.leader}\tReplicas: "
                          f"{','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
                          f"\tOffsets: {earliest.get(pid)}..{latest.get(pid)}")
        elif args.action == "delete":
            admin.delete_topics(args.topics)
            print(f"Deleted {', '.join(args.topics)}.")
        elif args.action == "add-partitions":
            admin.create_partitions(args.topic, args.partitions)
            print(f"{args.topic} now has {args.partitions} partitions.")
        elif args.action == "configs":
            for name, (value, is_default, _ro) in sorted(admin.describe_configs(args.topic).items()):
                if args.all or not is_default:
                    print(f"{name}={value}" + ("  (default)" if is_default else ""))
    return 0
