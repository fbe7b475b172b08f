"""A KIP-848 consumer group as ``__consumer_offsets`` records, and back: what is written when a
group changes, and how a loading coordinator rebuilds its groups.

A group is the set of records :func:`group_records` gives (layouts in
:mod:`.consumer_group_formats`): its epoch, its subscribed topics' metadata, its target
assignment epoch, and per member its metadata, its target assignment and its current assignment
(epochs, state, partitions); a member speaking the classic protocol has its session timeout and
protocols in its metadata record's tagged field, as Kafka 3.8+ writes them. A change is written
as its difference from what was written last (``group.records``): :func:`record_changes` for
the group's own records and those of the members that changed, :func:`changes` between two
whole sets (a deleted group: every record tombstoned); new or changed records first, then
tombstones (a member left: its three records), ordered as Kafka orders them (a member's records
before the group's), so that compaction, which keeps the last record of each key, leaves the
group as it last was. :func:`replay` rebuilds groups from a partition's records in offset
order.

Example::

    >>> g = ConsumerGroup("g"); g.group_epoch = 1
    >>> m = g.get_or_create_member("m1"); m.subscribed_topic_names = ("t",); g.add_member(m)
    >>> first = changes({}, group_records(g)); len(first)
    5
    >>> g2 = replay([(k, v) for k, v in first])["g"]
    >>> g2.group_epoch, list(g2.members), g2.members["m1"].subscribed_topic_names
    (1, ['m1'], ('t',))
    >>> _ = g.remove_member("m1"); [v for _, v in changes(g2.records, group_records(g))]
    [None, None]
"""
from __future__ import annotations

import logging
import struct
from typing import Iterable

from .. import errors
from .assignors import DEFAULT_ASSIGNOR
from .consumer_group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember
from .consumer_group_formats import (CURRENT_MEMBER_ASSIGNMENT, GROUP_METADATA, MEMBER_METADATA,
                                     MEMBER_STATES, PARTITION_METADATA, TARGET_ASSIGNMENT_MEMBER, ConsumerGroupKey,
                                     TARGET_ASSIGNMENT_METADATA, consumer_group_key,
                                     decode_consumer_group_key, decode_value, encode_value)
from .current_assignment import UNKNOWN, Reconciliation

__all__ = ["group_records", "record_changes", "changes", "replay"]

log = logging.getLogger("fastkafka.coordinator")

_KIND = struct.Struct(">h")
# tombstones go members' records first, the group's last (Kafka's removeMember / deleteGroup order)
_TOMBSTONE_ORDER = {CURRENT_MEMBER_ASSIGNMENT: 0, TARGET_ASSIGNMENT_MEMBER: 1, MEMBER_METADATA: 2,
                    TARGET_ASSIGNMENT_METADATA: 3, PARTITION_METADATA: 4, GROUP_METADATA: 5}
_STATE_NAMES = {v: k for k, v in MEMBER_STATES.items()}


def group_records(group: ConsumerGroup) -> dict[bytes, bytes]:
    """Every record of ``group`` as it is now: key bytes -> value bytes, the group's first."""
    out = _group_level(group)
    for mid in set(group.members) | set(group.target):
        out.update(_member_records(group, mid))
    return {k: v for k, v in out.items() if v is not None}


def record_changes(group: ConsumerGroup, member_ids: Iterable[str]) -> list[tuple[bytes, bytes | None]]:
    """What differs from ``group.records``: the group's own records, and those of ``member_ids``
    (the members that may have changed, or left), new and changed first, then tombstones. Only
    these members are encoded, so a heartbeat costs the same in a group of any size."""
    candidates = _group_level(group)
    for mid in member_ids:
        candidates.update(_member_records(group, mid))
    have = group.records
    upserts = [(k, v) for k, v in candidates.items() if v is not None and have.get(k) != v]
    gone = sorted((k for k, v in candidates.items() if v is None and k in have), key=_tombstone_order)
    return upserts + [(k, None) for k in gone]


def _group_level(group: ConsumerGroup) -> dict[bytes, bytes | None]:
    gid = group.group_id
    return {
        consumer_group_key(GROUP_METADATA, gid): encode_value(GROUP_METADATA, {"epoch": group.group_epoch}),
        consumer_group_key(PARTITION_METADATA, gid): encode_value(PARTITION_METADATA, {"topics": [
            {"topic_id": tid, "topic_name": name, "num_partitions": n, "partition_metadata": []}
            for name, (tid, n) in sorted(group.subscription_metadata.items())]}),
        consumer_group_key(TARGET_ASSIGNMENT_METADATA, gid): encode_value(
            TARGET_ASSIGNMENT_METADATA, {"assignment_epoch": group.assignment_epoch}),
    }


