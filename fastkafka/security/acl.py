"""Kafka's ACL model without I/O: resource patterns, access control entries, filters, and the
authorization decision Kafka's AclAuthorizer (ZooKeeper mode) makes.

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED) to an entry (principal, host,
operation, ALLOW or DENY). A request for an operation on a named resource is decided by every
ACL whose pattern matches the name (the same name, the wildcard ``*``, or a prefix of it):

- a super user is allowed everything;
- any matching DENY for the principal (or ``User:*``) and host (or ``*``) denies;
- else any matching ALLOW allows; ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE,
  ALLOW of ALTER_CONFIGS also allows DESCRIBE_CONFIGS (a DENY implies nothing);
- else, if the resource has no ACL at all, ``allow.everyone.if.no.acl.found`` decides; if it has
  ACLs for others, the request is denied.

Codes and names are Kafka's (``org.apache.kafka.common.acl``/``resource``): the wire carries the
codes, ZooKeeper's JSON and the tools the names.

Example::

    >>> acls = AclSnapshot([
    ...     AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
    ...                AclOperation.WRITE, AclPermissionType.ALLOW),
    ...     AclBinding(ResourceType.TOPIC, "pay", PatternType.PREFIXED, "User:*", "*",
    ...                AclOperation.READ, AclPermissionType.ALLOW),
    ...     AclBinding(ResourceType.TOPIC, "payroll", PatternType.LITERAL, "User:bob", "*",
    ...                AclOperation.ALL, AclPermissionType.DENY)])
    >>> rules = AuthorizationRules(super_users={"User:admin"})
    >>> rules.authorize(acls, "User:alice", "10.0.0.1", AclOperation.WRITE, ResourceType.TOPIC, "orders")
    True
    >>> rules.authorize(acls, "User:alice", "10.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, "orders")
    True
    >>> rules.authorize(acls, "User:bob", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "payments")
    True
    >>> rules.authorize(acls, "User:bob", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "payroll")
    False
    >>> rules.authorize(acls, "User:bob", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "audit")
    False
    >>> rules.authorize(acls, "User:admin", "10.0.0.1", AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
    True
"""
from __future__ import annotations

import enum
from typing import Iterable, NamedTuple

__all__ = [
    "ResourceType", "PatternType", "AclOperation", "AclPermissionType", "AclBinding", "AclBindingFilter",
    "AclSnapshot", "AuthorizationRules", "InvalidAcl", "CLUSTER_NAME", "WILDCARD", "WILDCARD_PRINCIPAL",
    "SUPPORTED_OPERATIONS", "RESOURCE_TYPES", "parse_principal",
]

CLUSTER_NAME = "kafka-cluster"   # the one name of the CLUSTER resource
WILDCARD = "*"                   # a resource name or host matching every one
WILDCARD_PRINCIPAL = "User:*"


class _Named(enum.IntEnum):
    """An enum with Kafka's code (wire) and Kafka's name (ZooKeeper JSON, tools)."""

    @property
    def kafka_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def parse(cls, text: str):
        """By Kafka's name in any case, with or without underscores (``Read``, ``CLUSTER_ACTION``,
        ``clusteraction``); ValueError names the choices."""
        key = text.replace("_", "").replace("-", "").lower()
        for member in cls:
            if member.name.replace("_", "").lower() == key:
                return member
        raise ValueError(f"unknown {cls.__name__} {text!r}; one of "
                         + ", ".join(m.kafka_name for m in cls if m.name not in ("UNKNOWN",)))


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7

    @property
    def kafka_name(self) -> str:
        return "TransactionalId" if self is ResourceType.TRANSACTIONAL_ID else super().kafka_name


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def kafka_name(self) -> str:
        return self.name


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_T, _O = ResourceType, AclOperation
#: what each resource type's ACLs may name (Kafka's AclEntry.supportedOperations), ALL included
SUPPORTED_OPERATIONS = {
    _T.TOPIC: frozenset((_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                         _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.ALL)),
    _T.GROUP: frozenset((_O.READ, _O.DESCRIBE, _O.DELETE, _O.ALL)),
    _T.CLUSTER: frozenset((_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                           _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE, _O.ALL)),
    _T.TRANSACTIONAL_ID: frozenset((_O.DESCRIBE, _O.WRITE, _O.ALL)),
    _T.DELEGATION_TOKEN: frozenset((_O.DESCRIBE, _O.ALL)),
    _T.USER: frozenset((_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS, _O.ALL)),
}
#: the types an ACL can name (ANY and UNKNOWN only filter)
RESOURCE_TYPES = tuple(SUPPORTED_OPERATIONS)
# ALLOW of these implies ALLOW of the key (Kafka's IMPLIES_DESCRIBE / IMPLIES_DESCRIBE_CONFIGS)
_IMPLIED_BY = {
    _O.DESCRIBE: frozenset((_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER)),
    _O.DESCRIBE_CONFIGS: frozenset((_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS)),
}


