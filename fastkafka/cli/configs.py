"""``fastkafka configs``: describe and change topic and broker configs, SCRAM users and client
quotas, like ``kafka-configs.sh``.

Example::

    $ fastkafka configs --describe --entity-type topics --entity-name orders
    $ fastkafka configs --alter --entity-type topics --entity-name orders --add-config retention.ms=60000,cleanup.policy=compact
    $ fastkafka configs --alter --entity-type users --entity-name alice --add-config 'SCRAM-SHA-256=[password=alice-secret]'
    $ fastkafka configs --alter --entity-type clients --entity-default --add-config consumer_byte_rate=10485760
    $ fastkafka configs --alter --entity-type brokers --entity-default --add-config log.retention.ms=3600000
"""
from __future__ import annotations

from fastkafka import errors
from fastkafka.client.admin import BROKER_RESOURCE, TOPIC_RESOURCE, AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser
from fastkafka.config import topic_configs_without_effect
from fastkafka.security import MECHANISMS, MIN_ITERATIONS

from .client_quotas import alter_quotas, describe_quotas, is_quota_config

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

Client quotas (producer_byte_rate and consumer_byte_rate in bytes/s, request_percentage in percent
of one request handler thread), for a user, a client id, a user's client id, or the defaults;
every broker applies a change at once:
  fastkafka configs --alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
  fastkafka configs --alter --entity-type clients --entity-name reporting --add-config request_percentage=25
  fastkafka configs --alter --entity-type users --entity-name alice --entity-type clients --entity-name reporting --add-config consumer_byte_rate=524288
  fastkafka configs --alter --entity-type clients --entity-default --add-config consumer_byte_rate=104857600
  fastkafka configs --describe --entity-type users --entity-name alice
  fastkafka configs --describe --entity-type users --entity-name alice --entity-type clients
  fastkafka configs --describe --entity-type clients
  fastkafka configs --alter --entity-type clients --entity-default --delete-config consumer_byte_rate
  fastkafka configs --alter --entity-type users --entity-name alice --delete-config producer_byte_rate,consumer_byte_rate

Dynamic broker configs: the broker-wide defaults of topic configs (log.retention.ms,
log.segment.bytes, log.cleanup.policy, min.insync.replicas, compression.type, message.max.bytes,
...) change at run time for one broker or, with --entity-default, for the whole cluster; a
broker's own value wins over the cluster's, both over server.properties. Topics without an
override of their own follow at once:
  fastkafka configs --alter --entity-type brokers --entity-default --add-config log.retention.ms=3600000
  fastkafka configs --alter --entity-type brokers --entity-name 0 --add-config log.segment.bytes=1048576
  fastkafka configs --describe --entity-type brokers --entity-default
  fastkafka configs --alter --entity-type brokers --entity-name 0 --delete-config log.segment.bytes
  fastkafka configs --alter --entity-type brokers --entity-default --delete-config log.retention.ms"""

ENTITY_TYPES = {"topics": TOPIC_RESOURCE, "brokers": BROKER_RESOURCE}


def _parser():
    p = tool_parser("fastkafka configs", "Describe and change topic and broker configs.", EPILOG)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--describe", action="store_true", help="show the configs")
    what.add_argument("--alter", action="store_true", help="change the configs")
    p.add_argument("--entity-type", required=True, action="append", choices=["topics", "brokers", "users", "clients"],
                   help="what to describe or change; users and clients together: a user's quotas per client id")
    p.add_argument("--entity-name", action="append", dest="entity_names", default=[],
                   help="topic name, broker id, user or client id, one per --entity-type "
                        "(users, clients: omit to describe all)")
    p.add_argument("--entity-default", action="append_const", const="", dest="entity_names",
                   help="the default user or client id (its quotas apply to those without their own), "
                        "or with brokers the cluster-wide dynamic configs")
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
    types, names = args.entity_type, args.entity_names
    if {"users", "clients"} & set(types):
        with AdminClient(client_config(args)) as admin:
            return _users_and_clients(admin, args, types, names)
    if len(types) > 1 or len(names) > 1:
        raise ToolError("topics and brokers take one --entity-type and one --entity-name")
    entity_type, entity_name = types[0], (names[0] if names else None)
    rtype = ENTITY_TYPES[entity_type]
    if entity_name is None or (entity_name == "" and entity_type == "topics"):
        raise ToolError(f"--entity-type {entity_type} needs --entity-name")
    with AdminClient(client_config(args)) as admin:
        if args.describe:
            configs = admin.describe_configs(entity_name, rtype)
            print("Default configs for brokers in the cluster are:" if entity_name == "" else
                  f"Configs for {entity_type[:-1]} {entity_name} are:")
            for name, (value, is_default, _ro) in sorted(configs.items()):
                if args.all or not is_default:
                    print(f"  {name}={value}" + ("  (default)" if is_default else ""))
            return 0
        add = parse_add_config(args.add_config)
        delete = [k.strip() for k in args.delete_config.split(",") if k.strip()]
        if not add and not delete:
            raise ToolError("--alter needs --add-config and/or --delete-config")
        admin.alter_configs(entity_name, add, delete, rtype)
        print("Completed updating default config for brokers in the cluster." if entity_name == "" else
              f"Completed updating config for {entity_type[:-1]} {entity_name}.")
    return 0


def _users_and_clients(admin: AdminClient, args, types: list[str], names: list[str]) -> int:
    """Client quotas, and a named user's SCRAM credentials (kafka-configs.sh's split: a change
    is one or the other)."""
    scram_user = types == ["users"] and "" not in names
    if args.describe:
        describe_quotas(admin, types, names)
        return _users(admin, args, names[0] if names else None) if scram_user else 0
    keys = list(parse_add_config(args.add_config)) + [k.strip() for k in args.delete_config.split(",") if k.strip()]
    if not keys:
        raise ToolError("--alter needs --add-config and/or --delete-config")
    if scram_user and any(k in MECHANISMS for k in keys):
        if any(is_quota_config(k) for k in keys):
            raise ToolError("Cannot alter both quota and SCRAM credential configs simultaneously for 'users'.")
        return _users(admin, args, names[0] if names else None)
    return alter_quotas(admin, types, names, parse_add_config(args.add_config),
                        [k.strip() for k in args.delete_config.split(",") if k.strip()])


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


def _users(admin: AdminClient, args, user: str | None) -> int:
    if args.describe:
        try:
            described = admin.describe_user_scram_credentials([user] if user else None)
        except errors.ResourceNotFoundError:
            described = {}          # a user with quotas only
        for name, mechanisms in sorted(described.items()):
            listed = ", ".join(f"{m}=iterations={i}" for m, i in sorted(mechanisms.items()))
            print(f"SCRAM credential configs for user-principal '{name}' are {listed}")
        return 0
    if not user:
        raise ToolError("--alter --entity-type users needs --entity-name")
    add = parse_scram_config(args.add_config) if args.add_config else {}
    delete = [k.strip() for k in args.delete_config.split(",") if k.strip()]
    if not add and not delete:
        raise ToolError("--alter needs --add-config and/or --delete-config")
    admin.alter_user_scram_credentials({(user, m): v for m, v in add.items()}, [(user, m) for m in delete])
    print(f"Completed updating config for user {user}.")
    return 0
