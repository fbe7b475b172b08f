"""Client quotas in ``fastkafka configs``, as ``kafka-configs.sh --bootstrap-server`` takes them.

An entity is one or two ``--entity-type`` (``users``, ``clients``), each followed by its
``--entity-name NAME`` or ``--entity-default``; a user's quota per client id names both
(``--entity-type users --entity-name alice --entity-type clients --entity-name etl``). To
describe, a type without a name means every name of that type. Values are sent as
AlterClientQuotas' numbers; the broker checks them (byte rates are whole numbers).

Example::

    >>> quota_entity(["users", "clients"], ["alice", ""])
    {'user': 'alice', 'client-id': None}
    >>> describe_line((("user", "alice"), ("client-id", None)), {"consumer_byte_rate": 2048.0})
    "Quota configs for user-principal 'alice', the default client-id are consumer_byte_rate=2048.0"
"""
from __future__ import annotations

from fastkafka.client.admin import AdminClient
from fastkafka.client.tools import ToolError
from fastkafka.security.client_quotas import QUOTA_CONFIGS

__all__ = ["quota_entity", "describe_quotas", "alter_quotas", "describe_line", "is_quota_config"]

_ENTITY_TYPE = {"users": "user", "clients": "client-id"}
_SHOWN_AS = {"user": "user-principal", "client-id": "client-id"}


def is_quota_config(name: str) -> bool:
    return name in QUOTA_CONFIGS


def _pairs(types: list[str], names: list[str]) -> list[tuple[str, str | None]]:
    """(entity type, name: '' for the default, None for any), the user first."""
    if len(names) > len(types):
        raise ToolError("more entity names (--entity-name/--entity-default) than --entity-type")
    if len(types) > 2 or len(set(types)) != len(types) or not set(types) <= set(_ENTITY_TYPE):
        raise ToolError("client quotas take --entity-type users, clients, or both (once each)")
    pairs = [(_ENTITY_TYPE[t], names[i] if i < len(names) else None) for i, t in enumerate(types)]
    return sorted(pairs, key=lambda p: p[0] != "user")


def quota_entity(types: list[str], names: list[str]) -> dict[str, str | None]:
    """The AlterClientQuotas entity (None: the default) of ``--entity-type``/``--entity-name``
    (``""``: ``--entity-default``) pairs."""
    if len(names) != len(types):
        raise ToolError("--entity-name or --entity-default must be specified with each --entity-type for --alter")
    return {t: n or None for t, n in _pairs(types, names)}


def describe_line(entity: tuple, values: dict[str, float]) -> str:
    """kafka-configs.sh's line for one entity's quotas."""
    who = ", ".join(f"{_SHOWN_AS.get(t, t)} '{n}'" if n is not None else f"the default {_SHOWN_AS.get(t, t)}"
                    for t, n in entity)
    return f"Quota configs for {who} are " + ", ".join(f"{k}={float(v)}" for k, v in sorted(values.items()))


def describe_quotas(admin: AdminClient, types: list[str], names: list[str]) -> int:
    match = {t: ... if n is None else (n or None) for t, n in _pairs(types, names)}
    for entity, values in admin.describe_client_quotas(match, strict=True).items():
        print(describe_line(entity, values))
    return 0


def alter_quotas(admin: AdminClient, types: list[str], names: list[str], add: dict[str, str],
                 delete: list[str]) -> int:
    entity = quota_entity(types, names)
    unknown = [k for k in list(add) + delete if not is_quota_config(k)]
    if unknown:
        raise ToolError(f"only quota configs ({', '.join(QUOTA_CONFIGS)}) can be changed for "
                        f"'{types[0]}' here; unexpected: {', '.join(unknown)}")
    values = {}
    for key, text in add.items():
        try:
            values[key] = float(text)
        except ValueError:
            raise ToolError(f"Cannot parse quota configuration value for {key}: {text}") from None
    if delete:      # kafka-configs.sh refuses to delete what is not set
        have = {k for v in admin.describe_client_quotas(dict(entity), strict=True).values() for k in v}
        missing = [k for k in delete if k not in have]
        if missing:
            raise ToolError(f"Invalid config(s): {','.join(missing)}")
    admin.alter_client_quotas(entity, values, delete)
    if names[0]:
        print(f"Completed updating config for {types[0][:-1]} {names[0]}.")
    else:
        print(f"Completed updating default config for {types[0]} in the cluster.")
    return 0