class InvalidAcl(ValueError):
    """An ACL Kafka would refuse to store (answered INVALID_REQUEST)."""


def parse_principal(text: str) -> tuple[str, str]:
    """``"User:alice"`` → ``("User", "alice")``; InvalidAcl unless ``Type:name``.

    >>> parse_principal("User:CN=broker,O=example")
    ('User', 'CN=broker,O=example')
    """
    kind, sep, name = (text or "").partition(":")
    if not sep or not kind or not name:
        raise InvalidAcl(f"Could not parse principal from `{text}` (no colon is found)"
                         if not sep else f"Invalid principal `{text}`")
    return kind, name


class AclBinding(NamedTuple):
    """One ACL, field for field as CreateAcls carries it."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    @classmethod
    def of(cls, resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str,
           operation: int, permission_type: int) -> "AclBinding":
        """From wire codes, validated as Kafka validates a new ACL (InvalidAcl says what is wrong)."""
        try:
            rtype, ptype = ResourceType(resource_type), PatternType(pattern_type)
            op, perm = AclOperation(operation), AclPermissionType(permission_type)
        except ValueError as e:
            raise InvalidAcl(str(e)) from None
        if rtype in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise InvalidAcl(f"Invalid resource type {rtype.name}")
        if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"Invalid pattern type {ptype.name}")
        if not resource_name:
            raise InvalidAcl("Resource name should not be empty")
        if rtype is ResourceType.CLUSTER and resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        if op in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise InvalidAcl(f"Invalid operation {op.name}")
        if op not in SUPPORTED_OPERATIONS[rtype]:
            raise InvalidAcl(f"ACL operation {op.kafka_name} is not valid for resource type {rtype.kafka_name}")
        if perm in (AclPermissionType.ANY, AclPermissionType.UNKNOWN):
            raise InvalidAcl(f"Invalid permission type {perm.name}")
        parse_principal(principal)
        if not host:
            raise InvalidAcl("Invalid null host")
        return cls(rtype, resource_name, ptype, principal, host, op, perm)

    @property
    def pattern(self) -> tuple[ResourceType, str, PatternType]:
        return self.resource_type, self.resource_name, self.pattern_type

    @property
    def entry(self) -> tuple[str, str, AclOperation, AclPermissionType]:
        return self.principal, self.host, self.operation, self.permission_type

    def __str__(self) -> str:
        # Kafka's AccessControlEntry and ResourcePattern strings
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
                f"permissionType={self.permission_type.name}) on ResourcePattern(resourceType="
                f"{self.resource_type.name}, name={self.resource_name}, patternType={self.pattern_type.name})")


class AclBindingFilter(NamedTuple):
    """What DescribeAcls and DeleteAcls select: ANY/None match everything in their field; pattern
    type MATCH selects every ACL that would apply to ``resource_name`` (the same name, ``*``, or a
    prefix of it).

    >>> f = AclBindingFilter(ResourceType.TOPIC, "orders", PatternType.MATCH)
    >>> f.matches(AclBinding(ResourceType.TOPIC, "ord", PatternType.PREFIXED, "User:a", "*",
    ...                      AclOperation.READ, AclPermissionType.ALLOW))
    True
    """

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    @classmethod
    def of(cls, resource_type: int, resource_name: str | None, pattern_type: int, principal: str | None,
           host: str | None, operation: int, permission_type: int) -> "AclBindingFilter":
        """From wire codes; InvalidAcl for UNKNOWN (or unknown) codes, which match nothing."""
        try:
            f = cls(ResourceType(resource_type), resource_name, PatternType(pattern_type), principal, host,
                    AclOperation(operation), AclPermissionType(permission_type))
        except ValueError as e:
            raise InvalidAcl(str(e)) from None
        for field in (f.resource_type, f.pattern_type, f.operation, f.permission_type):
            if field.name == "UNKNOWN":
                raise InvalidAcl(f"The filter's {type(field).__name__} is UNKNOWN")
        return f

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and acl.resource_type is not self.resource_type:
            return False
        if not self._matches_pattern(acl):
            return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and (self.operation is AclOperation.ANY or self.operation is acl.operation)
                and (self.permission_type is AclPermissionType.ANY
                     or self.permission_type is acl.permission_type))

    def _matches_pattern(self, acl: AclBinding) -> bool:
        name, ptype = self.resource_name, self.pattern_type
        if ptype is PatternType.MATCH:
            if name is None:
                return True
            if acl.pattern_type is PatternType.LITERAL:
                return acl.resource_name in (name, WILDCARD)
            return acl.pattern_type is PatternType.PREFIXED and name.startswith(acl.resource_name)
        if ptype is not PatternType.ANY and ptype is not acl.pattern_type:
            return False
        return name is None or name == acl.resource_name


class AclSnapshot:
    """An immutable set of ACLs indexed for authorization; a change makes a new snapshot."""

    __slots__ = ("_bindings", "_literal", "_prefixed")

    def __init__(self, bindings: Iterable[AclBinding] = ()):
        self._bindings = tuple(dict.fromkeys(bindings))
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        prefixed: dict[ResourceType, list[AclBinding]] = {}
        for b in self._bindings:
            if b.pattern_type is PatternType.PREFIXED:
                prefixed.setdefault(b.resource_type, []).append(b)
            else:
                literal.setdefault((b.resource_type, b.resource_name), []).append(b)
        self._literal = literal
        self._prefixed = prefixed

    def __iter__(self):
        return iter(self._bindings)

    def __len__(self) -> int:
        return len(self._bindings)

    def __contains__(self, acl) -> bool:
        return acl in self._literal.get((acl.resource_type, acl.resource_name), ()) or \
            acl in self._prefixed.get(acl.resource_type, ())

    def matching(self, rtype: ResourceType, name: str) -> list[AclBinding]:
        """Every ACL whose pattern applies to the resource ``rtype:name``."""
        found = list(self._literal.get((rtype, name), ()))
        if name != WILDCARD:
            found.extend(self._literal.get((rtype, WILDCARD), ()))
        found.extend(b for b in self._prefixed.get(rtype, ()) if name.startswith(b.resource_name))
        return found

    def of_type(self, rtype: ResourceType) -> list[AclBinding]:
        return [b for b in self._bindings if b.resource_type is rtype]


def _applies(acl: AclBinding, principals: tuple[str, str], host: str, op: AclOperation) -> bool:
    if acl.principal not in principals or (acl.host != WILDCARD and acl.host != host):
        return False
    if acl.operation is AclOperation.ALL or acl.operation is op:
        return True
    return acl.permission_type is AclPermissionType.ALLOW and acl.operation in _IMPLIED_BY.get(op, ())


class AuthorizationRules(NamedTuple):
    """The broker's policy: ``super.users`` and ``allow.everyone.if.no.acl.found``."""

    super_users: frozenset[str] | set[str] = frozenset()
    allow_if_no_acls: bool = False

    def authorize(self, acls: AclSnapshot, principal: str, host: str, op: AclOperation,
                  rtype: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        found = acls.matching(rtype, name)
        if not found:
            return self.allow_if_no_acls
        principals = (principal, WILDCARD_PRINCIPAL)
        allowed = False
        for acl in found:
            if _applies(acl, principals, host, op):
                if acl.permission_type is AclPermissionType.DENY:
                    return False
                allowed = True
        return allowed

    def authorize_any(self, acls: AclSnapshot, principal: str, host: str, op: AclOperation,
                      rtype: ResourceType) -> bool:
        """Whether ``principal`` may do ``op`` on at least one resource of ``rtype`` (Kafka's
        authorizeByResourceType, which lets an idempotent producer with WRITE on any topic get a
        producer id): some ALLOW pattern is not wholly covered by a DENY."""
        if principal in self.super_users:
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        of_type = acls.of_type(rtype)
        if not of_type:
            return self.allow_if_no_acls
        deny = [a for a in of_type if a.permission_type is AclPermissionType.DENY
                and _applies(a, principals, host, op)]
        if any(a.pattern_type is PatternType.LITERAL and a.resource_name == WILDCARD for a in deny):
            return False
        for a in of_type:
            if a.permission_type is AclPermissionType.ALLOW and _applies(a, principals, host, op):
                covered = any(d.resource_name == a.resource_name and d.pattern_type is a.pattern_type
                              or d.pattern_type is PatternType.PREFIXED
                              and a.resource_name.startswith(d.resource_name) for d in deny)
                if not covered:
                    return True
        return False