def _member_records(group: ConsumerGroup, mid: str) -> dict[bytes, bytes | None]:
    """A member's three records; None for those it has not (any more)."""
    gid = group.group_id
    m, target = group.members.get(mid), group.target.get(mid)
    return {
        consumer_group_key(MEMBER_METADATA, gid, mid): None if m is None else encode_value(MEMBER_METADATA, {
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "rebalance_timeout_ms": m.rebalance_timeout_ms, "server_assignor": m.server_assignor,
            "classic_member_metadata": _classic_value(m.classic)}),
        consumer_group_key(TARGET_ASSIGNMENT_MEMBER, gid, mid): None if target is None else encode_value(
            TARGET_ASSIGNMENT_MEMBER, {"topic_partitions": _topic_partitions(target)}),
        consumer_group_key(CURRENT_MEMBER_ASSIGNMENT, gid, mid): None if m is None else encode_value(
            CURRENT_MEMBER_ASSIGNMENT, {
                "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
                "state": MEMBER_STATES[m.state], "assigned_partitions": _topic_partitions(m.assigned),
                "partitions_pending_revocation": _topic_partitions(m.pending_revocation)}),
    }


def _classic_value(classic: ClassicMemberMetadata | None) -> dict | None:
    """A classic member's metadata, in the tagged field Kafka 3.8+ writes it to."""
    if classic is None:
        return None
    return {"session_timeout_ms": classic.session_timeout_ms,
            "supported_protocols": [{"name": n, "metadata": meta} for n, meta in classic.protocols]}


def _tombstone_order(key: bytes) -> int:
    return _TOMBSTONE_ORDER[_KIND.unpack_from(key)[0]]


def _topic_partitions(partitions: dict) -> list[dict]:
    return [{"topic_id": tid, "partitions": sorted(ps)} for tid, ps in sorted(partitions.items(), key=str)
            if ps]


def changes(before: dict[bytes, bytes], after: dict[bytes, bytes]) -> list[tuple[bytes, bytes | None]]:
    """The records that turn ``before`` into ``after``: the new and changed ones, then tombstones."""
    upserts = [(k, v) for k, v in after.items() if before.get(k) != v]
    gone = sorted((k for k in before if k not in after), key=_tombstone_order)
    return upserts + [(k, None) for k in gone]


def replay(records: Iterable[tuple[bytes, bytes | None]]) -> dict[str, ConsumerGroup]:
    """The groups that ``records`` (consumer-group keys and values, in offset order) leave: the
    last record of each key counts, a tombstone removes it, and a group exists while its
    ConsumerGroupMetadata record does. Each group's ``records`` are set to what it was built from.
    A group with an unreadable record is left out (logged), as the loader skips such records."""
    last: dict[bytes, bytes] = {}
    for key, value in records:
        if value is None:
            last.pop(key, None)
        else:
            last[key] = value
    by_group: dict[str, dict[bytes, bytes]] = {}
    for key, value in last.items():
        by_group.setdefault(_key(key).group_id, {})[key] = value
    groups = {}
    for gid, recs in by_group.items():
        try:
            group = _rebuild(gid, recs)
        except errors.CorruptRecordError as e:
            log.warning("consumer group %s: unreadable record, group not loaded (%s)", gid, e)
            continue
        if group is not None:
            groups[gid] = group
    return groups


def _key(buf: bytes) -> ConsumerGroupKey:
    key = decode_consumer_group_key(buf)
    assert key is not None, "replay is given consumer group records only (the loader sorts keys by kind)"
    return key


def _rebuild(gid: str, recs: dict[bytes, bytes]) -> ConsumerGroup | None:
    group = ConsumerGroup(gid)
    found: dict[int, dict] = {}
    for key, value in recs.items():
        k = _key(key)
        found.setdefault(k.kind, {})[k.member_id] = decode_value(k.kind, value)
    if GROUP_METADATA not in found:
        return None                # what a deleted group left behind: compaction drops it
    group.group_epoch = found[GROUP_METADATA][None].epoch
    if PARTITION_METADATA in found:
        group.subscription_metadata = {t.topic_name: (t.topic_id, t.num_partitions)
                                       for t in found[PARTITION_METADATA][None].topics}
    if TARGET_ASSIGNMENT_METADATA in found:
        group.assignment_epoch = found[TARGET_ASSIGNMENT_METADATA][None].assignment_epoch
    group.target = {mid: _partitions(v.topic_partitions)
                    for mid, v in found.get(TARGET_ASSIGNMENT_MEMBER, {}).items()}
    current = found.get(CURRENT_MEMBER_ASSIGNMENT, {})
    for mid, v in found.get(MEMBER_METADATA, {}).items():
        m = ConsumerGroupMember(mid, v.instance_id, v.rack_id, v.client_id, v.client_host,
                                v.rebalance_timeout_ms, tuple(sorted(v.subscribed_topic_names)),
                                v.subscribed_topic_regex or None, v.server_assignor)
        c = v.classic_member_metadata
        if c is not None:
            m.classic = ClassicMemberMetadata(c.session_timeout_ms, tuple(
                (p.name, bytes(p.metadata)) for p in c.supported_protocols))
        c = current.get(mid)
        if c is not None:
            m.previous_member_epoch = c.previous_member_epoch
            m.reconciliation = Reconciliation(_STATE_NAMES.get(c.state, UNKNOWN), c.member_epoch,
                                              _partitions(c.assigned_partitions),
                                              _partitions(c.partitions_pending_revocation))
        group.add_member(m)
    group.assignor_name = group.preferred_assignor(DEFAULT_ASSIGNOR)
    group.records = dict(recs)
    return group


def _partitions(topic_partitions) -> dict:
    return {tp.topic_id: set(tp.partitions) for tp in topic_partitions if tp.partitions}
