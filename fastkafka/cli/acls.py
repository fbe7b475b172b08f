"""``fastkafka acls``: add, remove and list ACLs, like ``kafka-acls.sh``.

The broker must run the authorizer (``authorizer.class.name=kafka.security.authorizer.AclAuthorizer``;
without it every call answers SECURITY_DISABLED) and the tool's principal must be allowed ALTER
(``--add``, ``--remove``) or DESCRIBE (``--list``) on the cluster, e.g. be one of ``super.users``.

The ACLs a command means, printed as the tool prints them (``--producer`` and ``--consumer`` expand
to Kafka's sets of operations)::

    >>> args = parse_args(["--add", "--producer", "--idempotent", "--allow-principal", "User:alice",
    ...                    "--topic", "orders"])
    >>> for pattern, entries in resource_acls(args).items():
    ...     print(acls_text("Adding ACLs for resource", pattern, entries))
    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:
        (principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)
        (principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)
        (principal=User:alice, host=*, operation=CREATE, permissionType=ALLOW)
    <BLANKLINE>
    Adding ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`:
        (principal=User:alice, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)
    <BLANKLINE>
"""
from __future__ import annotations

import sys

from fastkafka import errors
from fastkafka.client.admin import AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser
from fastkafka.security.acl import (CLUSTER_NAME, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                    InvalidAcl, PatternType, ResourceType, parse_principal)

__all__ = ["main", "parse_args", "resource_acls", "acls_text"]

EPILOG = """examples:
  fastkafka acls --add --allow-principal User:alice --operation Read --operation Write --topic orders
  fastkafka acls --add --allow-principal User:bob --operation Read --topic pay --resource-pattern-type prefixed
  fastkafka acls --add --allow-principal 'User:*' --deny-principal User:mallory --deny-host 10.0.0.7 --operation Describe --topic orders
  fastkafka acls --add --producer --allow-principal User:alice --topic orders --transactional-id tx-orders --idempotent
  fastkafka acls --add --consumer --allow-principal User:bob --topic orders --group billing
  fastkafka acls --add --allow-principal User:ops --operation Alter --operation Describe --cluster
  fastkafka acls --add --allow-principal User:ops --operation CreateTokens --user-principal User:etl
  fastkafka acls --add --allow-principal User:audit --operation Describe --delegation-token '*'
  fastkafka acls --list
  fastkafka acls --list --topic orders --resource-pattern-type match
  fastkafka acls --list --principal User:alice
  fastkafka acls --remove --force --allow-principal User:alice --operation Read --topic orders
  fastkafka acls --remove --force --topic pay --resource-pattern-type prefixed

A client that is not PLAINTEXT takes its settings (security.protocol, ssl.*, sasl.*) from
--command-config FILE, as Kafka's tools do. --remove asks before it deletes; with no terminal to
ask on, it needs --force."""

# what --operation accepts: every operation an ACL can name (not the filters' ANY)
OPERATIONS = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
# the roles Kafka's --producer and --consumer stand for
PRODUCER_TOPIC = (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE)
PRODUCER_TRANSACTIONAL_ID = (AclOperation.WRITE, AclOperation.DESCRIBE)
CONSUMER_TOPIC = (AclOperation.READ, AclOperation.DESCRIBE)
CONSUMER_GROUP = (AclOperation.READ,)
CLUSTER_PATTERN = (ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)


def _parser():
    p = tool_parser("fastkafka acls", "Add, remove and list ACLs (the broker needs "
                    "authorizer.class.name=kafka.security.authorizer.AclAuthorizer).", EPILOG)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument("--list", action="store_true", help="list ACLs (of the resources named, else all)")
    r = p.add_argument_group("resources")
    r.add_argument("--topic", action="append", default=[], help="a topic ('*': every topic; repeatable)")
    r.add_argument("--group", action="append", default=[], help="a consumer group ('*': every group; repeatable)")
    r.add_argument("--cluster", action="store_true", help=f"the cluster ({CLUSTER_NAME})")
    r.add_argument("--transactional-id", action="append", default=[],
                   help="a transactional id ('*': every one; repeatable)")
    r.add_argument("--delegation-token", action="append", default=[],
                   help="a delegation token id ('*': every token; repeatable)")
    r.add_argument("--user-principal", action="append", default=[], metavar="TYPE:NAME",
                   help="a user principal as the resource, e.g. of CreateTokens or DescribeTokens (repeatable)")
    r.add_argument("--resource-pattern-type", default="literal", type=str.lower,
                   choices=["literal", "prefixed", "any", "match"],
                   help="literal or prefixed (a name prefix); to --list/--remove also any (every "
                        "pattern type, the exact name) or match (every ACL that applies to the name)")
    e = p.add_argument_group("entries")
    e.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME",
                   help="principal allowed, e.g. User:alice or 'User:*' (repeatable)")
    e.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME",
                   help="principal denied; a DENY wins over any ALLOW (repeatable)")
    e.add_argument("--allow-host", action="append", default=[], help="host of --allow-principal (default *)")
    e.add_argument("--deny-host", action="append", default=[], help="host of --deny-principal (default *)")
    e.add_argument("--operation", action="append", default=[],
                   help="operation allowed or denied (repeatable, default All): "
                        + ", ".join(op.kafka_name for op in OPERATIONS))
    e.add_argument("--producer", action="store_true",
                   help="producer role: Write, Describe, Create on --topic; Write, Describe on "
                        "--transactional-id; with --idempotent IdempotentWrite on the cluster")
    e.add_argument("--idempotent", action="store_true", help="with --producer: IdempotentWrite on the cluster")
    e.add_argument("--consumer", action="store_true",
                   help="consumer role: Read, Describe on --topic; Read on --group")
    p.add_argument("--principal", action="append", default=[], metavar="TYPE:NAME",
                   help="with --list: only the ACLs of this principal (repeatable)")
    p.add_argument("--force", action="store_true", help="--remove without asking")
    return p


