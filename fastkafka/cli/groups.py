"""``fastkafka groups``: list consumer groups, describe one with its lag, reset its offsets.

Example::

    $ fastkafka groups list
    $ fastkafka groups describe billing
    $ fastkafka groups reset-offsets billing --topic orders --to-earliest
"""
from __future__ import annotations

from fastkafka.client.admin import AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser

EPILOG = """examples:
  fastkafka groups list
  fastkafka groups describe billing            # members, committed offsets and lag
  fastkafka groups reset-offsets billing --topic orders --to-earliest
  fastkafka groups reset-offsets billing --topic orders --to-offset 100 --partition 0

Offsets can be reset only while the group has no running members."""


def _parser():
    p = tool_parser("fastkafka groups", "List, describe and reset consumer groups.", EPILOG)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub.add_parser("list", help="list groups")
    d = sub.add_parser("describe", help="state, members, committed offsets and lag")
    d.add_argument("group")
    r = sub.add_parser("reset-offsets", help="set a group's committed offsets")
    r.add_argument("group")
    r.add_argument("--topic", required=True)
    r.add_argument("--partition", type=int, help="only this partition")
    to = r.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int)
    to.add_argument("--to-datetime", type=int, metavar="MS", help="first offset at/after epoch ms")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return run(lambda: _run(args), "fastkafka groups")


def _run(args) -> int:
    with AdminClient(client_config(args)) as admin:
        if args.action == "list":
            for group, ptype in admin.list_groups():
                print(f"{group}\t{ptype or '-'}")
        elif args.action == "describe":
            _describe(admin, args.group)
        else:
            _reset(admin, args)
    return 0


def _describe(admin: AdminClient, group: str) -> None:
    g = admin.describe_group(group)
    print(f"Group: {group}\tState: {g.group_state}\tProtocol: {g.protocol_data or '-'}\t"
          f"Members: {len(g.members)}")
    for m in g.members:
        print(f"\tMember: {m.member_id}\tClient: {m.client_id}\tHost: {m.client_host}")
    committed = admin.committed_offsets(group)
    latest: dict[str, dict[int, int]] = {}
    print("TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG")
    for (t, p), off in sorted(committed.items()):
        if t not in latest:
            latest[t] = admin.list_offsets(t, -1)
        end = latest[t].get(p, -1)
        print(f"{t}\t{p}\t{off}\t{end}\t{max(end - off, 0) if end >= 0 else '-'}")


def _reset(admin: AdminClient, args) -> None:
    parts = admin.cluster.partitions_for(args.topic)
    if args.partition is not None:
        if args.partition not in parts:
            raise ToolError(f"{args.topic} has no partition {args.partition}")
        parts = [args.partition]
    if args.to_offset is not None:
        targets = {p: args.to_offset for p in parts}
    else:
        ts = -2 if args.to_earliest else -1 if args.to_latest else args.to_datetime
        found = admin.list_offsets(args.topic, ts)
        end = admin.list_offsets(args.topic, -1) if ts >= 0 else found
        targets = {p: found[p] if found[p] >= 0 else end[p] for p in parts}
    admin.commit_offsets(args.group, {(args.topic, p): off for p, off in targets.items()})
    for p, off in sorted(targets.items()):
        print(f"{args.group}\t{args.topic}\t{p}\t{off}")
