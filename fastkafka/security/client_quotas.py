"""Client quota entities and configs as Kafka keeps them (KIP-55, KIP-546): whom a quota is for,
which quota a request falls under, and the checks AlterClientQuotas and DescribeClientQuotas make.

Entities. A quota is set for a user (the session principal's name: ``User:alice`` is ``alice``,
an unauthenticated client is ``ANONYMOUS``), for a client id, or for a user and a client id
together; either part may be the *default* instead of a name. Here an entity is a pair
``(user, client_id)`` whose parts are ``None`` (not part of it), :data:`DEFAULT` or a name.
ZooKeeper keeps them at ``/config/users/<user>``, ``/config/clients/<client-id>`` and
``/config/users/<user>/clients/<client-id>``, names URL-encoded as Kafka's ``Sanitizer`` does
(:func:`znode_name`) and ``<default>`` for the default. (A user or client literally named
``<default>`` is the default here.)

Configs (:data:`QUOTA_CONFIGS`): ``producer_byte_rate`` and ``consumer_byte_rate`` in bytes per
second (whole numbers), ``request_percentage`` in percent of one request handler thread per
quota window, and ``controller_mutation_rate`` in partitions created or deleted per second.

Precedence (Kafka's ``ClientQuotaManager``): the first configured of ``/config/users/<user>/clients/<client-id>``,
``/config/users/<user>/clients/<default>``, ``/config/users/<user>``,
``/config/users/<default>/clients/<client-id>``, ``/config/users/<default>/clients/<default>``,
``/config/users/<default>``, ``/config/clients/<client-id>``, ``/config/clients/<default>``.
:meth:`QuotaBounds.resolve` also says which clients share one measured rate (Kafka's metric
tags): all clients of ``alice`` share a ``/config/users/alice`` quota, while a default quota
gives every user (or client) a rate of its own.

Example::

    >>> bounds = QuotaBounds({("alice", None): 2048.0, (DEFAULT, None): 1024.0, (None, "etl"): 512.0})
    >>> bounds.resolve("alice", "etl")     # alice's own quota, shared by all her clients
    (('alice', ''), 2048.0)
    >>> bounds.resolve("bob", "etl")       # the default user's, a rate of bob's own
    (('bob', ''), 1024.0)
    >>> QuotaBounds({(None, "etl"): 512.0}).resolve("bob", "etl")
    (('', 'etl'), 512.0)
    >>> znode_name("alice@example.com"), znode_name(DEFAULT)
    ('alice%40example.com', '<default>')
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping
from urllib.parse import quote, unquote_plus

from fastkafka import errors

__all__ = [
    "DEFAULT", "USER", "CLIENT_ID", "IP", "PRODUCER_BYTE_RATE", "CONSUMER_BYTE_RATE", "REQUEST_PERCENTAGE",
    "CONTROLLER_MUTATION_RATE", "QUOTA_CONFIGS", "QuotaEntity", "sanitize", "desanitize", "znode_name",
    "entity_name", "quota_configs_of", "collect_quota_configs", "QuotaConfigsView", "with_entry", "parse_entity", "entity_components", "apply_ops", "QuotaFilter",
    "QuotaBounds", "MATCH_EXACT", "MATCH_DEFAULT", "MATCH_SPECIFIED",
]

DEFAULT = "<default>"             # Kafka's ZooKeeperInternals.DEFAULT_STRING
USER, CLIENT_ID, IP = "user", "client-id", "ip"    # ClientQuotaEntity's entity types
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
#: the quota configs of users and clients, by Kafka's type (whole numbers or any number)
QUOTA_CONFIGS = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG", REQUEST_PERCENTAGE: "DOUBLE",
                 CONTROLLER_MUTATION_RATE: "DOUBLE"}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2   # DescribeClientQuotas' match types

QuotaEntity = tuple  # (user, client_id): each None (not part of it), DEFAULT or a name


# --- names in ZooKeeper ---

def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding (Java's ``URLEncoder``) with ``%20`` for a
    space and ``%2A`` for ``*``; only letters, digits, ``.``, ``-`` and ``_`` stay as they are.

    >>> sanitize("CN=broker 1,O=example*")
    'CN%3Dbroker%201%2CO%3Dexample%2A'
    """
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    """Kafka's ``Sanitizer.desanitize`` (Java's ``URLDecoder``: ``+`` is a space too)."""
    return unquote_plus(name)


def znode_name(name: str) -> str:
    """The znode name of an entity part: ``<default>`` for the default, else sanitized."""
    return name if name == DEFAULT else sanitize(name)


def entity_name(znode: str) -> str:
    """The entity part a znode name stands for (the inverse of :func:`znode_name`)."""
    return znode if znode == DEFAULT else desanitize(znode)


def quota_configs_of(configs: Mapping[str, str]) -> dict[str, str]:
    """The quota entries of an entity's configs (a user's also holds SCRAM credentials)."""
    return {k: v for k, v in configs.items() if k in QUOTA_CONFIGS}