def parse_args(argv: list[str]):
    """The command line, checked as kafka-acls.sh checks it (ToolError says what is wrong)."""
    args = _parser().parse_args(argv)
    role = args.producer or args.consumer
    if args.list and (role or args.allow_principal or args.deny_principal or args.allow_host or args.deny_host):
        raise ToolError("--list takes no --producer, --consumer, --allow-*/--deny-* (use --principal)")
    if role and (args.operation or args.deny_principal or args.deny_host):
        raise ToolError("--producer and --consumer imply their operations: no --operation, --deny-principal "
                        "or --deny-host")
    if args.principal and not args.list:
        raise ToolError("--principal is only for --list")
    if args.producer and not args.topic:
        raise ToolError("--producer needs a --topic")
    if args.idempotent and not args.producer:
        raise ToolError("--idempotent is only for --producer")
    if args.consumer and (not args.topic or not args.group
                          or not args.producer and (args.cluster or args.transactional_id)):
        raise ToolError("--consumer needs a --topic and a --group, and no --cluster or --transactional-id")
    if args.add and args.resource_pattern_type not in ("literal", "prefixed"):
        raise ToolError(f"--resource-pattern-type {args.resource_pattern_type} only selects ACLs: "
                        "--add takes literal or prefixed")
    if args.cluster and args.resource_pattern_type == "prefixed":
        raise ToolError(f"the cluster's ACLs are literal ({CLUSTER_NAME}): --cluster takes no "
                        "--resource-pattern-type prefixed")
    if not args.list and not (args.topic or args.group or args.cluster or args.transactional_id
                              or args.delegation_token or args.user_principal):
        raise ToolError("name at least one resource: --topic, --group, --cluster, --transactional-id, "
                        "--delegation-token or --user-principal")
    for principal in args.allow_principal + args.deny_principal + args.principal + args.user_principal:
        try:
            parse_principal(principal.strip())
        except InvalidAcl as e:
            raise ToolError(f"{e}: a principal is TYPE:NAME, e.g. User:alice") from None
    return args


def _operations(names: list[str]) -> list[AclOperation]:
    out = []
    for name in names or ["All"]:
        try:
            op = AclOperation.parse(name.strip())
        except ValueError:
            op = None
        if op not in OPERATIONS:
            raise ToolError(f"unknown operation {name!r}: one of " + ", ".join(o.kafka_name for o in OPERATIONS))
        out.append(op)
    return out


def _patterns(args) -> list[tuple]:
    """The resources named, each as (type, name, pattern type)."""
    ptype = PatternType.parse(args.resource_pattern_type)
    out = [(ResourceType.TOPIC, t.strip(), ptype) for t in args.topic]
    out += [(ResourceType.GROUP, g.strip(), ptype) for g in args.group]
    if args.cluster:   # LITERAL when adding (parse_args refuses PREFIXED); ANY and MATCH select it too
        out.append((ResourceType.CLUSTER, CLUSTER_NAME, ptype))
    out += [(ResourceType.TRANSACTIONAL_ID, x, ptype) for x in args.transactional_id]
    out += [(ResourceType.DELEGATION_TOKEN, t.strip(), ptype) for t in args.delegation_token]
    out += [(ResourceType.USER, u.strip(), ptype) for u in args.user_principal]
    return list(dict.fromkeys(out))


