"""Record keys and values of ``__consumer_offsets``, in Kafka's layouts (so Kafka's tools read them).

Every key starts with an int16 version that says what kind of record it is::

    OffsetCommitKey    v0/v1:  version int16 | group string | topic string | partition int32
    GroupMetadataKey   v2:     version int16 | group string
    ConsumerGroup*Key  v3-8:   KIP-848 consumer groups (:mod:`.consumer_group_formats`)

    OffsetCommitValue  v0:  version | offset int64 | metadata string | commit_timestamp int64
                       v1:  ... v0 ... | expire_timestamp int64          (explicit retention)
                       v2:  same as v0
                       v3:  version | offset int64 | leader_epoch int32 | metadata string
                            | commit_timestamp int64                     (what we write)
    GroupMetadataValue v0-3: version | protocol_type string | generation int32
                            | protocol string? | leader string? | current_state_timestamp int64 (v2+)
                            | members [member_id string | group_instance_id string? (v3+)
                              | client_id string | client_host string | rebalance_timeout int32 (v1+)
                              | session_timeout int32 | subscription bytes | assignment bytes]
    OffsetCommitValue v4, GroupMetadataValue v4: v3's fields, flexible (Kafka 4 writes them)

Strings are int16-length UTF-8 (-1 for null), bytes int32-length; in the flexible v4, compact
(unsigned varint length + 1) and a tagged-fields section ends each struct. A null value is a
tombstone: the compacted topic drops the key (an expired offset, a deleted group). The structs
are declared in the messages' notation (:mod:`fastkafka.protocol.schema`), field for field as
Kafka's JSON; we write v1/v3 values, which every Kafka since 2.x reads.

Example::

    >>> k = offset_key("g", "t", 3)
    >>> decode_key(k)
    OffsetKey(group='g', topic='t', partition=3)
    >>> v = offset_value(OffsetAndMetadata(42, "meta", 1000, leader_epoch=5))
    >>> decode_offset_value(v)
    OffsetAndMetadata(offset=42, metadata='meta', commit_timestamp=1000, expire_timestamp=None, leader_epoch=5)
    >>> partition_for("my-group", 50)
    36
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from .. import errors
from ..protocol.codec import decode_struct, encode_struct
from ..protocol.schema import parse_struct
from ..protocol.types import ProtocolError
from .consumer_group_formats import KINDS as CONSUMER_GROUP_KINDS, ConsumerGroupKey, decode_consumer_group_key

__all__ = ["OffsetKey", "GroupKey", "OffsetAndMetadata", "GroupRecord", "MemberRecord",
           "java_string_hashcode", "partition_for", "offset_key", "group_key", "decode_key",
           "offset_value", "decode_offset_value", "group_value", "decode_group_value"]

_I16 = struct.Struct(">h")

OFFSET_KEY_VERSION = 1          # v0 and v1 share a layout; Kafka writes 1
GROUP_KEY_VERSION = 2
GROUP_VALUE_VERSION = 3


class OffsetKey(NamedTuple):
    group: str
    topic: str
    partition: int


class GroupKey(NamedTuple):
    group: str


class OffsetAndMetadata(NamedTuple):
    """A committed offset. ``expire_timestamp`` is set only by an explicit retention (value v1)."""

    offset: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None
    leader_epoch: int = -1


class MemberRecord(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


class GroupRecord(NamedTuple):
    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    current_state_timestamp: int
    members: list[MemberRecord]


def java_string_hashcode(s: str) -> int:
    """``String.hashCode()`` of Java: s[0]*31^(n-1) + ... over UTF-16 code units, as int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition that owns ``group_id``, as Kafka computes it.

    Kafka's ``Utils.abs`` maps Integer.MIN_VALUE to 0 (``n & 0x7fffffff``), not to a negative.
    """
    return (java_string_hashcode(group_id) & 0x7FFFFFFF) % num_partitions


# --- the structs, field for field as Kafka's JSON (group-coordinator's OffsetCommitKey.json etc.) ---

_OFFSET_KEY = parse_struct("OffsetCommitKey", """
    group                    string  v0-1
    topic                    string  v0-1
    partition                int32   v0-1
""")
_GROUP_KEY = parse_struct("GroupMetadataKey", """
    group                    string  v2
""")
_OFFSET_VALUE = parse_struct("OffsetCommitValue", """
    offset                   int64
    leader_epoch             int32   v3+  =-1
    metadata                 string
    commit_timestamp         int64
    expire_timestamp         int64   v1   =-1
""")
_GROUP_VALUE = parse_struct("GroupMetadataValue", """
    protocol_type            string
    generation               int32
    protocol                 string  null
    leader                   string  null
    current_state_timestamp  int64   v2+  =-1
    members                  []
      member_id              string
      group_instance_id      string  v3+  null3+  =null
      client_id              string
      client_host            string
      rebalance_timeout      int32   v1+  =-1
      session_timeout        int32
      subscription           bytes
      assignment             bytes
