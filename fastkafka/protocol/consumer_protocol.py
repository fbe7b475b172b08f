"""Kafka's consumer protocol: the subscription and assignment bytes that consumer-group members
exchange inside JoinGroup/SyncGroup (opaque to the coordinator except for OffsetDelete, which
must know what a group is subscribed to). Each is a version int16 followed by the struct.

Declared in the same notation as the messages (:mod:`.schema`); versions newer than we declare
are read as the newest we know, as Kafka's clients do (newer fields only ever come last).

Example::

    >>> decode_subscription(encode_subscription(["b", "a"]))
    ['a', 'b']
    >>> sorted(decode_assignment(encode_assignment({("t", 1), ("t", 0), ("u", 2)})))
    [('t', 0), ('t', 1), ('u', 2)]
"""
from __future__ import annotations

import struct
from typing import Iterable

from .codec import decode_struct, encode_struct
from .schema import parse_struct
from .types import ProtocolError

__all__ = ["SUBSCRIPTION", "ASSIGNMENT", "encode_subscription", "decode_subscription", "read_subscription",
           "protocol_version", "encode_assignment", "decode_assignment"]

SUBSCRIPTION = parse_struct("ConsumerProtocolSubscription", """
    topics                   []string
    user_data                bytes   null  =null
    owned_partitions         []      v1+
      topic                  string
      partitions             []int32
    generation_id            int32   v2+  =-1
    rack_id                  string  v3+  null  =null
""")
SUBSCRIPTION_MAX_VERSION = 3

ASSIGNMENT = parse_struct("ConsumerProtocolAssignment", """
    assigned_partitions      []
      topic                  string
      partitions             []int32
    user_data                bytes   null  =null
""")
ASSIGNMENT_MAX_VERSION = 3          # versions 1-3 carry the same fields as 0

_VERSION = struct.Struct(">h")


def _read_versioned(s, max_version: int, buf):
    if len(buf) < 2:
        raise ProtocolError(f"{s.name}: {len(buf)} bytes, no version")
    (version,) = _VERSION.unpack_from(buf, 0)
    if version < 0:
        raise ProtocolError(f"{s.name}: negative version {version}")
    return decode_struct(s, min(version, max_version), buf, 2)[0]


def encode_subscription(topics: Iterable[str]) -> bytes:
    """Version 0 bytes subscribing to ``topics`` (sorted), no user data."""
    return _VERSION.pack(0) + encode_struct(SUBSCRIPTION, 0, {"topics": sorted(topics)})


def decode_subscription(buf) -> list[str]:
    """The subscribed topics, sorted."""
    return sorted(_read_versioned(SUBSCRIPTION, SUBSCRIPTION_MAX_VERSION, buf).topics)


def read_subscription(buf):
    """The whole subscription struct (topics, owned partitions, rack...; fields a version lacks
    have their defaults)."""
    return _read_versioned(SUBSCRIPTION, SUBSCRIPTION_MAX_VERSION, buf)


def protocol_version(buf) -> int:
    """The version a subscription or assignment is written in."""
    if len(buf) < 2:
        raise ProtocolError(f"{len(buf)} bytes, no version")
    return _VERSION.unpack_from(buf, 0)[0]


def encode_assignment(tps: Iterable[tuple[str, int]], version: int = 0) -> bytes:
    """Bytes assigning the ``(topic, partition)`` pairs, no user data, in ``version`` (Kafka
    answers a member in the version of its subscription; every version has the same fields)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    parts = [{"topic": t, "partitions": sorted(by_topic[t])} for t in sorted(by_topic)]
    version = max(0, min(version, ASSIGNMENT_MAX_VERSION))
    return _VERSION.pack(version) + encode_struct(ASSIGNMENT, version, {"assigned_partitions": parts})


def decode_assignment(buf) -> set[tuple[str, int]]:
    """The assigned ``(topic, partition)`` pairs (empty bytes: nothing assigned)."""
    if not buf:
        return set()
    a = _read_versioned(ASSIGNMENT, ASSIGNMENT_MAX_VERSION, buf)
    return {(t.topic, p) for t in a.assigned_partitions for p in t.partitions}