def _entries(args, operations) -> list[tuple]:
    """(principal, host, operation, permission) for every principal x host x operation."""
    out = []
    for principals, hosts, perm in ((args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
                                    (args.deny_principal, args.deny_host, AclPermissionType.DENY)):
        for principal in principals:
            for op in operations:
                out += [(principal.strip(), host.strip(), op, perm) for host in hosts or ["*"]]
    return list(dict.fromkeys(out))


def resource_acls(args) -> dict[tuple, list[tuple]]:
    """``{(type, name, pattern type): [(principal, host, operation, permission)]}`` the command
    adds or removes (Kafka's rules: --producer and --consumer may be combined; without either
    every resource gets every --operation)."""
    patterns = _patterns(args)
    out: dict[tuple, dict] = {}

    def grant(rtype, operations, only=None):
        entries = _entries(args, operations)
        for pattern in [only] if only else [p for p in patterns if p[0] is rtype]:
            out.setdefault(pattern, {}).update(dict.fromkeys(entries))
    if args.producer:
        grant(ResourceType.TOPIC, PRODUCER_TOPIC)
        grant(ResourceType.TRANSACTIONAL_ID, PRODUCER_TRANSACTIONAL_ID)
        if args.idempotent:
            grant(ResourceType.CLUSTER, (AclOperation.IDEMPOTENT_WRITE,), only=CLUSTER_PATTERN)
    if args.consumer:
        grant(ResourceType.TOPIC, CONSUMER_TOPIC)
        grant(ResourceType.GROUP, CONSUMER_GROUP)
    if not (args.producer or args.consumer):
        entries = _entries(args, _operations(args.operation))
        out = {p: dict.fromkeys(entries) for p in patterns}
    return {p: list(e) for p, e in out.items()}


def pattern_text(rtype, name, ptype) -> str:
    """What Kafka's ResourcePattern prints."""
    return f"ResourcePattern(resourceType={rtype.name}, name={name}, patternType={ptype.name})"


def entry_text(principal, host, op, perm) -> str:
    """What Kafka's AccessControlEntry prints."""
    return f"(principal={principal}, host={host}, operation={op.name}, permissionType={perm.name})"


def acls_text(header: str, pattern: tuple, entries) -> str:
    """A resource pattern and its entries as kafka-acls.sh prints them (one tab-indented entry a line)."""
    return "\n".join([f"{header} `{pattern_text(*pattern)}`:"] + ["\t" + entry_text(*e) for e in entries]) + "\n"


def main(argv: list[str]) -> int:
    return run(lambda: _run(parse_args(argv)), "fastkafka acls")


def _run(args) -> int:
    # Refuse before anything is deleted: a prompt nobody can answer would hang (a pipe) or fail
    # half way through the resources.
    if args.remove and not args.force and not (sys.stdin and sys.stdin.isatty()):
        raise ToolError("--remove asks before it deletes and stdin is not a terminal: add --force")
    acls = {} if args.list else resource_acls(args)
    if args.add and any(not entries for entries in acls.values()):
        raise ToolError("--add needs --allow-principal or --deny-principal")
    with AdminClient(client_config(args)) as admin:
        try:
            if args.add:
                for pattern, entries in acls.items():
                    print(acls_text("Adding ACLs for resource", pattern, entries))
                    admin.create_acls(AclBinding(*pattern, *e) for e in entries)
            elif args.remove:
                for pattern, entries in acls.items():
                    if _confirmed(args, pattern, entries):
                        admin.delete_acls([AclBindingFilter(*pattern, *e) for e in entries]
                                          or [AclBindingFilter(*pattern)])
            _list(admin, args, list(acls) if not args.list else _patterns(args))
        except errors.SecurityDisabledError as e:
            raise ToolError(f"{e} (SECURITY_DISABLED): start the broker with "
                            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer") from None
    return 0


def _confirmed(args, pattern, entries) -> bool:
    if args.force:
        return True
    if entries:
        question = "Are you sure you want to remove ACLs: \n" + "\n".join("\t" + entry_text(*e) for e in entries) \
            + f"\n from resource filter `{pattern_text(*pattern)}`? (y/n)"
    else:
        question = f"Are you sure you want to delete all ACLs for resource filter `{pattern_text(*pattern)}`? (y/n)"
    print(question, flush=True)
    try:
        return input().strip().lower() == "y"
    except EOFError:
        return False


def _list(admin: AdminClient, args, patterns) -> None:
    """Kafka's listing: every ACL of the resources (all, if none is named), grouped by pattern;
    with --principal, one section per principal with only its ACLs."""
    found: dict[tuple, dict] = {}
    for f in [AclBindingFilter(*p) for p in patterns] or [AclBindingFilter()]:
        for acl in admin.describe_acls(f):
            found.setdefault(acl.pattern, {})[acl.entry] = None
    sections = [(None, None)] if not args.principal else [(p.strip(), f"ACLs for principal `{p.strip()}`")
                                                          for p in args.principal]
    for principal, title in sections:
        if title:
            print(title)
        for pattern, entries in sorted(found.items()):
            shown = sorted(e for e in entries if principal is None or e[0] == principal)
            if shown:
                print(acls_text("Current ACLs for resource", pattern, shown))
