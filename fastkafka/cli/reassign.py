"""``fastkafka reassign``: move partitions between brokers, like ``kafka-reassign-partitions.sh``.

``--generate`` proposes an assignment of some topics over a list of brokers, ``--execute`` starts
the moves a reassignment file describes (AlterPartitionReassignments, KIP-455) after printing
the current assignment to roll back to, ``--verify`` tells which moves have finished,
``--cancel`` stops the ones still under way and ``--list`` shows every move under way. The
files are Kafka's::

    >>> plan = parse_reassignment_json('{"version": 1, "partitions": ['
    ...     '{"topic": "orders", "partition": 0, "replicas": [2, 3]}]}')
    >>> plan
    {('orders', 0): [2, 3]}
    >>> print(reassignment_json(plan))
    {"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3],"log_dirs":["any","any"]}]}
    >>> parse_topics_json('{"version": 1, "topics": [{"topic": "orders"}, {"topic": "pay"}]}')
    ['orders', 'pay']

and so are the lines ``--verify`` and ``--list`` print::

    >>> print(status_text({("orders", 0): ([2, 3], [2, 3], True), ("orders", 1): ([3, 1, 2], [3, 1], False),
    ...                    ("orders", 2): ([1, 2], [2, 1], True)}))
    Status of partition reassignment:
    Reassignment of partition orders-0 is completed.
    Reassignment of partition orders-1 is still in progress.
    There is no active reassignment of partition orders-2, but replica set is 1,2 rather than 2,1.
    >>> print(ongoing_text({("orders", 1): ([3, 1, 2], [3], [2])}))
    Current partition reassignments:
    orders-1: replicas: 3,1,2. adding: 3. removing: 2.

``--execute --throttle RATE`` throttles the moves as Kafka's tool does (KIP-73): the moving
partitions' current replicas are throttled leaders, the added ones throttled followers, and
every broker involved gets the rate; ``--verify`` (or ``--cancel``) clears it all once the
file's partitions have moved (other moves may go on), unless ``--preserve-throttles``::

    >>> throttled_replicas({("orders", 0): [1, 2], ("orders", 1): [2, 3]},
    ...                    {("orders", 0): [2, 3], ("orders", 1): [2, 3]})
    {'orders': ('0:1,0:2', '0:3')}
"""
from __future__ import annotations

import argparse
import json

from fastkafka import errors
from fastkafka.client.admin import BROKER_RESOURCE, AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser
from fastkafka.cluster.assignment import assign_replicas

__all__ = ["main", "parse_args", "parse_topics_json", "parse_reassignment_json", "reassignment_json",
           "propose", "status_text", "ongoing_text", "read_json", "partition_name", "throttled_replicas"]

EPILOG = """examples:
  fastkafka reassign --generate --topics-to-move-json-file topics.json --broker-list 1,2,3
  fastkafka reassign --execute --reassignment-json-file reassignment.json
  fastkafka reassign --execute --reassignment-json-file reassignment.json --throttle 50000000
  fastkafka reassign --list
  fastkafka reassign --verify --reassignment-json-file reassignment.json
  fastkafka reassign --cancel --reassignment-json-file reassignment.json

topics.json names the topics to move: {"version":1,"topics":[{"topic":"orders"}]}.
reassignment.json gives each partition's new replicas, the first the preferred leader:
{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3]}]}
(--generate prints one, --execute the one to roll back to). --verify exits 0 whether or not
the moves have finished, as Kafka's tool does: read its lines; once the file's partitions have
moved it removes the throttles --throttle set (the topics' *.replication.throttled.replicas and every
broker's *.replication.throttled.rate), unless --preserve-throttles. --replica-alter-log-dirs-throttle
is refused, and so are "log_dirs" other than "any" (moves between one broker's log directories
are not supported). A client that is not PLAINTEXT takes its settings from --command-config FILE."""

ACTIONS = ("generate", "execute", "verify", "cancel", "list")
# what each action needs, and what else it accepts (Kafka's rules)
REQUIRED = {"generate": ("topics_to_move_json_file", "broker_list"), "execute": ("reassignment_json_file",),
            "verify": ("reassignment_json_file",), "cancel": ("reassignment_json_file",), "list": ()}
ALLOWED = {"generate": ("disable_rack_aware",),
           "execute": ("additional", "throttle", "replica_alter_log_dirs_throttle"),
           "verify": ("preserve_throttles",), "cancel": ("preserve_throttles",), "list": ()}