def collect_quota_configs(users: Mapping[str, Mapping[str, str]],
                          others: Mapping[QuotaEntity, Mapping[str, str]]) -> dict[QuotaEntity, dict[str, str]]:
    """Every entity with quota configs: users' (from their entries, which SCRAM credentials
    share) and ``others`` (client ids and user/client-id pairs).

    >>> collect_quota_configs({"alice": {"SCRAM-SHA-256": "...", "producer_byte_rate": "1024"}, "bob": {}},
    ...                       {(None, "etl"): {"consumer_byte_rate": "2048"}})
    {('alice', None): {'producer_byte_rate': '1024'}, (None, 'etl'): {'consumer_byte_rate': '2048'}}
    """
    out = {}
    for user, configs in users.items():
        quotas = quota_configs_of(configs)
        if quotas:
            out[(user, None)] = quotas
    for entity, configs in others.items():
        quotas = quota_configs_of(configs)
        if quotas:
            out[entity] = quotas
    return out


class QuotaConfigsView:
    """What both metadata stores answer for ``quota_configs()``: :func:`collect_quota_configs` of
    their current (immutable) user and entity maps, rebuilt only when one of them was replaced."""

    __slots__ = ("_of",)

    def __init__(self):
        self._of: tuple = (None, None, MappingProxyType({}))

    def of(self, users, others) -> Mapping[QuotaEntity, Mapping[str, str]]:
        seen_users, seen_others, snapshot = self._of
        if users is not seen_users or others is not seen_others:
            snapshot = MappingProxyType(collect_quota_configs(users, others))
            self._of = (users, others, snapshot)
        return snapshot


def with_entry(mapping: Mapping, key, configs: Mapping[str, str]) -> dict:
    """A copy of ``mapping`` with ``key`` mapped to an immutable copy of ``configs``, or without
    ``key`` when ``configs`` is empty (the stores' copy-on-write updates).

    >>> with_entry({"a": {"x": "1"}}, "a", {})
    {}
    """
    out = dict(mapping)
    if configs:
        out[key] = MappingProxyType(dict(configs))
    else:
        out.pop(key, None)
    return out


# --- AlterClientQuotas ---

