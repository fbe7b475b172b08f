"""Kafka's online migration between the classic and the KIP-848 consumer group protocols, and the
classic protocol's requests answered by a consumer group (KIP-848's "upgrade path").

A mixin of :class:`~fastkafka.coordinator.coordinator.GroupCoordinator`, under its lock.
``group.consumer.migration.policy`` (disabled, upgrade, downgrade, bidirectional) says which way
a group with members may move:

- Upgrade: a ConsumerGroupHeartbeat joining a classic group that has members (of the
  ``consumer`` protocol type) turns it into a consumer group (:mod:`.group_conversion`): waiting
  JoinGroup/SyncGroup requests get REBALANCE_IN_PROGRESS, the classic group's record is
  tombstoned and the consumer group's records written. Otherwise the heartbeat gets
  GROUP_ID_NOT_FOUND, as Kafka answers.
- Members that keep speaking the classic protocol: JoinGroup updates the member (its subscription
  from its protocol metadata, its owned partitions from there too) and moves it toward its target
  like a heartbeat would, answering its member epoch as generation (no leader: the server
  assigns); SyncGroup answers its assignment; Heartbeat answers REBALANCE_IN_PROGRESS while it
  must rejoin (a new group epoch, partitions to revoke, or released partitions to collect);
  LeaveGroup fences it. A member told to rejoin that does not within its rebalance timeout is
  fenced, and so is one that joined and does not sync. A new member gets a partition only once
  its classic holder has rejoined without it.
- Downgrade: when a member leaves (or is fenced) and only classic members remain, the group
  becomes a classic group again, at the group epoch as generation (its consumer group records
  tombstoned, its classic record written) and a rebalance starts, which the members join as in
  any classic group.

Kafka also caps a converted group's size (``group.consumer.max.size``, ``group.max.size``);
fastkafka has no such limits, so none is checked.

Example (a classic member in a consumer group: JoinGroup, SyncGroup, Heartbeat)::

    >>> from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore
    >>> from fastkafka.protocol.consumer_protocol import encode_subscription
    >>> gc = GroupCoordinator.create(MemoryOffsetsStore(1), clock=lambda: 0)
    >>> gc.topic_metadata = lambda name: (uuid.UUID(int=1), 2) if name == "t" else None
    >>> _ = gc.consumer_group_heartbeat("g", "m1", 0, rebalance_timeout_ms=30000,
    ...                                 subscribed_topic_names=["t"], owned=[])
    >>> got = []
    >>> gc.join_group("g", "c1", None, "c", "/h", 10_000, 10_000, "consumer",
    ...               [("range", encode_subscription(["t"]))], got.append)
    >>> got[0].error, got[0].member_id, got[0].generation_id
    (0, 'c1', 2)
    >>> gc.sync_group("g", 2, "c1", None, {}, got.append); got[1].error
    0
    >>> gc.heartbeat("g", 2, "c1")      # it waits for m1 to release a partition: nothing to do yet
    0
"""
from __future__ import annotations

import logging
import uuid
from typing import Callable

from .. import errors
from ..protocol import ProtocolError
from .consumer_group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember
from .consumer_group_records import changes
from .current_assignment import UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS
from .formats import group_key
from .group import CONSUMER_PROTOCOL_TYPE, EMPTY, GroupMetadata
from .group_conversion import by_topic_id, classic_assignment, subscription, to_classic_group, to_consumer_group
from .parts import CoordinatorParts
from .results import JoinResult, SyncResult

__all__ = ["ClassicMembers", "MIGRATION_POLICIES"]

