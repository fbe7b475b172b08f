"""The operations a client may perform on a resource, as Kafka reports them (KIP-430).

Metadata v8+ (topics, cluster) and DescribeGroups v3+ (groups) answer, when the request asks,
a 32-bit field with bit ``code`` set for each ``AclOperation`` the caller is allowed. Without an
authorizer Kafka allows every operation the resource type supports, so that is the answer here
until ACLs exist (the security issue). Not asked, the field stays Kafka's "not requested" value.

Example::

    >>> authorized_operations(TOPIC, asked=True) == sum(1 << op for op in SUPPORTED[TOPIC])
    True
    >>> authorized_operations(GROUP, asked=False)
    -2147483648
"""
from __future__ import annotations

__all__ = ["TOPIC", "GROUP", "CLUSTER", "SUPPORTED", "NOT_REQUESTED", "authorized_operations"]

# AclOperation codes (org.apache.kafka.common.acl.AclOperation)
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

# ResourceType codes, and each type's operations as Kafka 3.x's AclEntry.supportedOperations
TOPIC, GROUP, CLUSTER = 2, 3, 4
SUPPORTED = {
    TOPIC: (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DESCRIBE, DELETE),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE),
}
NOT_REQUESTED = -(1 << 31)


def authorized_operations(resource_type: int, asked: bool) -> int:
    """The field's value for one resource: every supported operation (no authorizer yet)."""
    if not asked:
        return NOT_REQUESTED
    bits = 0
    for op in SUPPORTED[resource_type]:
        bits |= 1 << op
    return bits