def parse_entity(parts: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    """``[(entity_type, name or None for the default)]`` -> ``(user, client_id)``; raises
    InvalidRequestError as Kafka does (empty entity, a type twice, an unknown type, an empty
    name) and for IP entities, which this broker does not implement.

    >>> parse_entity([("user", "alice"), ("client-id", None)])
    ('alice', '<default>')
    """
    found: dict[str, str] = {}
    for etype, name in parts:
        if etype in found:
            raise errors.InvalidRequestError(f"Invalid client quota entity, duplicate entity entry {etype}")
        if etype not in (USER, CLIENT_ID, IP):
            raise errors.InvalidRequestError(f"Unhandled client quota entity type: {etype}")
        if name is not None and not name:
            raise errors.InvalidRequestError(f"Empty {etype} not supported")
        found[etype] = DEFAULT if name is None else name
    if not found:
        raise errors.InvalidRequestError("Invalid empty client quota entity")
    if IP in found:
        if len(found) > 1:
            raise errors.InvalidRequestError(
                "Invalid quota entity combination, IP entity should not be combined with User or ClientId")
        raise errors.InvalidRequestError("IP quotas (connection_creation_rate) are not supported by this broker")
    return found.get(USER), found.get(CLIENT_ID)


def entity_components(entity: QuotaEntity) -> list[tuple[str, str | None]]:
    """``(user, client_id)`` -> ``[(entity_type, name or None for the default)]``, user first."""
    user, client = entity
    return [(t, None if n == DEFAULT else n) for t, n in ((USER, user), (CLIENT_ID, client)) if n is not None]


def apply_ops(current: Mapping[str, str], ops: Iterable[tuple[str, float, bool]]) -> dict[str, str]:
    """An entity's quota configs after ``(key, value, remove)`` operations, stored as Kafka's
    strings (whole numbers for LONG keys); raises InvalidRequestError for an unknown key, a
    value that is not positive, or a fraction for a LONG key.

    >>> apply_ops({"producer_byte_rate": "1024"}, [("producer_byte_rate", 0.0, True),
    ...                                           ("request_percentage", 25.0, False)])
    {'request_percentage': '25.0'}
    """
    out = dict(current)
    for key, value, remove in ops:
        if remove:
            out.pop(key, None)
            continue
        kind = QUOTA_CONFIGS.get(key)
        if kind is None:
            raise errors.InvalidRequestError(f"Invalid configuration key {key}")
        if not value > 0.0:
            raise errors.InvalidRequestError(f"Quota {key} must be greater than 0")
        if kind == "LONG":
            whole = int(value + 1e-6)
            if abs(whole - value) > 1e-6:
                raise errors.InvalidRequestError(f"Configuration {key} must be a LONG value")
            out[key] = str(whole)
        else:
            out[key] = repr(float(value))
    return out


# --- DescribeClientQuotas ---

class QuotaFilter:
    """DescribeClientQuotas' filter: components ``(entity_type, match_type, match)`` and
    ``strict`` (entities with other parts are excluded). Raises InvalidRequestError for a bad
    filter (and UnsupportedVersionError for entity types Kafka does not know), as Kafka 3.x does.

    >>> f = QuotaFilter([("user", MATCH_SPECIFIED, None)], strict=True)
    >>> f.matches(("alice", None)), f.matches(("alice", "etl")), f.matches((None, "etl"))
    (True, False, False)
    """

    def __init__(self, components: Iterable[tuple[str, int, str | None]], strict: bool):
        self.exact: dict[str, str] = {}      # entity type -> name (DEFAULT for the default)
        self.specified: set[str] = set()
        for etype, match_type, match in components:
            if not etype:
                raise errors.InvalidRequestError("Invalid empty entity type.")
            if etype in self.exact or etype in self.specified:
                raise errors.InvalidRequestError(f"Entity type {etype} cannot appear more than once in the filter.")
            if etype not in (USER, CLIENT_ID, IP):
                raise errors.UnsupportedVersionError(f"Custom entity type '{etype}' not supported")
            if match_type == MATCH_EXACT:
                if match is None:
                    raise errors.InvalidRequestError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
                self.exact[etype] = match
            elif match_type in (MATCH_DEFAULT, MATCH_SPECIFIED):
                if match is not None:
                    raise errors.InvalidRequestError(
                        f"Request specified MATCH_TYPE_{'DEFAULT' if match_type == MATCH_DEFAULT else 'SPECIFIED'}, "
                        "but also specified a match string.")
                if match_type == MATCH_DEFAULT:
                    self.exact[etype] = DEFAULT
                else:
                    self.specified.add(etype)
            else:
                raise errors.InvalidRequestError(f"Unknown match type {match_type}")
        types = set(self.exact) | self.specified
        if IP in types and types - {IP}:
            raise errors.InvalidRequestError("Invalid entity filter component combination, IP filter component "
                                             "should not be used with user or clientId filter component.")
        self.strict = strict
        self.wants_ips = IP in types

    def matches(self, entity: QuotaEntity) -> bool:
        if self.wants_ips:
            return False        # no IP quotas are stored
        parts = {t: n for t, n in ((USER, entity[0]), (CLIENT_ID, entity[1])) if n is not None}
        if self.strict and len(parts) != len(self.exact) + len(self.specified):
            return False
        return (all(parts.get(t) == n for t, n in self.exact.items())
                and all(t in parts for t in self.specified))


# --- which quota applies ---

class QuotaBounds:
    """One quota type's configured bounds by entity, and Kafka's precedence over them."""

    def __init__(self, bounds: Mapping[QuotaEntity, float]):
        self.bounds = dict(bounds)
        self._users = any(u is not None and c is None for u, c in self.bounds)
        self._clients = any(u is None and c is not None for u, c in self.bounds)
        self._pairs = any(u is not None and c is not None for u, c in self.bounds)

    def __bool__(self) -> bool:
        return bool(self.bounds)

    def resolve(self, user: str, client_id: str) -> tuple[tuple[str, str], float | None]:
        """``((user, client_id) tags, bound)`` for a request: the tags name the rate the request
        counts against (``''`` where a part does not matter), the bound is None when no quota applies."""
        tags = self._tags(user, client_id)
        return tags, self.limit(*tags)

    def _tags(self, user: str, client: str) -> tuple[str, str]:
        levels = (self._users, self._clients, self._pairs)
        # one kind of quota configured: its parts decide (Kafka's fast path, same answers)
        if levels == (False, True, False) or not any(levels):
            return "", client
        if levels == (True, False, False):
            return user, ""
        if levels == (False, False, True):
            return user, client
        b = self.bounds
        if (user, client) in b or (user, DEFAULT) in b:
            return user, client
        if (user, None) in b:
            return user, ""
        if (DEFAULT, client) in b or (DEFAULT, DEFAULT) in b:
            return user, client
        if (DEFAULT, None) in b:
            return user, ""
        return "", client

    def limit(self, user: str, client: str) -> float | None:
        """The bound of the rate named by tags ``(user, client)`` (None: unlimited)."""
        if user and client:
            candidates = ((user, client), (user, DEFAULT), (DEFAULT, client), (DEFAULT, DEFAULT))
        elif user:
            candidates = ((user, None), (DEFAULT, None))
        elif client:
            candidates = ((None, client), (None, DEFAULT))
        else:
            return None
        b = self.bounds
        for entity in candidates:
            bound = b.get(entity)
            if bound is not None:
                return bound
        return None