ANY_LOG_DIR = "any"
THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
CANNOT_EXECUTE = ("Cannot execute because there is an existing partition assignment.  Use --additional to "
                  "override this and create a new partition assignment in addition to the existing one.")


def _parser():
    p = tool_parser("fastkafka reassign", "Move topic partitions between brokers "
                    "(kafka-reassign-partitions.sh).", EPILOG)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--generate", action="store_true",
                        help="propose an assignment of --topics-to-move-json-file over --broker-list (changes nothing)")
    action.add_argument("--execute", action="store_true", help="start the reassignment of --reassignment-json-file")
    action.add_argument("--verify", action="store_true",
                        help="tell whether the reassignment of --reassignment-json-file has finished")
    action.add_argument("--cancel", action="store_true",
                        help="cancel the reassignments of --reassignment-json-file still under way")
    action.add_argument("--list", action="store_true", help="list every partition reassignment under way")
    p.add_argument("--reassignment-json-file", metavar="FILE",
                   help='{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}')
    p.add_argument("--topics-to-move-json-file", metavar="FILE", help='{"version":1,"topics":[{"topic":"t"}]}')
    p.add_argument("--broker-list", metavar="1,2,3", help="with --generate: the brokers to spread the topics over")
    p.add_argument("--disable-rack-aware", action="store_true",
                   help="with --generate: ignore the brokers' broker.rack")
    p.add_argument("--additional", action="store_true",
                   help="with --execute: start even though other reassignments are under way")
    p.add_argument("--throttle", type=int, metavar="BYTES/S",
                   help="with --execute: move the partitions at most this fast (bytes/s per broker; "
                   "none when left out or negative, as Kafka's -1)")
    p.add_argument("--replica-alter-log-dirs-throttle", type=int, metavar="BYTES/S", help="not supported")
    p.add_argument("--preserve-throttles", action="store_true",
                   help="with --verify or --cancel: leave the throttles in place")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line, checked as kafka-reassign-partitions.sh checks it (ToolError says what
    is wrong)."""
    args = _parser().parse_args(argv)
    args.action = next(a for a in ACTIONS if getattr(args, a))
    for name in REQUIRED[args.action]:
        if getattr(args, name) is None:
            raise ToolError(f"--{args.action} needs --{name.replace('_', '-')}")
    options = {n for names in (*REQUIRED.values(), *ALLOWED.values()) for n in names}
    given = {n for n in options if getattr(args, n) not in (None, False)}
    extra = sorted(given - set(REQUIRED[args.action]) - set(ALLOWED[args.action]))
    if extra:
        raise ToolError(f"option --{extra[0].replace('_', '-')} can't be used with --{args.action}")
    if args.replica_alter_log_dirs_throttle is not None:
        raise ToolError("--replica-alter-log-dirs-throttle is not supported: replicas do not move between "
                        "one broker's log directories")
    return args


def read_json(path: str, what: str):
    """The JSON object in ``path`` (ToolError if it cannot be read or is not one)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ToolError(f"cannot read the {what} {path}: {e.strerror or e}") from None
    return _json_object(text, f"the {what} {path}")