""")
_OffsetKey, _OffsetValue = _OFFSET_KEY.cls, _OFFSET_VALUE.cls
_OFFSET_KEY_PREFIX, _V1, _V3 = _I16.pack(OFFSET_KEY_VERSION), _I16.pack(1), _I16.pack(3)
# Both values' v4 is flexible (compact strings and arrays, tagged fields): Kafka 4's writes. We
# read it and keep writing v3/v1, which every Kafka since 2.x reads.
_MAX_VALUE_VERSION = 4
_FIRST_FLEXIBLE_VALUE = 4


def _version(buf, what: str, highest: int) -> int:
    if len(buf) < 2:
        raise errors.CorruptRecordError(f"{what}: no version")
    version = _I16.unpack_from(buf, 0)[0]
    if not 0 <= version <= highest:
        raise errors.CorruptRecordError(f"unknown {what} version {version}")
    return version


def _decode(s, version: int, buf):
    """The struct after the version; a truncated or malformed one is a CorruptRecordError (the
    loader skips it)."""
    try:
        return decode_struct(s, version, buf, 2, flexible=version >= _FIRST_FLEXIBLE_VALUE)[0]
    except ProtocolError as e:
        raise errors.CorruptRecordError(str(e)) from None


# --- keys ---

def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _OFFSET_KEY_PREFIX + encode_struct(_OFFSET_KEY, OFFSET_KEY_VERSION,
                                              _OffsetKey(group=group, topic=topic, partition=partition))


def group_key(group: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + encode_struct(_GROUP_KEY, GROUP_KEY_VERSION, {"group": group})


def decode_key(buf) -> OffsetKey | GroupKey | ConsumerGroupKey | None:
    """The key of a ``__consumer_offsets`` record; None for kinds we do not know (newer Kafka's:
    share groups, streams groups)."""
    if len(buf) < 2:
        raise errors.CorruptRecordError("__consumer_offsets key without a version")
    version = _I16.unpack_from(buf, 0)[0]
    if version in (0, 1):
        k = _decode(_OFFSET_KEY, version, buf)
        return OffsetKey(k.group, k.topic, k.partition)
    if version == 2:
        return GroupKey(_decode(_GROUP_KEY, version, buf).group)
    if version in CONSUMER_GROUP_KINDS:
        return decode_consumer_group_key(buf)
    return None


# --- offset values ---

def offset_value(om: OffsetAndMetadata) -> bytes:
    """v1 when the commit carried an explicit retention (only v1 has an expire timestamp), else v3."""
    # the struct's own class, not a dict: this runs on every commit, and a dict is coerced
    if om.expire_timestamp is None:
        return _V3 + encode_struct(_OFFSET_VALUE, 3, _OffsetValue(
            offset=om.offset, leader_epoch=om.leader_epoch, metadata=om.metadata,
            commit_timestamp=om.commit_timestamp))
    return _V1 + encode_struct(_OFFSET_VALUE, 1, _OffsetValue(
        offset=om.offset, metadata=om.metadata, commit_timestamp=om.commit_timestamp,
        expire_timestamp=om.expire_timestamp))


def decode_offset_value(buf) -> OffsetAndMetadata:
    version = _version(buf, "offset commit value", _MAX_VALUE_VERSION)
    v = _decode(_OFFSET_VALUE, version, buf)
    expire = v.expire_timestamp if version == 1 and v.expire_timestamp >= 0 else None
    return OffsetAndMetadata(v.offset, v.metadata, v.commit_timestamp, expire, v.leader_epoch)


# --- group metadata values ---

def group_value(g: GroupRecord, version: int = GROUP_VALUE_VERSION) -> bytes:
    members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms, "session_timeout": m.session_timeout_ms,
                "subscription": m.subscription, "assignment": m.assignment} for m in g.members]
    return _I16.pack(version) + encode_struct(_GROUP_VALUE, version, {
        "protocol_type": g.protocol_type, "generation": g.generation_id, "protocol": g.protocol_name,
        "leader": g.leader_id, "current_state_timestamp": g.current_state_timestamp, "members": members},
        flexible=version >= _FIRST_FLEXIBLE_VALUE)


def decode_group_value(buf) -> GroupRecord:
    version = _version(buf, "group metadata value", _MAX_VALUE_VERSION)
    v = _decode(_GROUP_VALUE, version, buf)
    members = [MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.rebalance_timeout, m.session_timeout, m.subscription, m.assignment)
               for m in v.members]
    return GroupRecord(v.protocol_type, v.generation, v.protocol, v.leader, v.current_state_timestamp, members)