log = logging.getLogger("fastkafka.coordinator")
E = errors
NONE = 0
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class ClassicMembers(CoordinatorParts):
    """Upgrade, downgrade, and the classic requests of a consumer group's members (module docstring)."""

    migration_policy = "bidirectional"

    # --- upgrade / downgrade ---
    def _upgrade(self, classic: GroupMetadata) -> ConsumerGroup:
        """The consumer group ``classic`` becomes, now in place of it; GROUP_ID_NOT_FOUND when it
        may not (Kafka's validateOnlineUpgrade and convertToConsumerGroup)."""
        gid = classic.group_id
        if self.migration_policy not in ("upgrade", "bidirectional"):
            raise E.GroupIdNotFoundError(f"group {gid} is a classic group and online upgrades are disabled")
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise E.GroupIdNotFoundError(f"group {gid} is a classic group of protocol type "
                                         f"{classic.protocol_type}, not {CONSUMER_PROTOCOL_TYPE}")
        try:
            group = to_consumer_group(classic, self._topic_id)
        except ProtocolError as e:
            raise E.GroupIdNotFoundError(f"cannot upgrade classic group {gid}: malformed consumer protocol "
                                         f"({e})") from None
        now = self.clock()
        for cm in classic.members.values():      # a rebalance was under way: the new one replaces it
            self._respond(cm.awaiting_join, JoinResult(E.RebalanceInProgressError.code, member_id=cm.member_id))
            self._respond(cm.awaiting_sync, SyncResult(E.RebalanceInProgressError.code))
            cm.awaiting_join = cm.awaiting_sync = None
        for m in group.members.values():
            m.session_deadline = now + m.classic_metadata.session_timeout_ms
        # the classic record goes; the consumer group's records follow it in the same partition,
        # written with the heartbeat that brought the upgrade
        self.manager.store_records(gid, [(group_key(gid), None)], _warn(gid, "tombstone the classic group"))
        _empty(classic, now)
        self.consumer_groups[gid] = group
        log.info("classic group %s upgraded to a consumer group: epoch %d, %d classic members", gid,
                 group.group_epoch, len(group.members))
        return group

    def _maybe_downgrade(self, group: ConsumerGroup, leaving: ConsumerGroupMember) -> bool:
        """``leaving`` leaves or is fenced: if only classic members remain, the group becomes a
        classic group without it, at the group epoch the others are at (so their commits while
        they revoke still count), and rebalances (Kafka's convertToClassicGroup). Whether it did;
        if not, the caller fences the member."""
        if len(group.members) <= 1 or not group.all_classic_except(leaving.member_id) or \
                self.migration_policy not in ("downgrade", "bidirectional"):
            return False
        gid, now = group.group_id, self.clock()
        tombstones = changes(group.records, {})
        del self.consumer_groups[gid]
        group.remove_member(leaving.member_id)
        classic = to_classic_group(group, self._topic_names(group), self.manager.get_or_create(gid), now)
        for cm in classic.members.values():
            cm.heartbeat_deadline = now + cm.session_timeout_ms
        self.manager.store_records(gid, tombstones, _warn(gid, "tombstone the consumer group"))
        self._store_group_quietly(classic)
        log.info("consumer group %s downgraded to a classic group: generation %d, %d members", gid,
                 classic.generation_id, len(classic.members))
        self._prepare_rebalance(classic, now)
        return True

    # --- JoinGroup ---
    def _classic_join_consumer_group(self, group: ConsumerGroup, member_id, instance_id, client_id, client_host,
                                     session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols,
                                     callback, require_known) -> None:
        def fail(code, mid=member_id):
            self._respond(callback, JoinResult(code, member_id=mid))

        if not group.supports_classic_protocols(protocol_type, [n for n, _ in protocols]):
            return fail(E.InconsistentGroupProtocolError.code)
        unknown = not member_id
        if unknown:
            member_id = str(uuid.uuid4())
            if require_known and instance_id is None:
                return fail(E.MemberIdRequiredError.code, member_id)
        try:
            sub = subscription(protocols)
            member, new = self._classic_member_joining(group, member_id, instance_id, unknown)
        except ProtocolError:
            return fail(E.InconsistentGroupProtocolError.code)
        except errors.KafkaError as e:
            return fail(e.code)
        now, before = self.clock(), member.metadata()
        topics = tuple(sorted(sub.topics))
        resubscribed = new or topics != member.subscribed_topic_names
        if instance_id is not None:
            member.instance_id = instance_id
        if sub.rack_id is not None:
            member.rack_id = sub.rack_id
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.subscribed_topic_names = topics
        member.client_id, member.client_host = client_id, client_host
        member.classic = ClassicMemberMetadata(session_timeout_ms, tuple(protocols))
        member.session_deadline = now + session_timeout_ms
        owned = by_topic_id(((tp.topic, p) for tp in sub.owned_partitions for p in tp.partitions), self._topic_id)
        try:
            self._advance(group, member, new or member.metadata() != before, resubscribed,
                          [(tid, sorted(ps)) for tid, ps in owned.items()], now)
        except errors.KafkaError as e:
            return fail(e.code)
        result = JoinResult(NONE, member.member_epoch, member.classic_protocol_name, "", member.member_id, [],
                            CONSUMER_PROTOCOL_TYPE)

        def stored(code):
            m = group.members.get(result.member_id)
            if code or m is None or self.consumer_groups.get(group.group_id) is not group:
                return fail(code or E.UnknownMemberIdError.code, result.member_id)
            t = self.clock()
            m.join_deadline, m.sync_deadline = None, t + max(m.rebalance_timeout_ms, 0)
            m.session_deadline = t + session_timeout_ms
            self._respond(callback, result)
        self._store_consumer_group(group, stored)

    def _classic_member_joining(self, group: ConsumerGroup, member_id: str, instance_id, unknown: bool
                                ) -> tuple[ConsumerGroupMember, bool]:
        """The JoinGroup's member and whether it is new; a static member back under a new id
        takes the old one's place and partitions."""
        if instance_id is None:
            member = group.members.get(member_id)
            return (ConsumerGroupMember(member_id), True) if member is None else (member, False)
        static = group.static_member(instance_id)
        if static is None:
            return ConsumerGroupMember(member_id), True
        if static.member_id == member_id:
            return static, False
        if not unknown:
            raise E.FencedInstanceIdError(f"instance {instance_id} is held by member {static.member_id}")
        target = group.target.get(static.member_id, static.assigned)
        group.remove_member(static.member_id)
        static.member_id = member_id
        group.target[member_id] = target
        return static, False

    # --- SyncGroup / Heartbeat / LeaveGroup ---
    def _classic_sync_consumer_group(self, group: ConsumerGroup, generation_id, member_id, instance_id,
                                     protocol_type, protocol_name, callback) -> None:
        try:
            member = self._classic_member(group, member_id, instance_id, generation_id)
            if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE or \
                    protocol_name is not None and protocol_name != member.classic_protocol_name:
                raise E.InconsistentGroupProtocolError(f"member {member_id} joined with another protocol")
            if group.group_epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
                self._must_rejoin(member)
                raise E.RebalanceInProgressError(f"group {group.group_id} rebalances: rejoin")
        except errors.KafkaError as e:
            return self._respond(callback, SyncResult(e.code))
        member.sync_deadline = None
        member.session_deadline = self.clock() + member.classic_metadata.session_timeout_ms
        self._respond(callback, SyncResult(NONE, classic_assignment(
            member.assigned, member.classic_metadata.protocols[0][1], self._topic_names(group)),
            CONSUMER_PROTOCOL_TYPE, member.classic_protocol_name))

    def _classic_heartbeat_consumer_group(self, group: ConsumerGroup, generation_id, member_id, instance_id) -> int:
        try:
            member = self._classic_member(group, member_id, instance_id, generation_id)
        except errors.KafkaError as e:
            return e.code
        member.session_deadline = self.clock() + member.classic_metadata.session_timeout_ms
        if member.member_epoch < group.group_epoch or member.state == UNREVOKED_PARTITIONS or \
                member.state == UNRELEASED_PARTITIONS and not group.waiting_on_unreleased(member):
            self._must_rejoin(member)
            return E.RebalanceInProgressError.code
        return NONE

    def _classic_leave_consumer_group(self, group: ConsumerGroup, members) -> list[int]:
        codes = []
        for member_id, instance_id in members:
            member = group.named(member_id, instance_id)
            if member is None or member.classic is None:
                codes.append(E.UnknownMemberIdError.code)
            elif instance_id is not None and member_id and member.member_id != member_id:
                codes.append(E.FencedInstanceIdError.code)
            else:
                log.info("classic member %s left consumer group %s", member.member_id, group.group_id)
                self._fence(group, member)
                codes.append(NONE)
        if NONE in codes:
            self._store_consumer_group(group, _warn(group.group_id, "store the consumer group"))
        return codes

    def _classic_member(self, group: ConsumerGroup, member_id, instance_id, generation_id) -> ConsumerGroupMember:
        """The member a SyncGroup or Heartbeat names, checked as Kafka does: UNKNOWN_MEMBER_ID,
        FENCED_INSTANCE_ID, ILLEGAL_GENERATION (its generation is its member epoch)."""
        member = group.named(member_id, instance_id)
        if member is None:
            raise E.UnknownMemberIdError(f"member {member_id or instance_id} is not in group {group.group_id}")
        if member.member_id != member_id:
            raise E.FencedInstanceIdError(f"instance {instance_id} is held by member {member.member_id}")
        if member.classic is None:
            raise E.UnknownMemberIdError(f"member {member_id} does not use the classic protocol")
        if generation_id != member.member_epoch:
            raise E.IllegalGenerationError(f"generation {generation_id} is not member {member_id}'s epoch "
                                           f"{member.member_epoch}")
        return member

    def _must_rejoin(self, member: ConsumerGroupMember) -> None:
        """Told to rejoin: fenced unless it does within its rebalance timeout (the first telling counts)."""
        if member.join_deadline is None:
            member.join_deadline = self.clock() + max(member.rebalance_timeout_ms, 0)

    # --- topic names and ids ---
    def _topic_id(self, name: str):
        md = self.topic_metadata(name) if self.topic_metadata is not None else None
        return None if md is None else md[0]

    @staticmethod
    def _topic_names(group: ConsumerGroup):
        """Topic id -> name for the group's subscribed topics (all a member can be assigned)."""
        return {tid: name for name, (tid, _) in group.subscription_metadata.items()}.get


def _empty(classic: GroupMetadata, now: int) -> None:
    """The classic group left as the holder of the committed offsets: no members, no generation."""
    classic.members.clear()
    classic.static_members.clear()
    classic.pending_members.clear()
    classic.leader_id = classic.protocol_name = classic.protocol_type = None
    classic.generation_id = 0
    classic.state, classic.state_timestamp = EMPTY, now
    classic.rebalance_deadline = classic.initial_delay_until = None


def _warn(group_id: str, what: str) -> Callable[[int], None]:
    def warn(code: int) -> None:
        if code:
            log.warning("group %s: cannot %s: error %d", group_id, what, code)
    return warn
