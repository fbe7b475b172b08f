"""``fastkafka groups``: list consumer groups, describe one with its lag, reset its offsets.

Example::

    $ fastkafka groups list
    $ fastkafka groups describe billing
    $ fastkafka groups reset-offsets billing --topic orders --to-earliest             # the plan only
    $ fastkafka groups reset-offsets billing --topic orders --to-earliest --execute   # commit it

``reset-offsets`` follows Kafka's ``kafka-consumer-groups.sh --reset-offsets``: it prints the plan
(GROUP TOPIC PARTITION NEW-OFFSET) and commits it only with ``--execute``; the group must be
inactive (Empty, or Dead: it has no members); an unknown topic is an error (it is never
created); a requested offset outside [log start, log end] is clamped to it, with a warning.
"""
from __future__ import annotations

import sys

from fastkafka import errors
from fastkafka.client.admin import AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser, tool_subparsers

EPILOG = """examples:
  fastkafka groups list
  fastkafka groups describe billing            # members, committed offsets and lag
  fastkafka groups reset-offsets billing --topic orders --to-earliest      # prints the plan
  fastkafka groups reset-offsets billing --topic orders --to-earliest --execute
  fastkafka groups reset-offsets billing --topic orders --to-offset 100 --partition 0 --execute
  fastkafka groups reset-offsets billing --topic orders --shift-by -10 --dry-run

reset-offsets prints the new offsets and commits them only with --execute. Offsets can be
reset only while the group has no running members; offsets past the log end (or before the
log start) are clamped to it."""


def _parser():
    p = tool_parser("fastkafka groups", "List, describe and reset consumer groups.", EPILOG)
    sub = tool_subparsers(p)
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
    to.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (may be < 0)")
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
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
            try:
                latest[t] = admin.list_offsets(t, -1)
            except errors.UnknownTopicOrPartitionError:   # deleted since: no log end, no lag
                latest[t] = {}
        end = latest[t].get(p, -1)
        print(f"{t}\t{p}\t{off}\t{end}\t{max(end - off, 0) if end >= 0 else '-'}")


# the states in which a group has no members whose commits would overwrite the reset (Kafka's)
_INACTIVE = ("Empty", "Dead")


def _inactive_error(group: str, state: str) -> ToolError:
    return ToolError(f"Assignments can only be reset if the group '{group}' is inactive, "
                     f"but the current state is {state}.")


def _clamp(topic: str, wanted: dict[int, int], start: dict[int, int], end: dict[int, int]
           ) -> dict[int, int]:
    """Kafka's checkOffsetsRange: a requested offset outside [log start, log end] becomes the
    nearer bound (a consumer starting there would otherwise hit OFFSET_OUT_OF_RANGE)."""
    out = {}
    for p, off in wanted.items():
        if off > end[p]:
            print(f"WARN: New offset ({off}) is higher than latest offset for topic partition "
                  f"{topic}-{p}. Value will be set to {end[p]}", file=sys.stderr)
            off = end[p]
        elif off < start[p]:
            print(f"WARN: New offset ({off}) is lower than earliest offset for topic partition "
                  f"{topic}-{p}. Value will be set to {start[p]}", file=sys.stderr)
            off = start[p]
        out[p] = off
    return out


def _plan(admin: AdminClient, args, parts: list[int]) -> dict[int, int]:
    """The new offset of each partition in ``parts``."""
    start = admin.list_offsets(args.topic, -2)
    end = admin.list_offsets(args.topic, -1)
    if args.to_earliest:
        return {p: start[p] for p in parts}
    if args.to_latest:
        return {p: end[p] for p in parts}
    if args.to_datetime is not None:
        found = admin.list_offsets(args.topic, args.to_datetime)
        out = {}
        for p in parts:
            if found[p] < 0:     # no record at or after that time: the log end, as Kafka does
                print(f"WARN: partition {p} of topic {args.topic} has no record at or after "
                      f"{args.to_datetime}: falling back to its log end offset", file=sys.stderr)
            out[p] = found[p] if found[p] >= 0 else end[p]
        return out
    if args.shift_by is not None:
        committed = admin.committed_offsets(args.group, {args.topic: parts})
        missing = [p for p in parts if (args.topic, p) not in committed]
        if missing:
            raise ToolError(f"cannot shift the offset of {args.topic}-{missing[0]}: "
                            f"group '{args.group}' has no committed offset for it")
        wanted = {p: committed[args.topic, p] + args.shift_by for p in parts}
    else:
        wanted = {p: args.to_offset for p in parts}
    return _clamp(args.topic, wanted, start, end)


def _reset(admin: AdminClient, args) -> None:
    state = admin.describe_group(args.group).group_state
    if state not in _INACTIVE:
        raise _inactive_error(args.group, state)
    try:
        parts = admin.partitions(args.topic)     # never auto-creates the topic
    except errors.UnknownTopicOrPartitionError:
        raise ToolError(f"topic '{args.topic}' does not exist") from None
    if args.partition is not None:
        if args.partition not in parts:
            raise ToolError(f"topic '{args.topic}' has no partition {args.partition}")
        parts = [args.partition]
    targets = _plan(admin, args, parts)
    if args.execute:
        try:
            admin.commit_offsets(args.group, {(args.topic, p): off for p, off in targets.items()})
        except (errors.UnknownMemberIdError, errors.IllegalGenerationError,
                errors.RebalanceInProgressError):
            # a member joined between the state check and the commit
            raise _inactive_error(args.group, admin.describe_group(args.group).group_state) from None
    print("GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
    for p, off in sorted(targets.items()):
        print(f"{args.group}\t{args.topic}\t{p}\t{off}")
    if not (args.execute or args.dry_run):
        print("(dry run: nothing was committed; add --execute to commit these offsets)",
              file=sys.stderr)
