"""``fastkafka configs``: describe and change topic and broker configs, like ``kafka-configs.sh``.

Example::

    $ fastkafka configs --describe --entity-type topics --entity-name orders
    $ fastkafka configs --alter --entity-type topics --entity-name orders --add-config retention.ms=60000,cleanup.policy=compact
    $ fastkafka configs --alter --entity-type users --entity-name alice --add-config 'SCRAM-SHA-256=[password=alice-secret]'
"""
from __future__ import annotations

from fastkafka.client.admin import BROKER_RESOURCE, TOPIC_RESOURCE, AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser
from fastkafka.config import topic_configs_without_effect
from fastkafka.security import MECHANISMS, MIN_ITERATIONS

EPILOG = """examples:
  fastkafka topics create orders --if-not-exists
  fastkafka configs --describe --entity-type topics --entity-name orders
  fastkafka configs --alter --entity-type topics --entity-name orders --add-config retention.ms=60000,segment.bytes=1048576
  fastkafka configs --alter --entity-type topics --entity-name orders --delete-config retention.ms
  fastkafka configs --describe --entity-type brokers --entity-name 0 --all

Topic changes take effect at once, without a restart. Accepted topic configs that change nothing
yet (reported by --describe all the same):
""" + "\n".join(f"  {name}: {why}" for name, why in topic_configs_without_effect().items()) + """
SCRAM users (the password is salted here; the broker stores only derived keys):
  fastkafka configs --alter --entity-type users --entity-name alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
  fastkafka configs --describe --entity-type users --entity-name alice
  fastkafka configs --describe --entity-type users
  fastkafka configs --alter --entity-type users --entity-name alice --delete-config SCRAM-SHA-512

Broker configs are read-only here (not dynamic yet); client quotas are not implemented yet."""

ENTITY_TYPES = {"topics": TOPIC_RESOURCE, "brokers": BROKER_RESOURCE}


def _parser():
    p = tool_parser("fastkafka configs", "Describe and change topic and broker configs.", EPILOG)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--describe", action="store_true", help="show the configs")
    what.add_argument("--alter", action="store_true", help="change the configs")
    p.add_argument("--entity-type", required=True, choices=["topics", "brokers", "users", "clients"])
    p.add_argument("--entity-name", help="topic name, broker id or user (users: omit to describe all)")
    p.add_argument("--add-config", default="", metavar="K=V,K2=V2",
                   help="configs to set, comma-separated (a list value in [ ]: k=[a,b])")
    p.add_argument("--delete-config", default="", metavar="K,K2", help="overrides to remove")
    p.add_argument("--all", action="store_true", help="with --describe: defaults too")
    return p


def parse_add_config(text: str) -> dict[str, str]:
    """``a=1,b=[x,y]`` -> ``{"a": "1", "b": "x,y"}`` (kafka-configs.sh's syntax: brackets group a
    value that has commas).

    >>> parse_add_config("retention.ms=60000,cleanup.policy=[compact,delete]")
    {'retention.ms': '60000', 'cleanup.policy': 'compact,delete'}
    """
    out, depth, item = {}, 0, ""
    for ch in text + ",":
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            if item.strip():
                key, sep, value = item.partition("=")
                if not sep or not key.strip():
                    raise ToolError(f"--add-config entries must look like KEY=VALUE, got {item!r}")
                out[key.strip()] = value.strip().removeprefix("[").removesuffix("]")
            item = ""
        else:
            item += ch
    return out


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return run(lambda: _run(args), "fastkafka configs")


def _run(args) -> int:
    if args.entity_type == "users":
        with AdminClient(client_config(args)) as admin:
            return _users(admin, args)
    rtype = ENTITY_TYPES.get(args.entity_type)
    if rtype is None:
        raise ToolError(f"--entity-type {args.entity_type} is not supported yet (client quotas)")
    if not args.entity_name:
        raise ToolError(f"--entity-type {args.entity_type} needs --entity-name")
    with AdminClient(client_config(args)) as admin:
        if args.describe:
            configs = admin.describe_configs(args.entity_name, rtype)
            print(f"Configs for {args.entity_type[:-1]} {args.entity_name} are:")
            for name, (value, is_default, _ro) in sorted(configs.items()):
                if args.all or not is_default:
                    print(f"  {name}={value}" + ("  (default)" if is_default else ""))
            return 0
        add = parse_add_config(args.add_config)
        delete = [k.strip() for k in args.delete_config.split(",") if k.strip()]
        if not add and not delete:
            raise ToolError("--alter needs --add-config and/or --delete-config")
        admin.alter_configs(args.entity_name, add, delete, rtype)
        print(f"Completed updating config for {args.entity_type[:-1]} {args.entity_name}.")
    return 0


def parse_scram_config(text: str) -> dict[str, tuple[str, int]]:
    """kafka-configs.sh's SCRAM syntax -> ``{mechanism: (password, iterations)}`` (4096 by default).

    >>> parse_scram_config("SCRAM-SHA-256=[iterations=8192,password=a=b],SCRAM-SHA-512=[password=x]")
    {'SCRAM-SHA-256': ('a=b', 8192), 'SCRAM-SHA-512': ('x', 4096)}
    """
    out = {}
    for mechanism, value in parse_add_config(text).items():
        fields = dict(item.partition("=")[::2] for item in _split_scram_fields(value))
        if mechanism not in MECHANISMS:
            raise ToolError(f"{mechanism} is not a SCRAM mechanism ({', '.join(MECHANISMS)})")
        if "password" not in fields:
            raise ToolError(f"{mechanism}: password=... is required")
        try:
            out[mechanism] = (fields["password"], int(fields.get("iterations", MIN_ITERATIONS)))
        except ValueError:
            raise ToolError(f"{mechanism}: iterations must be a number") from None
    return out


def _split_scram_fields(value: str) -> list[str]:
    """``iterations=8192,password=p,w`` -> fields; a password may hold commas, so everything
    after ``password=`` up to a following ``,iterations=`` belongs to it."""
    head, sep, password = value.partition("password=")
    fields = [f for f in head.split(",") if f]
    if sep:
        password, _, tail = password.partition(",iterations=")
        fields.append("password=" + password)
        if _:
            fields.append("iterations=" + tail)
    return fields


def _users(admin: AdminClient, args) -> int:
    if args.describe:
        described = admin.describe_user_scram_credentials([args.entity_name] if args.entity_name else None)
        for user, mechanisms in sorted(described.items()):
            listed = ", ".join(f"{m}=iterations={i}" for m, i in sorted(mechanisms.items()))
            print(f"SCRAM credential configs for user-principal '{user}' are {listed}")
        return 0
    if not args.entity_name:
        raise ToolError("--alter --entity-type users needs --entity-name")
    add = parse_scram_config(args.add_config) if args.add_config else {}
    delete = [k.strip() for k in args.delete_config.split(",") if k.strip()]
    if not add and not delete:
        raise ToolError("--alter needs --add-config and/or --delete-config")
    admin.alter_user_scram_credentials({(args.entity_name, m): v for m, v in add.items()},
                                       [(args.entity_name, m) for m in delete])
    print(f"Completed updating config for user {args.entity_name}.")
    return 0
