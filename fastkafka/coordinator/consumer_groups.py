"""KIP-848's consumer group protocol on the group coordinator: ConsumerGroupHeartbeat and
ConsumerGroupDescribe, and the checks OffsetCommit / OffsetFetch make against member epochs.

A mixin of :class:`~fastkafka.coordinator.coordinator.GroupCoordinator` (its lock, clock,
``_check_available``); the classic protocol's groups stay in the metadata manager beside these,
one group id being one or the other. As Kafka: a heartbeat naming a classic group that has
members gets GROUP_ID_NOT_FOUND (an empty classic group is taken over, its committed offsets
kept); a classic JoinGroup naming a consumer group with members gets INCONSISTENT_GROUP_PROTOCOL
(an empty one gives way). Members of a consumer group are never classic members (Kafka's
online migration between the protocols is not done here).

A heartbeat is answered at once. Epochs: 0 joins (a known member id joining again starts over),
-1 leaves, -2 is a static member leaving for a while (it keeps its partitions for its session);
any other epoch must be the member's (or its previous one, with a subset of its partitions,
when the answer that moved it on was lost), else FENCED_MEMBER_EPOCH. A member silent for
``group.consumer.session.timeout.ms``, or that has not revoked partitions within its rebalance
timeout, is fenced: removed, the group's epoch bumped, its partitions handed on.

Not persisted (see :mod:`.consumer_group`): after a restart a member's heartbeat for a group the
coordinator no longer knows answers UNKNOWN_MEMBER_ID, so it rejoins (Kafka's GROUP_ID_NOT_FOUND
there would be fatal to the client, and Kafka never forgets a group that way).

Example::

    >>> from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore
    >>> gc = GroupCoordinator.create(MemoryOffsetsStore(1), clock=lambda: 0)
    >>> gc.topic_metadata = lambda name: ("id-t", 2) if name == "t" else None
    >>> r = gc.consumer_group_heartbeat("g", "m1", 0, rebalance_timeout_ms=30000,
    ...                                 subscribed_topic_names=["t"], owned=[])
    >>> r.error, r.member_epoch, r.assignment
    (0, 1, {'id-t': {0, 1}})
"""
from __future__ import annotations

import logging
import uuid
from typing import Callable, NamedTuple, TypeVar

from .. import errors
from .assignors import ASSIGNORS, DEFAULT_ASSIGNOR
from .consumer_group import ConsumerGroup, ConsumerGroupMember
from .current_assignment import UNREVOKED_PARTITIONS, Reconciliation, step
from .group import DEAD, EMPTY as CLASSIC_EMPTY

__all__ = ["ConsumerGroupHeartbeats", "HeartbeatResult", "LEAVE_GROUP_MEMBER_EPOCH",
           "LEAVE_GROUP_STATIC_MEMBER_EPOCH"]

log = logging.getLogger("fastkafka.coordinator")
E = errors
NONE = 0
T = TypeVar("T")
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class HeartbeatResult(NamedTuple):
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: dict | None = None      # {topic_id: {partition}}; None: not sent this time


