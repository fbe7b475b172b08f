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

Strings are int16-length UTF-8 (-1 for null), bytes int32-length. A null value is a tombstone:
the compacted topic drops the key (an expired offset, a deleted group).

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
from .consumer_group_formats import KINDS as CONSUMER_GROUP_KINDS, ConsumerGroupKey, decode_consumer_group_key

__all__ = ["OffsetKey", "GroupKey", "OffsetAndMetadata", "GroupRecord", "MemberRecord",
           "java_string_hashcode", "partition_for", "offset_key", "group_key", "decode_key",
           "offset_value", "decode_offset_value", "group_value", "decode_group_value"]

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")

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


# --- primitive writers/readers ---

def write_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += _I16.pack(-1)
        return
    b = s.encode()
    out += _I16.pack(len(b))
    out += b


def _w_bytes(out: bytearray, b: bytes | None) -> None:
    if b is None:
        out += _I32.pack(-1)
        return
    out += _I32.pack(len(b))
    out += b


class RecordReader:
    """Bounds-checked cursor over a record of an internal topic (``__consumer_offsets``,
    ``__transaction_state``); any overrun is a CorruptRecordError (the record is skipped on load)."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf):
        self.buf = bytes(buf)
        self.pos = 0

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise errors.CorruptRecordError(f"internal-topic record truncated at {self.pos}")
        b = self.buf[self.pos:end]
        self.pos = end
        return b

    def i8(self) -> int:
        return struct.unpack(">b", self._take(1))[0]

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def i64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def str(self) -> str | None:
        n = self.i16()
        return None if n < 0 else self._take(n).decode("utf-8", "replace")

    def bytes(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else self._take(n)


# --- keys ---

def offset_key(group: str, topic: str, partition: int) -> bytes:
    out = bytearray(_I16.pack(OFFSET_KEY_VERSION))
    write_string(out, group)
    write_string(out, topic)
    out += _I32.pack(partition)
    return bytes(out)


def group_key(group: str) -> bytes:
    out = bytearray(_I16.pack(GROUP_KEY_VERSION))
    write_string(out, group)
    return bytes(out)


def decode_key(buf) -> OffsetKey | GroupKey | ConsumerGroupKey | None:
    """The key of a ``__consumer_offsets`` record; None for kinds we do not know (newer Kafka's:
    share groups, streams groups)."""
    r = RecordReader(buf)
    version = r.i16()
    if version in (0, 1):
        return OffsetKey(r.str() or "", r.str() or "", r.i32())
    if version == 2:
        return GroupKey(r.str() or "")
    if version in CONSUMER_GROUP_KINDS:
        return decode_consumer_group_key(r.buf)
    return None


# --- offset values ---

def offset_value(om: OffsetAndMetadata) -> bytes:
    """v1 when the commit carried an explicit retention (only v1 has an expire timestamp), else v3."""
    if om.expire_timestamp is not None:
        out = bytearray(_I16.pack(1))
        out += _I64.pack(om.offset)
        write_string(out, om.metadata)
        out += _I64.pack(om.commit_timestamp)
        out += _I64.pack(om.expire_timestamp)
        return bytes(out)
    out = bytearray(_I16.pack(3))
    out += _I64.pack(om.offset)
    out += _I32.pack(om.leader_epoch)
    write_string(out, om.metadata)
    out += _I64.pack(om.commit_timestamp)
    return bytes(out)


def decode_offset_value(buf) -> OffsetAndMetadata:
    r = RecordReader(buf)
    version = r.i16()
    if not 0 <= version <= 4:
        raise errors.CorruptRecordError(f"unknown offset commit value version {version}")
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.str() or ""
    commit_ts = r.i64()
    expire_ts = r.i64() if version == 1 else None
    if expire_ts is not None and expire_ts < 0:
        expire_ts = None
    return OffsetAndMetadata(offset, metadata, commit_ts, expire_ts, leader_epoch)


# --- group metadata values ---

def group_value(g: GroupRecord, version: int = GROUP_VALUE_VERSION) -> bytes:
    out = bytearray(_I16.pack(version))
    write_string(out, g.protocol_type)
    out += _I32.pack(g.generation_id)
    write_string(out, g.protocol_name)
    write_string(out, g.leader_id)
    if version >= 2:
        out += _I64.pack(g.current_state_timestamp)
    out += _I32.pack(len(g.members))
    for m in g.members:
        write_string(out, m.member_id)
        if version >= 3:
            write_string(out, m.group_instance_id)
        write_string(out, m.client_id)
        write_string(out, m.client_host)
        if version >= 1:
            out += _I32.pack(m.rebalance_timeout_ms)
        out += _I32.pack(m.session_timeout_ms)
        _w_bytes(out, m.subscription)
        _w_bytes(out, m.assignment)
    return bytes(out)


def decode_group_value(buf) -> GroupRecord:
    r = RecordReader(buf)
    version = r.i16()
    if not 0 <= version <= 3:
        raise errors.CorruptRecordError(f"unknown group metadata value version {version}")
    protocol_type = r.str() or ""
    generation = r.i32()
    protocol = r.str()
    leader = r.str()
    state_ts = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.i32()):
        member_id = r.str() or ""
        instance = r.str() if version >= 3 else None
        client_id = r.str() or ""
        client_host = r.str() or ""
        rebalance = r.i32() if version >= 1 else -1
        session = r.i32()
        subscription = r.bytes() or b""
        assignment = r.bytes() or b""
        members.append(MemberRecord(member_id, instance, client_id, client_host,
                                    rebalance, session, subscription, assignment))
    return GroupRecord(protocol_type, generation, protocol, leader, state_ts, members)