def _json_object(text: str, where: str) -> dict:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ToolError(f"{where} is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ToolError(f"{where} must hold a JSON object")
    version = doc.get("version", 1)
    if version != 1:
        raise ToolError(f"{where}: Not supported version field value {version}")
    return doc


def _entries(doc: dict, key: str, where: str) -> list[dict]:
    entries = doc.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ToolError(f'{where}: "{key}" must be a list of objects')
    return entries


def _field(entry: dict, key: str, kind, where: str):
    value = entry.get(key)
    ok = isinstance(value, kind) and not isinstance(value, bool) if kind is int else isinstance(value, kind)
    if not ok:
        raise ToolError(f'{where}: every entry needs "{key}" ({kind.__name__}), got {json.dumps(entry)}')
    return value


def partition_name(tp: tuple[str, int]) -> str:
    """A partition as Kafka's tools print it: ``orders-0``."""
    return f"{tp[0]}-{tp[1]}"


def parse_topics_json(text: str | dict, where: str = "the topics file") -> list[str]:
    """The topics of a --topics-to-move-json-file (its text, or the object read from it): no
    duplicates, at least one."""
    doc = text if isinstance(text, dict) else _json_object(text, where)
    topics = [_field(e, "topic", str, where) for e in _entries(doc, "topics", where)]
    repeated = sorted({t for t in topics if topics.count(t) > 1})
    if repeated:
        raise ToolError(f"List of topics to reassign contains duplicate entries: {', '.join(repeated)}")
    if not topics:
        raise ToolError(f'{where} names no topic: {{"version":1,"topics":[{{"topic":"orders"}}]}}')
    return topics


def parse_reassignment_json(text: str | dict, where: str = "the reassignment file") -> dict[tuple[str, int], list[int]]:
    """``{(topic, partition): replicas}`` of a --reassignment-json-file, refused as Kafka refuses
    it (empty, a partition twice, a broker twice in one list) and when it moves replicas between
    log directories (``log_dirs`` other than "any"), which is not supported."""
    doc = text if isinstance(text, dict) else _json_object(text, where)
    out: dict[tuple[str, int], list[int]] = {}
    repeated = []
    for e in _entries(doc, "partitions", where):
        tp = (_field(e, "topic", str, where), _field(e, "partition", int, where))
        replicas = _field(e, "replicas", list, where)
        if not all(isinstance(r, int) and not isinstance(r, bool) for r in replicas):
            raise ToolError(f'{where}: "replicas" of {partition_name(tp)} must be broker ids, got {replicas}')
        log_dirs = e.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise ToolError(f"Size of replicas list {replicas} is different from size of log dirs list "
                            f"{log_dirs} for partition {partition_name(tp)}")
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise ToolError(f"{partition_name(tp)}: moving replicas between log directories (log_dirs "
                            f"{log_dirs}) is not supported: give \"any\" or leave log_dirs out")
        if tp in out:
            repeated.append(partition_name(tp))
        out[tp] = replicas
    if not out:
        raise ToolError("Partition reassignment list cannot be empty")
    if repeated:
        raise ToolError(f"Partition reassignment contains duplicate topic partitions: {','.join(repeated)}")
    if any(not r for r in out.values()):
        raise ToolError("Partition replica list cannot be empty")
    twice = [f"{partition_name(tp)} contains multiple entries for "
             + ",".join(str(b) for b in sorted({b for b in r if r.count(b) > 1}))
             for tp, r in out.items() if len(set(r)) != len(r)]
    if twice:
        raise ToolError(f"Partition replica lists may not contain duplicate entries: {'. '.join(twice)}")
    return out


def reassignment_json(assignment: dict[tuple[str, int], list[int]]) -> str:
    """``assignment`` as the one-line JSON Kafka's tool prints (partitions in order)."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r), "log_dirs": [ANY_LOG_DIR] * len(r)}
        for (t, p), r in sorted(assignment.items())]}, separators=(",", ":"))


def propose(current: dict[tuple[str, int], list[int]], brokers) -> dict[tuple[str, int], list[int]]:
    """Each topic of ``current`` spread over ``brokers`` (ids, or ``{id: rack}`` to place the
    copies of a partition on different racks) by the rules new topics follow, keeping its
    partition count and replication factor (that of its first partition, as Kafka does)."""
    by_topic: dict[str, dict[int, list[int]]] = {}
    for (t, p), replicas in sorted(current.items()):
        by_topic.setdefault(t, {})[p] = replicas
    out = {}
    for topic, parts in by_topic.items():
        rf = len(parts[min(parts)])
        for p, replicas in assign_replicas(brokers, len(parts), rf).items():
            out[(topic, p)] = list(replicas)
    return out


def status_text(states: dict[tuple[str, int], tuple[list[int], list[int], bool]]) -> str:
    """What --verify prints: per partition ``(current replicas, target replicas, finished)``."""
    lines = ["Status of partition reassignment:"]
    for tp, (current, target, done) in sorted(states.items()):
        name = partition_name(tp)
        if not done:
            lines.append(f"Reassignment of partition {name} is still in progress.")
        elif list(current) == list(target):
            lines.append(f"Reassignment of partition {name} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {name}, but replica set is "
                         f"{','.join(map(str, current))} rather than {','.join(map(str, target))}.")
    return "\n".join(lines)


def ongoing_text(ongoing: dict[tuple[str, int], tuple[list[int], list[int], list[int]]]) -> str:
    """What --list prints for ``{(topic, partition): (replicas, adding, removing)}``."""
    if not ongoing:
        return "No partition reassignments found."
    lines = ["Current partition reassignments:"]
    for tp, (replicas, adding, removing) in sorted(ongoing.items()):
        line = f"{partition_name(tp)}: replicas: {','.join(map(str, replicas))}."
        line += f" adding: {','.join(map(str, adding))}." if adding else ""
        line += f" removing: {','.join(map(str, removing))}." if removing else ""
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    return run(lambda: _run(parse_args(argv)), "fastkafka reassign")


def _run(args) -> int:
    # the files first: a mistake in them is reported before anything is asked of the cluster
    if args.action == "generate":
        topics = parse_topics_json(read_json(args.topics_to_move_json_file, "topics file"),
                                   f"the topics file {args.topics_to_move_json_file}")
        brokers = _broker_list(args.broker_list)
    elif args.reassignment_json_file:
        plan = parse_reassignment_json(read_json(args.reassignment_json_file, "reassignment file"),
                                       f"the reassignment file {args.reassignment_json_file}")
    with AdminClient(client_config(args, **{"client.id": "reassign-partitions-tool"})) as admin:
        if args.action == "generate":
            _generate(admin, topics, brokers, rack_aware=not args.disable_rack_aware)
        elif args.action == "execute":
            _execute(admin, plan, args.additional, args.throttle)
        elif args.action == "verify":
            states = _states(admin, plan)
            print(status_text(states))
            # Kafka's verifyAssignment: once the file's own moves are done, whatever else is moving
            if not args.preserve_throttles and all(done for _c, _t, done in states.values()):
                _clear_throttles(admin, plan)
        elif args.action == "cancel":
            _cancel(admin, plan)
            if not args.preserve_throttles:
                _clear_throttles(admin, plan)
        else:
            print(ongoing_text(admin.list_partition_reassignments()))
    return 0


def _broker_list(text: str) -> list[int]:
    try:
        ids = [int(b) for b in text.split(",")]
    except ValueError:
        raise ToolError(f"--broker-list must be broker ids separated by commas, e.g. 1,2,3; got {text!r}") from None
    repeated = sorted({b for b in ids if ids.count(b) > 1})
    if repeated:
        raise ToolError(f"Broker list contains duplicate entries: {', '.join(map(str, repeated))}")
    return ids


def _live_brokers(admin: AdminClient, wanted, what: str) -> dict:
    """The live brokers (``{id: BrokerInfo}``); ToolError naming the first of ``wanted`` that is not."""
    live = admin.describe_cluster()
    unknown = [b for b in wanted if b not in live]
    if unknown:
        raise ToolError(f"Unknown broker id {unknown[0]} in {what}: the live brokers are "
                        + ",".join(map(str, live)))
    return live


def _replicas(admin: AdminClient, topics) -> dict[tuple[str, int], list[int]]:
    """The current replicas of every partition of ``topics``."""
    out = {}
    for topic in dict.fromkeys(topics):
        try:
            info = admin.describe_topics([topic])[topic]
        except errors.UnknownTopicOrPartitionError:
            raise errors.UnknownTopicOrPartitionError(f"Topic {topic} not found.") from None
        out.update({(topic, p): list(info.partitions[p].replicas) for p in sorted(info.partitions)})
    return out


def _generate(admin: AdminClient, topics: list[str], broker_ids: list[int], rack_aware: bool) -> None:
    current = _replicas(admin, topics)
    live = _live_brokers(admin, broker_ids, "--broker-list")
    racks = {b: live[b].rack for b in broker_ids}
    with_rack = [b for b, rack in racks.items() if rack]
    if rack_aware and with_rack and len(with_rack) != len(racks):
        raise ToolError("Not all brokers have rack information. Add --disable-rack-aware in command line "
                        "to make replica assignment without rack information.")
    proposed = propose(current, racks if rack_aware and with_rack else broker_ids)
    print(f"Current partition replica assignment\n{reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{reassignment_json(proposed)}")


def throttled_replicas(current: dict, plan: dict) -> dict[str, tuple[str, str]]:
    """Per topic of ``plan``, the values of ``leader.replication.throttled.replicas`` and
    ``follower.replication.throttled.replicas`` for its moves (Kafka's tool: a moving
    partition's current replicas lead, the replicas it adds follow)."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for (t, p), target in sorted(plan.items()):
        now = current[(t, p)]
        if list(now) == list(target):
            continue
        leaders.setdefault(t, []).extend(f"{p}:{b}" for b in now)
        followers.setdefault(t, []).extend(f"{p}:{b}" for b in target if b not in now)
    return {t: (",".join(leaders[t]), ",".join(followers.get(t, []))) for t in leaders}


def _throttle(admin: AdminClient, current: dict, plan: dict, rate: int) -> None:
    for topic, lists in throttled_replicas(current, plan).items():
        admin.alter_configs(topic, dict(zip(THROTTLED_REPLICAS, lists)))
    brokers = sorted({b for tp, target in plan.items() for b in (*current[tp], *target)})
    for b in brokers:
        admin.alter_configs(str(b), dict.fromkeys(THROTTLE_RATES, str(rate)), resource_type=BROKER_RESOURCE)
    print("Warning: You must run --verify periodically, until the reassignment completes, to ensure "
          "the throttle is removed.")
    print(f"The inter-broker throttle limit was set to {rate} B/s")


def _clear_throttles(admin: AdminClient, plan: dict) -> None:
    """Kafka's clearAllThrottles: the rates on every live broker, the lists on the plan's topics."""
    brokers = sorted(set(admin.describe_cluster()) | {b for target in plan.values() for b in target})
    print(f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
          + ",".join(map(str, brokers)))
    for b in brokers:
        admin.alter_configs(str(b), delete=list(THROTTLE_RATES), resource_type=BROKER_RESOURCE)
    topics = sorted({t for t, _ in plan})
    print(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(topics)}")
    for topic in topics:
        admin.alter_configs(topic, delete=list(THROTTLED_REPLICAS))


def _execute(admin: AdminClient, plan: dict, additional: bool, throttle: int | None = None) -> None:
    if not additional and admin.list_partition_reassignments():
        raise ToolError(CANNOT_EXECUTE)
    _live_brokers(admin, sorted({b for replicas in plan.values() for b in replicas}), "the reassignment file")
    current = _replicas(admin, [t for t, _ in plan])
    missing = [partition_name(tp) for tp in plan if tp not in current]
    if missing:
        raise errors.UnknownTopicOrPartitionError(f"Unable to find partition: {', '.join(missing)}")
    print("Current partition replica assignment\n\n"
          f"{reassignment_json({tp: current[tp] for tp in plan})}\n\n"
          "Save this to use as the --reassignment-json-file option during rollback")
    if throttle is not None and throttle >= 0:
        _throttle(admin, current, plan, throttle)
    _refused("Error reassigning partition(s):", admin.alter_partition_reassignments(plan))
    print(f"Successfully started partition reassignment{'' if len(plan) == 1 else 's'} for "
          + ",".join(partition_name(tp) for tp in sorted(plan)))


def _refused(header: str, results: dict) -> None:
    failed = {tp: e for tp, e in results.items() if e is not None}
    if failed:
        raise ToolError("\n".join([header] + [f"{partition_name(tp)}: {e} ({e.name})"
                                              for tp, e in sorted(failed.items())]))


def _states(admin: AdminClient, plan: dict) -> dict:
    """Per partition of ``plan``: (current replicas, target replicas, finished?)."""
    ongoing = admin.list_partition_reassignments()
    done = [tp for tp in plan if tp not in ongoing]
    current = _replicas(admin, [t for t, _ in done]) if done else {}
    return {tp: (ongoing[tp][0], target, False) if tp in ongoing else (current.get(tp, []), target, True)
            for tp, target in plan.items()}


def _cancel(admin: AdminClient, plan: dict) -> None:
    under_way = sorted(admin.list_partition_reassignments(list(plan)))
    if not under_way:
        print("None of the specified partition reassignments are active.")
        return
    results = admin.alter_partition_reassignments(dict.fromkeys(under_way))
    # one that completed between the listing and the cancel is no failure: there is nothing left to stop
    finished = sorted(tp for tp, e in results.items() if isinstance(e, errors.NoReassignmentInProgressError))
    _refused(f"Error cancelling partition reassignment{'' if len(under_way) == 1 else 's'} for:",
             {tp: e for tp, e in results.items() if tp not in finished})
    cancelled = [tp for tp in under_way if tp not in finished]
    if cancelled:
        print(f"Successfully cancelled partition reassignment{'' if len(cancelled) == 1 else 's'} for: "
              + ",".join(partition_name(tp) for tp in cancelled))
    for tp in finished:
        print(f"Reassignment of partition {partition_name(tp)} completed before it could be cancelled.")
