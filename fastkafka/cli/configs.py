"""``fastkafka configs``: describe and change topic and broker configs, like ``kafka-configs.sh``.

Example::

    $ fastkafka configs --describe --entity-type topics --entity-name orders
    $ fastkafka configs --alter --entity-type topics --entity-name orders --add-config retention.ms=60000,cleanup.policy=compact
"""
from __future__ import annotations

from fastkafka.client.admin import BROKER_RESOURCE, TOPIC_RESOURCE, AdminClient
from fastkafka.client.tools import ToolError, client_config, run, tool_parser
from fastkafka.config import topic_configs_without_effect

EPILOG = """examples:
  fastkafka topics create orders --if-not-exists
  fastkafka configs --describe --entity-type topics --entity-name orders
  fastkafka configs --alter --entity-type topics --entity-name orders --add-config retention.ms=60000,segment.bytes=1048576
  fastkafka configs --alter --entity-type topics --entity-name orders --delete-config retention.ms
  fastkafka configs --describe --entity-type brokers --entity-name 0 --all

Topic changes take effect at once, without a restart. Accepted topic configs that change nothing
yet (reported by --describe all the same):
""" + "\n".join(f"  {name}: {why}" for name, why in topic_configs_without_effect().items()) + """
Broker configs are read-only here (not dynamic yet); users and clients (SCRAM credentials,
quotas) wait for the security issue."""

ENTITY_TYPES = {"topics": TOPIC_RESOURCE, "brokers": BROKER_RESOURCE}


def _parser():
    p = tool_parser("fastkafka configs", "Describe and change topic and broker configs.", EPILOG)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--describe", action="store_true", help="show the configs")
    what.add_argument("--alter", action="store_true", help="change the configs")
    p.add_argument("--entity-type", required=True, choices=["topics", "brokers", "users", "clients"])
    p.add_argument("--entity-name", required=True, help="topic name or broker id")
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
    rtype = ENTITY_TYPES.get(args.entity_type)
    if rtype is None:
        raise ToolError(f"--entity-type {args.entity_type} is not supported yet (SCRAM credentials and "
                        "quotas come with the security issue)")
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
