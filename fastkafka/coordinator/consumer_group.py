"""A KIP-848 consumer group and its members, as the coordinator keeps them in memory.

The group has a *group epoch*, bumped whenever membership, a subscription or a subscribed topic's
partition count changes; a *target assignment* computed by the server-side assignor at an
*assignment epoch*; and, per member, where it stands on its way to its target (a
:class:`~.current_assignment.Reconciliation` with its member epoch). ``partition_epochs`` says
which member epoch holds each partition (assigned or still being revoked), so a partition is
handed out only once released.

A member subscribes to topic names, to a regular expression (KIP-848's server-side regex), or
both; ``resolved_regexes`` holds each regex's matching topics as last resolved on the broker.
``records`` is what ``__consumer_offsets`` holds for the group (key bytes -> value bytes, see
:mod:`.consumer_group_records`): each change is written as its difference from it, computed for
the members in ``changed``: those added, removed or moved here, whose target changed, or that
a heartbeat updated.

A member may speak the classic protocol (JoinGroup, SyncGroup, Heartbeat): a classic group
converted to a consumer group keeps its members so (:mod:`.classic_members`). ``classic`` holds
what such a member joined with; the others have None.

Example::

    >>> g = ConsumerGroup("g")
    >>> m = g.get_or_create_member("m1")
    >>> g.state, m.member_epoch
    ('Empty', 0)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from .current_assignment import STABLE as MEMBER_STABLE, Reconciliation

__all__ = ["ClassicMemberMetadata", "ConsumerGroup", "ConsumerGroupMember", "EMPTY", "ASSIGNING", "RECONCILING",
           "STABLE"]

# Kafka's ConsumerGroupState names, as DescribeGroups / ListGroups answer them
EMPTY, ASSIGNING, RECONCILING, STABLE = "Empty", "Assigning", "Reconciling", "Stable"


class ClassicMemberMetadata(NamedTuple):
    """What a member speaking the classic protocol joined with: its session timeout and its
    ``(name, subscription bytes)`` protocols in preference order (Kafka's ClassicMemberMetadata)."""
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass
class ConsumerGroupMember:
    """One member: what it asked for (subscription, assignor, timeouts) and where it stands."""
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    previous_member_epoch: int = -1
    reconciliation: Reconciliation = field(default_factory=Reconciliation)
    session_deadline: int = 0
    #: while it must revoke partitions: when it is fenced if it has not (rebalance timeout)
    revocation_deadline: int | None = None
    #: a member speaking the classic protocol: what it joined with (None: the consumer protocol)
    classic: ClassicMemberMetadata | None = None
    #: a classic member told to rejoin: when it is fenced if it has not (its rebalance timeout)
    join_deadline: int | None = None
    #: a classic member that joined: when it is fenced if it has not synced (rebalance timeout)
    sync_deadline: int | None = None

    @property
    def member_epoch(self) -> int:
        return self.reconciliation.epoch

    @property
    def state(self) -> str:
        return self.reconciliation.state

    @property
    def assigned(self) -> dict:
        return self.reconciliation.assigned

    @property
    def pending_revocation(self) -> dict:
        return self.reconciliation.pending_revocation

    def metadata(self) -> tuple:
        """What its ConsumerGroupMemberMetadata record holds (compared to see if it changed)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.subscribed_topic_regex, self.rebalance_timeout_ms, self.server_assignor, self.classic)

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    @property
    def classic_metadata(self) -> ClassicMemberMetadata:
        """``classic`` of a member known to speak the classic protocol (a checked classic
        request's member, or one of a group whose members all do)."""
        assert self.classic is not None, f"member {self.member_id} speaks the consumer protocol"
        return self.classic

    @property
    def classic_protocol_name(self) -> str:
        """The protocol a classic member is answered with: its first (Kafka's choice too)."""
        return self.classic_metadata.protocols[0][0]

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MEMBER_STABLE and self.member_epoch == epoch


class ConsumerGroup:
    """A consumer group's members, epochs, target assignment and partition owners."""

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, dict] = {}                  # member id -> {topic_id: {partition}}
        #: the subscribed topics as last looked up: name -> (topic_id, partition count)
        self.subscription_metadata: dict[str, tuple] = {}
        self.partition_epochs: dict[tuple, int] = {}       # (topic_id, partition) -> member epoch
        self.assignor_name: str = ""
        #: each member regex's matching topic names, as last resolved
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        self.regexes_resolved_ms = 0
        #: the group's records in ``__consumer_offsets`` as last written: key bytes -> value bytes
        self.records: dict[bytes, bytes] = {}
        #: members whose records may differ from ``records``
        self.changed: set[str] = set()
        #: group epoch, assignment epoch and subscription metadata as last written (None: unknown)
        self.written_level: tuple | None = None

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    def get_or_create_member(self, member_id: str) -> ConsumerGroupMember:
        member = self.members.get(member_id)
        return member if member is not None else ConsumerGroupMember(member_id)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def named(self, member_id: str, instance_id: str | None) -> ConsumerGroupMember | None:
        """The member a request names: by its instance id when it is static, else by member id."""
        return self.members.get(member_id) if instance_id is None else self.static_member(instance_id)

    def member_topics(self, member: ConsumerGroupMember) -> set[str]:
        """The topics ``member`` subscribes to: its names and what its regex resolved to."""
        return set(member.subscribed_topic_names).union(
            self.resolved_regexes.get(member.subscribed_topic_regex or "", ()))

    def subscribed_topic_names(self) -> set[str]:
        return {t for m in self.members.values() for t in self.member_topics(m)}

    def subscribed_regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex}

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (ties: the first name), else ``default``."""
        wanted = [m.server_assignor for m in self.members.values() if m.server_assignor]
        return max(sorted(set(wanted)), key=wanted.count) if wanted else default

    def supports_classic_protocols(self, protocol_type: str, names) -> bool:
        """Whether a classic member joining with ``names`` fits (Kafka's supportsClassicProtocols):
        the consumer protocol type, and a protocol every classic member has too."""
        if protocol_type != "consumer" or not names:
            return False
        for m in self.members.values():
            if m.classic is not None:
                names = set(names) & {n for n, _ in m.classic.protocols}
        return bool(names)

    def all_classic_except(self, member_id: str | None) -> bool:
        return all(m.classic is not None for mid, m in self.members.items() if mid != member_id)

    def waiting_on_unreleased(self, member: ConsumerGroupMember) -> bool:
        """Whether a partition of ``member``'s target it does not have yet is still another's."""
        for tid, ps in self.target.get(member.member_id, {}).items():
            have = member.assigned.get(tid, ())
            if any(p not in have and self.partition_epoch(tid, p) != -1 for p in ps):
                return True
        return False

    def partition_epoch(self, topic_id, partition: int) -> int:
        """The epoch of the member holding the partition, -1 when it is free."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def add_member(self, member: ConsumerGroupMember) -> None:
        """Put ``member`` in the group (a no-op for one already in it)."""
        if member.member_id not in self.members:
            self.members[member.member_id] = member
            self._claim(member)
            self.changed.add(member.member_id)

    def reconcile(self, member: ConsumerGroupMember, reconciliation: Reconciliation) -> None:
        """Move ``member`` (one of the group's) to ``reconciliation``, its partitions' owner
        epochs with it."""
        self._release(member)
        member.reconciliation = reconciliation
        self._claim(member)
        self.changed.add(member.member_id)

    def _claim(self, member: ConsumerGroupMember) -> None:
        for parts in (member.assigned, member.pending_revocation):
            for tid, ps in parts.items():
                for p in ps:
                    self.partition_epochs[(tid, p)] = member.member_epoch

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._release(member)
            self.target.pop(member_id, None)
            self.changed.add(member_id)
        return member

    def _release(self, member: ConsumerGroupMember) -> None:
        for parts in (member.assigned, member.pending_revocation):
            for tid, ps in parts.items():
                for p in ps:
                    self.partition_epochs.pop((tid, p), None)
