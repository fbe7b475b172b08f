"""A classic group as a KIP-848 consumer group, and back: the data half of Kafka's online
migration between the protocols (the policy, the timers and the writes are
:mod:`.classic_members`'). Pure functions: no clock, no lock, no I/O.

Upgrading (Kafka's ConsumerGroup.fromClassicGroup): every classic member becomes a member that
keeps speaking the classic protocol, at the classic generation as member epoch, STABLE, its
target and its current assignment both what its last SyncGroup gave it; the group epoch and
the assignment epoch are the generation. The member bringing the upgrade then bumps the epoch,
and the classic members give up partitions as they rejoin.

Downgrading (Kafka's ClassicGroup.fromConsumerGroup): the members left, all classic ones,
become a Stable classic group at the group epoch as generation, each with its target assignment
as its SyncGroup assignment (in the version of its subscription); the coordinator then starts a
rebalance, which they join.

Example::

    >>> from fastkafka.protocol.consumer_protocol import encode_assignment, encode_subscription
    >>> classic = GroupMetadata("g", 0, STABLE); classic.generation_id = 3
    >>> classic.protocol_type, classic.protocol_name = "consumer", "range"
    >>> m = MemberMetadata("m1", "g", None, "c", "/h", 10_000, 30_000, "consumer",
    ...                    [("range", encode_subscription(["t"]))])
    >>> m.assignment = encode_assignment([("t", 0), ("t", 1)]); classic.add(m)
    >>> g = to_consumer_group(classic, {"t": "T-id"}.get)
    >>> g.group_epoch, g.members["m1"].member_epoch, g.members["m1"].assigned
    (3, 3, {'T-id': {0, 1}})
    >>> back = to_classic_group(g, {"T-id": "t"}.get, GroupMetadata("g"), now=0)
    >>> back.state, back.generation_id, sorted(decode_assignment(back.get("m1").assignment))
    ('Stable', 3, [('t', 0), ('t', 1)])
"""
from __future__ import annotations

from typing import Callable

from ..protocol.consumer_protocol import decode_assignment, encode_assignment, protocol_version, read_subscription
from .consumer_group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember
from .current_assignment import STABLE as MEMBER_STABLE, Reconciliation
from .group import CONSUMER_PROTOCOL_TYPE, STABLE, GroupMetadata, MemberMetadata

__all__ = ["to_consumer_group", "to_classic_group", "by_topic_id", "classic_assignment", "subscription"]


def to_consumer_group(classic: GroupMetadata, topic_id: Callable[[str], object | None]) -> ConsumerGroup:
    """The consumer group ``classic`` becomes (``topic_id`` maps a topic name to its id, None
    for a topic gone). Raises ProtocolError for a member's unreadable subscription or
    assignment, which Kafka refuses the upgrade for."""
    group = ConsumerGroup(classic.group_id)
    epoch = group.group_epoch = group.assignment_epoch = classic.generation_id
    for cm in classic.members.values():
        sub = subscription(cm.protocols, classic.protocol_name)
        assigned = by_topic_id(decode_assignment(cm.assignment), topic_id)
        m = ConsumerGroupMember(cm.member_id, cm.group_instance_id, sub.rack_id, cm.client_id, cm.client_host,
                                cm.rebalance_timeout_ms, tuple(sorted(sub.topics)))
        m.previous_member_epoch = epoch
        m.reconciliation = Reconciliation(MEMBER_STABLE, epoch, assigned, {})
        m.classic = ClassicMemberMetadata(cm.session_timeout_ms, tuple((n, bytes(b)) for n, b in cm.protocols))
        group.target[cm.member_id] = {tid: set(ps) for tid, ps in assigned.items()}
        group.add_member(m)
    return group


def to_classic_group(group: ConsumerGroup, topic_name: Callable[[object], str | None], into: GroupMetadata,
                     now: int) -> GroupMetadata:
    """``into`` (the group's holder of committed offsets, emptied of members) made the Stable
    classic group that ``group``'s members (all classic) form; ``topic_name`` maps a topic id
    to its name. Raises ProtocolError for a member's unreadable subscription."""
    into.members.clear()
    into.static_members.clear()
    into.pending_members.clear()
    into.leader_id = None
    for m in group.members.values():
        into.add(MemberMetadata(m.member_id, group.group_id, m.instance_id, m.client_id, m.client_host,
                                m.classic_metadata.session_timeout_ms, m.rebalance_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                                list(m.classic_metadata.protocols)))
    into.protocol_type = CONSUMER_PROTOCOL_TYPE
    into.generation_id = group.group_epoch
    into.protocol_name = into.select_protocol()
    into.state, into.state_timestamp = STABLE, now
    into.rebalance_deadline = into.initial_delay_until = None
    for cm in into.members.values():
        cm.assignment = classic_assignment(group.target.get(cm.member_id, {}), cm.metadata(into.protocol_name),
                                           topic_name)
        cm.is_new = False
    return into


def subscription(protocols, protocol_name: str | None = None):
    """The subscription a member's protocols carry (``protocol_name``'s, else the first's: a
    consumer sends the same subscription with each assignor)."""
    chosen = dict(protocols).get(protocol_name) if protocol_name else None
    return read_subscription(chosen if chosen is not None else protocols[0][1])


def by_topic_id(tps, topic_id: Callable[[str], object | None]) -> dict:
    """``(topic name, partition)`` pairs as ``{topic_id: {partition}}``, unknown topics left out."""
    out: dict = {}
    for name, p in tps:
        tid = topic_id(name)
        if tid is not None:
            out.setdefault(tid, set()).add(p)
    return out


def classic_assignment(partitions: dict, subscription_bytes: bytes, topic_name: Callable[[object], str | None]
                       ) -> bytes:
    """SyncGroup's assignment bytes for ``{topic_id: {partition}}``, in the version of the
    member's subscription, as Kafka answers (topics without a name now are left out)."""
    named = [(name, p) for tid, ps in partitions.items() if (name := topic_name(tid)) is not None for p in ps]
    return encode_assignment(named, protocol_version(subscription_bytes))
