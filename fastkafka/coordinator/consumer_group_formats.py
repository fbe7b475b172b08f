"""The ``__consumer_offsets`` records of KIP-848 consumer groups, in Kafka's layouts (3.8 to
4.x: 3.7's early-access CurrentMemberAssignment value had other fields, and is not read).

A key is an int16 version, which says the kind of record, then the (non-flexible) key struct;
a value is an int16 version (0) then the flexible value struct (compact strings and arrays,
tagged fields). A null value is a tombstone. The kinds, by key version::

    3  ConsumerGroupMetadata               key: group_id           value: the group epoch
    4  ConsumerGroupPartitionMetadata      key: group_id           value: the subscribed topics
    5  ConsumerGroupMemberMetadata         key: group_id member_id value: what the member asked for
    6  ConsumerGroupTargetAssignmentMetadata key: group_id         value: the assignment epoch
    7  ConsumerGroupTargetAssignmentMember key: group_id member_id value: its target partitions
    8  ConsumerGroupCurrentMemberAssignment key: group_id member_id value: its epochs, state, partitions

Versions 0-2 are the classic records (:mod:`.formats`). The structs below are declared in the
messages' notation (:mod:`fastkafka.protocol.schema`), field for field as Kafka's JSON.

Example::

    >>> k = consumer_group_key(MEMBER_METADATA, "g", "m1")
    >>> decode_consumer_group_key(k)
    ConsumerGroupKey(kind=5, group_id='g', member_id='m1')
    >>> v = encode_value(GROUP_METADATA, {"epoch": 7})
    >>> v.hex(), decode_value(GROUP_METADATA, v).epoch
    ('00000000000700', 7)
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from .. import errors
from ..protocol.codec import decode_struct, encode_struct
from ..protocol.schema import parse_struct
from ..protocol.types import ProtocolError

__all__ = ["ConsumerGroupKey", "GROUP_METADATA", "PARTITION_METADATA", "MEMBER_METADATA",
           "TARGET_ASSIGNMENT_METADATA", "TARGET_ASSIGNMENT_MEMBER", "CURRENT_MEMBER_ASSIGNMENT",
           "KINDS", "MEMBER_KINDS", "consumer_group_key", "decode_consumer_group_key",
           "encode_value", "decode_value", "MEMBER_STATES"]

# the key versions, one per kind of record
GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA, \
    TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT = range(3, 9)
KINDS = range(3, 9)
MEMBER_KINDS = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT})

#: Kafka's MemberState ids, by our state names (current_assignment's)
MEMBER_STATES = {"STABLE": 0, "UNREVOKED_PARTITIONS": 1, "UNRELEASED_PARTITIONS": 2, "UNKNOWN": 127}

_GROUP_KEY = parse_struct("ConsumerGroupKey", """
    group_id                 string
""")
_MEMBER_KEY = parse_struct("ConsumerGroupMemberKey", """
    group_id                 string
    member_id                string
""")

_TOPIC_PARTITIONS = """
      topic_id               uuid
      partitions             []int32
"""

_VALUES = {
    GROUP_METADATA: parse_struct("ConsumerGroupMetadataValue", """
    epoch                    int32
"""),
    PARTITION_METADATA: parse_struct("ConsumerGroupPartitionMetadataValue", """
    topics                   []
      topic_id               uuid
      topic_name             string
      num_partitions         int32
      partition_metadata     []
        partition            int32
        racks                []string
"""),
    MEMBER_METADATA: parse_struct("ConsumerGroupMemberMetadataValue", """
    instance_id              string  null  =null
    rack_id                  string  null  =null
    client_id                string
    client_host              string
    subscribed_topic_names   []string
    subscribed_topic_regex   string  null  =null
    rebalance_timeout_ms     int32   =-1
    server_assignor          string  null  =null
    classic_member_metadata  {}      null  =null  tag=0
      session_timeout_ms     int32
      supported_protocols    []
        name                 string
        metadata             bytes
"""),
    TARGET_ASSIGNMENT_METADATA: parse_struct("ConsumerGroupTargetAssignmentMetadataValue", """
    assignment_epoch         int32
"""),
    TARGET_ASSIGNMENT_MEMBER: parse_struct("ConsumerGroupTargetAssignmentMemberValue", """
    topic_partitions         []""" + _TOPIC_PARTITIONS),
    CURRENT_MEMBER_ASSIGNMENT: parse_struct("ConsumerGroupCurrentMemberAssignmentValue", """
    member_epoch             int32
    previous_member_epoch    int32
    state                    int8
    assigned_partitions      []""" + _TOPIC_PARTITIONS + """
    partitions_pending_revocation []""" + _TOPIC_PARTITIONS),
}
_VALUE_VERSION = 0
_I16 = struct.Struct(">h")


class ConsumerGroupKey(NamedTuple):
    kind: int                    # the key version: GROUP_METADATA ... CURRENT_MEMBER_ASSIGNMENT
    group_id: str
    member_id: str | None = None


def consumer_group_key(kind: int, group_id: str, member_id: str | None = None) -> bytes:
    """The key bytes of one record of ``kind`` (a member's kinds need ``member_id``)."""
    if kind in MEMBER_KINDS:
        return _I16.pack(kind) + encode_struct(_MEMBER_KEY, kind, {"group_id": group_id, "member_id": member_id})
    return _I16.pack(kind) + encode_struct(_GROUP_KEY, kind, {"group_id": group_id})


def decode_consumer_group_key(buf) -> ConsumerGroupKey | None:
    """The key, None for a version that is no consumer-group kind (raises CorruptRecordError
    for a truncated one)."""
    kind = _I16.unpack_from(buf, 0)[0] if len(buf) >= 2 else -1
    if kind not in KINDS:
        return None
    try:
        key = decode_struct(_MEMBER_KEY if kind in MEMBER_KINDS else _GROUP_KEY, kind, buf, 2)[0]
    except ProtocolError as e:
        raise errors.CorruptRecordError(str(e)) from None
    return ConsumerGroupKey(kind, key.group_id, getattr(key, "member_id", None))


def encode_value(kind: int, obj) -> bytes:
    """Value version 0 of ``kind`` from ``obj`` (a dict or an object with the fields' names)."""
    return _I16.pack(_VALUE_VERSION) + encode_struct(_VALUES[kind], _VALUE_VERSION, obj, flexible=True)


def decode_value(kind: int, buf):
    """The value struct of ``kind``; later versions are read as 0 (Kafka's only adds tagged
    fields to them), a truncated one raises CorruptRecordError."""
    try:
        if len(buf) < 2 or _I16.unpack_from(buf, 0)[0] < 0:
            raise ProtocolError(f"consumer group record of kind {kind}: no value version")
        return decode_struct(_VALUES[kind], _VALUE_VERSION, buf, 2, flexible=True)[0]
    except ProtocolError as e:
        raise errors.CorruptRecordError(str(e)) from None
