"""GroupMetadata and MemberMetadata: one consumer group's membership, generation and state.

A group moves through Kafka's five states::

    Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
      ^                   ^      |                                   | leader SyncGroup
      |                   |      +--no members left--> Empty         v
      +----last leaves----+----member joins/leaves/dies------------ Stable
    (any) --DeleteGroups / offsets expired--> Dead

This module is pure bookkeeping (no clock, no locks, no I/O); the :class:`GroupCoordinator`
drives it under its lock and decides *when* things happen.

Example::

    >>> g = GroupMetadata("g", now_ms=0)
    >>> m = MemberMetadata("c-1", "g", None, "client", "/127.0.0.1", 10_000, 30_000,
    ...                    "consumer", [("range", b"r"), ("roundrobin", b"rr")])
    >>> g.add(m); g.transition(PREPARING_REBALANCE, 0)
    >>> g.select_protocol()
    'range'
"""
from __future__ import annotations

from typing import Callable

from ..protocol import ProtocolError
from ..protocol.consumer_protocol import decode_subscription
from .formats import OffsetAndMetadata

__all__ = ["EMPTY", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE", "DEAD",
           "GroupMetadata", "MemberMetadata"]

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

CONSUMER_PROTOCOL_TYPE = "consumer"   # groups whose member metadata is the consumer protocol

# Which states a group may enter from which: a wrong transition is a coordinator bug, so it
# raises instead of silently corrupting the group.
_VALID_PREVIOUS = {
    EMPTY: {PREPARING_REBALANCE},
    PREPARING_REBALANCE: {EMPTY, STABLE, COMPLETING_REBALANCE},
    COMPLETING_REBALANCE: {PREPARING_REBALANCE},
    STABLE: {COMPLETING_REBALANCE},
    DEAD: {EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD},
}


class MemberMetadata:
    """One member: its protocols (name, metadata) in preference order and its assignment.

    ``awaiting_join`` / ``awaiting_sync`` hold the callbacks of a JoinGroup / SyncGroup the
    coordinator has not answered yet (the delayed responses); ``heartbeat_deadline`` is when
    the member dies unless it heartbeats, joins or syncs again.
    """

    __slots__ = ("member_id", "group_id", "group_instance_id", "client_id", "client_host",
                 "session_timeout_ms", "rebalance_timeout_ms", "protocol_type", "protocols",
                 "assignment", "awaiting_join", "awaiting_sync", "heartbeat_deadline",
                 "is_new")

    def __init__(self, member_id: str, group_id: str, group_instance_id: str | None,
                 client_id: str, client_host: str, session_timeout_ms: int,
                 rebalance_timeout_ms: int, protocol_type: str,
                 protocols: list[tuple[str, bytes]]):
        self.member_id = member_id
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = list(protocols)
        self.assignment = b""
        self.awaiting_join: Callable | None = None
        self.awaiting_sync: Callable | None = None
        self.heartbeat_deadline = 0
        self.is_new = False

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same metadata, same order: a rejoin that needs no rebalance."""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")

    def __repr__(self):
        return (f"MemberMetadata({self.member_id!r}, instance={self.group_instance_id!r}, "
                f"protocols={self.protocol_names()})")


class GroupMetadata:
    """A group's members, generation and state. Not thread-safe: the coordinator's lock guards it."""

    def __init__(self, group_id: str, now_ms: int = 0, state: str = EMPTY):
        self.group_id = group_id
        self.state = state
        self.state_timestamp = now_ms      # when the group entered its current state
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}     # group_instance_id -> member_id
        self.pending_members: dict[str, int] = {}     # MEMBER_ID_REQUIRED ids -> deadline
        self.rebalance_deadline: int | None = None    # PreparingRebalance ends by then at latest
        self.initial_delay_until: int | None = None   # group.initial.rebalance.delay.ms window
        self.new_member_added = False
        # committed offsets: (topic, partition) -> OffsetAndMetadata (see offsets.py)
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        # offsets committed inside open transactions: producer id -> {(topic, partition): ...},
        # made committed offsets by the transaction's COMMIT marker, dropped by its ABORT
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = {}

    # --- state ---
    def is_(self, state: str) -> bool:
        return self.state == state

    def transition(self, state: str, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id}: illegal transition {self.state} -> {state}")
        self.state = state
        self.state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[PREPARING_REBALANCE]

    # --- membership ---
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_empty(self) -> bool:
        return not self.members

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and \
                self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, new_member_id: str) -> MemberMetadata:
        """A static member came back with a new member id: it keeps its place and assignment."""
        old_id = self.static_members[instance_id]
        member = self.members.pop(old_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        if self.leader_id == old_id:
            self.leader_id = new_member_id
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def subscribed_topics(self) -> set[str] | None:
        """Topics a consumer-protocol group's members subscribe to (empty without members);
        None when unknown -- another protocol type, no protocol chosen yet, or bytes that do not
        parse -- which Kafka's OffsetDelete treats as subscribed to everything."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(decode_subscription(m.metadata(self.protocol_name)))
        except (ProtocolError, KeyError):
            return None
        return topics

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        """``instance_id`` belongs to another member now: the caller was replaced by a newer
        process with the same ``group.instance.id`` (KIP-345). Checked before member existence,
        as Kafka does, so the replaced member gets the fatal FENCED_INSTANCE_ID instead of
        UNKNOWN_MEMBER_ID, which would make it rejoin and own the same partitions twice."""
        owner = self.static_member_id(instance_id)
        return owner is not None and owner != member_id

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    # --- protocols ---
    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """A joining member must share the group's protocol type and at least one protocol."""
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(self.candidate_protocols() & set(names))

    def candidate_protocols(self) -> set[str]:
        members = iter(self.members.values())
        first = next(members, None)
        if first is None:
            return set()
        common = set(first.protocol_names())
        for m in members:
            common &= set(m.protocol_names())
        return common

    def select_protocol(self) -> str:
        """Every member votes for its favourite common protocol; most votes wins (first on ties)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now_ms: int) -> None:
        """Close PreparingRebalance: new generation, chosen protocol, CompletingRebalance (or Empty)."""
        self.generation_id += 1
        self.rebalance_deadline = None
        self.initial_delay_until = None
        self.new_member_added = False
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition(EMPTY, now_ms)

    def member_list(self) -> list[tuple[str, str | None, bytes]]:
        """What the leader's JoinGroup response carries: (member_id, instance_id, metadata)."""
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]

    def __repr__(self):
        return (f"GroupMetadata({self.group_id!r}, {self.state}, generation={self.generation_id}, "
                f"members={list(self.members)})")