class ConsumerGroupHeartbeats:
    """ConsumerGroupHeartbeat, ConsumerGroupDescribe and their timers (module docstring)."""

    def init_consumer_groups(self, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        """The coordinator's constructor calls this: Kafka's group.consumer.session.timeout.ms
        and group.consumer.heartbeat.interval.ms."""
        #: KIP-848 consumer groups by id (the classic ones are the manager's)
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self.consumer_session_timeout_ms = session_timeout_ms
        self.consumer_heartbeat_interval_ms = heartbeat_interval_ms
        #: a topic's ``(topic_id, partition count)`` by name, None if it does not exist: what
        #: consumer groups are assigned from (the broker sets it; without it they get nothing)
        self.topic_metadata: Callable[[str], tuple | None] | None = None

    def consumer_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int, *,
                                 instance_id: str | None = None, rack_id: str | None = None,
                                 rebalance_timeout_ms: int = -1,
                                 subscribed_topic_names: list[str] | None = None,
                                 subscribed_topic_regex: str | None = None,
                                 server_assignor: str | None = None,
                                 owned: list[tuple[object, list[int]]] | None = None,
                                 client_id: str = "", client_host: str = "") -> HeartbeatResult:
        """One heartbeat; ``owned`` is the request's TopicPartitions as ``(topic_id, partitions)``."""
        try:
            _validate(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                      subscribed_topic_names, subscribed_topic_regex, server_assignor, owned)
        except errors.KafkaError as e:
            return HeartbeatResult(e.code, str(e))
        return self._locked(self._consumer_heartbeat, group_id, member_id, member_epoch, instance_id,
                            rack_id, rebalance_timeout_ms, subscribed_topic_names, server_assignor,
                            owned, client_id, client_host)

    def _consumer_heartbeat(self, group_id, member_id, epoch, instance_id, rack_id, rebalance_timeout_ms,
                            names, assignor, owned, client_id, client_host):
        code = self._check_available(group_id)
        if code:
            return HeartbeatResult(code)
        now = self.clock()
        try:
            if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._consumer_leave(group_id, member_id, epoch, instance_id, now)
            group = self._consumer_group_for(group_id, create=epoch == 0)
            member = self._consumer_member(group, member_id or str(uuid.uuid4()), epoch, instance_id, owned)
        except errors.KafkaError as e:
            return HeartbeatResult(e.code, str(e))
        before = member.assigned
        new = member.member_id not in group.members
        # librdkafka lists the names in no fixed order: compare them sorted
        changed = new or (names is not None and tuple(sorted(names)) != member.subscribed_topic_names) or \
            (assignor is not None and assignor != member.server_assignor)
        if instance_id is not None:
            member.instance_id = instance_id
        if rack_id is not None:
            member.rack_id = rack_id
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if names is not None:
            member.subscribed_topic_names = tuple(sorted(names))
        if assignor is not None:
            member.server_assignor = assignor
        member.client_id, member.client_host = client_id, client_host
        member.session_deadline = now + self.consumer_session_timeout_ms
        group.add_member(member)
        if changed or self._subscription_metadata(group) != group.subscription_metadata:
            group.subscription_metadata = self._subscription_metadata(group)
            group.group_epoch += 1
            log.info("consumer group %s: epoch %d (member %s)", group_id, group.group_epoch, member.member_id)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        try:
            self._reconcile(group, member, owned, now)
        except errors.KafkaError as e:
            return HeartbeatResult(e.code, str(e))
        full = epoch == 0 or (rebalance_timeout_ms != -1 and names is not None and owned is not None)
        return HeartbeatResult(NONE, None, member.member_id, member.member_epoch,
                               self.consumer_heartbeat_interval_ms,
                               member.assigned if full or member.assigned != before else None)

    def _consumer_group_for(self, group_id: str, create: bool) -> ConsumerGroup:
        group = self.consumer_groups.get(group_id)
        if group is not None:
            self._expire_consumer_group(group, self.clock())     # due deadlines first
            return group
        classic = self.manager.get(group_id)
        if classic is not None and not classic.is_(DEAD) and not classic.is_(CLASSIC_EMPTY):
            raise E.GroupIdNotFoundError(f"group {group_id} is not a consumer group")
        if not create:
            # a group this coordinator forgot (not persisted): the member rejoins
            raise E.UnknownMemberIdError(f"consumer group {group_id} is not known here: rejoin")
        group = self.consumer_groups[group_id] = ConsumerGroup(group_id)
        return group

    def _consumer_member(self, group: ConsumerGroup, member_id: str, epoch: int, instance_id, owned):
        if epoch == 0:
            static = group.static_member(instance_id)
            if static is not None and static.member_id != member_id:
                if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise E.UnreleasedInstanceIdError(f"instance {instance_id} is still held by "
                                                      f"member {static.member_id}")
                # the static member comes back under a new id: it takes over the old one's place
                target = group.target.get(static.member_id, static.assigned)
                group.remove_member(static.member_id)
                static.member_id = member_id
                static.reconciliation = static.reconciliation._replace(epoch=group.assignment_epoch)
                group.target[member_id] = target
                return static
            if member_id in group.members:      # a member joining again starts over
                self._fence(group, group.members[member_id])
            return ConsumerGroupMember(member_id)
        member = group.members.get(member_id)
        if member is None:
            raise E.UnknownMemberIdError(f"member {member_id} is not in group {group.group_id}")
        if epoch > member.member_epoch or (epoch < member.member_epoch and not (
                epoch == member.previous_member_epoch and _subset(owned, member.assigned))):
            raise E.FencedMemberEpochError(f"member epoch {epoch} is not {member.member_epoch}: "
                                           "abandon the partitions and rejoin")
        return member

    def _subscription_metadata(self, group: ConsumerGroup) -> dict:
        lookup = self.topic_metadata
        found = {name: lookup(name) for name in sorted(group.subscribed_topic_names())} if lookup else {}
        return {name: md for name, md in found.items() if md is not None}

    def _compute_target(self, group: ConsumerGroup) -> None:
        md = group.subscription_metadata
        subs = {mid: {md[t][0] for t in m.subscribed_topic_names if t in md}
                for mid, m in group.members.items()}
        wanted = [m.server_assignor for m in group.members.values() if m.server_assignor]
        name = max(sorted(set(wanted)), key=wanted.count) if wanted else DEFAULT_ASSIGNOR
        group.assignor_name = name
        group.target = ASSIGNORS[name](subs, dict(md.values()), group.target)
        group.assignment_epoch = group.group_epoch

    def _reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember, owned, now: int) -> None:
        if member.is_reconciled_to(group.assignment_epoch):
            return
        before = member.reconciliation
        after = step(before, group.assignment_epoch, group.target.get(member.member_id, {}),
                     group.partition_epoch, owned)
        if after == before:
            return
        if after.epoch != before.epoch:
            member.previous_member_epoch = before.epoch
        group.reconcile(member, after)
        member.revocation_deadline = now + max(member.rebalance_timeout_ms, 0) \
            if after.state == UNREVOKED_PARTITIONS else None

    def _consumer_leave(self, group_id, member_id, epoch, instance_id, now):
        group = self.consumer_groups.get(group_id)
        if group is None:
            raise E.GroupIdNotFoundError(f"consumer group {group_id} not found")
        member = group.members.get(member_id) if instance_id is None else group.static_member(instance_id)
        if member is None:
            raise E.UnknownMemberIdError(f"member {member_id or instance_id} is not in group {group_id}")
        if instance_id is not None and member.member_id != member_id:
            raise E.FencedInstanceIdError(f"instance {instance_id} is held by another member")
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # it will be back within its session: keep its partitions, stop revoking
            group.reconcile(member, Reconciliation(member.state, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                                   member.assigned, {}))
        else:
            log.info("member %s left consumer group %s", member_id, group_id)
            self._fence(group, member)
        return HeartbeatResult(NONE, None, member_id, epoch, 0, None)

    def _fence(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Out of the group; the others get its partitions once the next heartbeat reassigns."""
        group.remove_member(member.member_id)
        group.group_epoch += 1

    # --- timers, called under the lock from the coordinator's tick and group lookups ---
    def _expire_consumer_group(self, group: ConsumerGroup, now: int) -> None:
        for m in list(group.members.values()):
            if m.session_deadline <= now:
                log.info("member %s of consumer group %s: session timed out", m.member_id, group.group_id)
                self._fence(group, m)
            elif m.revocation_deadline is not None and m.revocation_deadline <= now \
                    and m.state == UNREVOKED_PARTITIONS:
                log.info("member %s of consumer group %s did not revoke in time", m.member_id, group.group_id)
                self._fence(group, m)

    # --- ConsumerGroupDescribe ---
    def read_consumer_group(self, group_id: str, read: Callable[[int, ConsumerGroup | None], T]) -> T:
        """``read(error, group)`` under the coordinator's lock, so it sees the group whole; the
        error is GROUP_ID_NOT_FOUND (group None) for an id that is not a consumer group."""
        return self._locked(self._read_consumer_group, group_id, read)

    def _read_consumer_group(self, group_id, read):
        code = self._check_available(group_id)
        if code:
            return read(code, None)
        group = self.consumer_groups.get(group_id)
        if group is None:
            return read(E.GroupIdNotFoundError.code, None)
        self._expire_consumer_group(group, self.clock())
        return read(NONE, group)

    # --- offsets: Kafka's ConsumerGroup.validateOffsetCommit / validateOffsetFetch ---
    def _consumer_offsets_error(self, group: ConsumerGroup, member_id: str | None, epoch: int,
                                commit: bool, api_version: int = 9) -> int:
        if epoch < 0 and (not group.members if commit else not member_id):
            return NONE          # an admin or a consumer outside group management
        member = group.members.get(member_id or "")
        if member is None:
            return E.UnknownMemberIdError.code
        if commit and api_version < 9:     # v9 is the first that knows member epochs
            return E.UnsupportedVersionError.code
        return NONE if epoch == member.member_epoch else E.StaleMemberEpochError.code


def _validate(group_id, member_id, epoch, instance_id, rack_id, rebalance_timeout_ms, names, regex,
              assignor, owned) -> None:
    """Kafka's request checks: INVALID_REQUEST, UNSUPPORTED_ASSIGNOR."""
    bad = E.InvalidRequestError
    if not group_id:
        raise bad("GroupId can't be empty.")
    if instance_id == "":
        raise bad("InstanceId can't be empty.")
    if rack_id == "":
        raise bad("RackId can't be empty.")
    if regex:     # librdkafka sends "" with a list of names: that is no regex
        raise bad("SubscribedTopicRegex is not supported yet.")
    if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not member_id:
            raise bad("MemberId can't be empty.")
    elif epoch == 0:
        if rebalance_timeout_ms == -1:
            raise bad("RebalanceTimeoutMs must be provided in first request.")
        if owned:     # Kafka also refuses null; librdkafka sends null before it has an assignment
            raise bad("TopicPartitions must be empty when (re-)joining.")
        if not names:
            raise bad("SubscribedTopicNames must be set in first request.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if not member_id:
            raise bad("MemberId can't be empty.")
        if instance_id is None:
            raise bad("InstanceId can't be null.")
    else:
        raise bad("MemberEpoch is invalid.")
    if assignor is not None and assignor not in ASSIGNORS:
        raise E.UnsupportedAssignorError(f"ServerAssignor {assignor} is not supported. Supported "
                                         f"assignors: {', '.join(ASSIGNORS)}.")


def _subset(owned, assigned: dict) -> bool:
    if owned is None:
        return False
    return all(p in assigned.get(tid, ()) for tid, ps in owned for p in ps)
