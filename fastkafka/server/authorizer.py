"""The broker's ACL authorizer: Kafka's AclAuthorizer (ZooKeeper mode) on our metadata store.

Built at start-up when ``authorizer.class.name`` names it, from ``super.users`` and
``allow.everyone.if.no.acl.found``; the ACLs are the store's (``/kafka-acl*`` in ZooKeeper, the
metadata file when embedded), read as an immutable snapshot on every decision, so a CreateAcls
through any broker applies to the next request. Decisions are cached per snapshot: a produce
checks WRITE on its topics with a dictionary lookup. Without an authorizer every request is
allowed and the ACL APIs answer SECURITY_DISABLED.

Handlers ask through their request context (``ctx.authorize(op, resource_type, name)``), which
answers True at once when no authorizer is configured. Denials are logged at INFO on
``fastkafka.server.authorizer`` (Kafka's authorizer logger logs them too).

Example::

    >>> from fastkafka.security.acl import AclBinding, AclSnapshot
    >>> acls = AclSnapshot([AclBinding(TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
    ...                                AclOperation.READ, AclPermissionType.ALLOW)])
    >>> auth = Authorizer(AuthorizationRules(), lambda: acls)
    >>> auth.authorize("User:alice", "127.0.0.1", AclOperation.READ, TOPIC, "orders")
    True
    >>> auth.authorize("User:bob", "127.0.0.1", AclOperation.READ, TOPIC, "orders")
    False
    >>> bin(auth.operations("User:alice", "127.0.0.1", TOPIC, "orders"))   # READ and DESCRIBE
    '0b100001000'
"""
from __future__ import annotations

import logging
from typing import Callable

from fastkafka.security.acl import (CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, AclPermissionType,
                                    AclSnapshot, AuthorizationRules, PatternType, ResourceType)
from fastkafka.config.definitions import ALLOW_EVERYONE_IF_NO_ACL_FOUND, AUTHORIZER_CLASS_NAME, SUPER_USERS

__all__ = ["Authorizer", "authorizer_from_config", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
           "CLUSTER_NAME", "NOT_REQUESTED", "every_operation",
           "AclOperation", "AclPermissionType", "PatternType", "ResourceType"]

log = logging.getLogger("fastkafka.server.authorizer")

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
NOT_REQUESTED = -(1 << 31)     # KIP-430's "authorized operations not requested"
_CACHE_LIMIT = 65536


def every_operation(rtype: ResourceType) -> int:
    """The authorized-operations bits of every operation ``rtype`` supports (no authorizer)."""
    return sum(1 << op for op in SUPPORTED_OPERATIONS[rtype] if op is not AclOperation.ALL)


class Authorizer:
    """Thread-safe: decisions read one snapshot; the cache is replaced, never mutated by two."""

    def __init__(self, rules: AuthorizationRules, acls: Callable[[], AclSnapshot]):
        self.rules = rules
        self._acls = acls
        self._snapshot: AclSnapshot | None = None
        self._cache: dict = {}

    def _current(self) -> tuple[AclSnapshot, dict]:
        acls = self._acls()
        cache = self._cache
        if acls is not self._snapshot or len(cache) > _CACHE_LIMIT:
            cache = {}
            self._cache, self._snapshot = cache, acls
        return acls, cache

    def authorize(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        acls, cache = self._current()
        key = (principal, host, op, rtype, name)
        allowed = cache.get(key)
        if allowed is None:
            allowed = cache[key] = self.rules.authorize(acls, principal, host, op, rtype, name)
            if not allowed:
                log.info("Principal = %s is Denied Operation = %s from host = %s on resource = %s:LITERAL:%s",
                         principal, op.kafka_name, host, rtype.kafka_name, name)
        return allowed

    def authorize_any(self, principal: str, host: str, op: AclOperation, rtype: ResourceType) -> bool:
        """Whether ``op`` is allowed on some resource of ``rtype`` (Kafka's authorizeByResourceType)."""
        return self.rules.authorize_any(self._acls(), principal, host, op, rtype)

    def operations(self, principal: str, host: str, rtype: ResourceType, name: str) -> int:
        """KIP-430's authorized-operations bits: each operation of ``rtype`` this principal may do."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[rtype]:
            if op is not AclOperation.ALL and self.authorize(principal, host, op, rtype, name):
                bits |= 1 << op
        return bits


def authorizer_from_config(cfg, acls: Callable[[], AclSnapshot]) -> Authorizer | None:
    """The authorizer ``authorizer.class.name`` asks for, or None (no authorization)."""
    if not cfg[AUTHORIZER_CLASS_NAME]:
        return None
    supers = frozenset(p.strip() for p in cfg[SUPER_USERS].split(";") if p.strip())
    return Authorizer(AuthorizationRules(supers, cfg[ALLOW_EVERYONE_IF_NO_ACL_FOUND]), acls)

