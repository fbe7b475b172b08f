"""KIP-848's consumer group protocol on the group coordinator: ConsumerGroupHeartbeat and
ConsumerGroupDescribe, and the checks OffsetCommit / OffsetFetch make against member epochs.

A mixin of :class:`~fastkafka.coordinator.coordinator.GroupCoordinator` (its lock, clock,
``_check_available``); the classic protocol's groups stay in the metadata manager beside these,
one group id being one or the other (its committed offsets stay with the manager's group either
way). As Kafka: a heartbeat joining a classic group takes it over: an empty one at once, one with
members by Kafka's online upgrade when ``group.consumer.migration.policy`` allows it (else
GROUP_ID_NOT_FOUND); a classic JoinGroup naming a consumer group with members joins it as a
member that keeps speaking the classic protocol (an empty consumer group gives way); and a
consumer group left with classic members only is downgraded back when the policy allows it.
That migration, and the classic requests a consumer group answers, are :mod:`.classic_members`'.

A heartbeat is answered at once. Epochs: 0 joins (a known member id joining again starts over),
-1 leaves, -2 is a static member leaving for a while (it keeps its partitions for its session);
any other epoch must be the member's (or its previous one, with a subset of its partitions,
when the answer that moved it on was lost), else FENCED_MEMBER_EPOCH. A member silent for
``group.consumer.session.timeout.ms``, or that has not revoked partitions within its rebalance
timeout, is fenced: removed, the group's epoch bumped, its partitions handed on.

Persisted as Kafka 3.7+ does (:mod:`.consumer_group_records`): every change to a group is
written to its ``__consumer_offsets`` partition, and the heartbeat that made it is answered once
the write is replicated; a write that fails answers NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE
(the client finds the coordinator again and retries). A coordinator that loads the partition (a
restart, or in cluster mode a new leader) rebuilds the groups with their epochs and
assignments, and their members carry on without a rebalance, each given a new session.
A member's heartbeat for a group the coordinator does not know (one deleted meanwhile) answers
UNKNOWN_MEMBER_ID, so it rejoins (Kafka's GROUP_ID_NOT_FOUND there would be fatal to the client).

Regex subscriptions (heartbeat v1's ``subscribed_topic_regex``): Kafka compiles them with RE2/J;
here they are Python :mod:`re` patterns that must match a topic's whole name (``fullmatch``),
which agrees with RE2/J on the usual ``^prefix.*`` / ``orders-[0-9]+`` forms (Python's
back-references and look-arounds, which RE2/J refuses, are accepted). A bad pattern answers
INVALID_REGULAR_EXPRESSION. A group's regexes are resolved against the broker's topics (internal
ones excluded) when a member brings a new one, and again by the first heartbeat of any member
REGEX_REFRESH_MS after the last resolution, so a topic created or deleted is seen within about a
second (Kafka refreshes on its own schedule too): the subscription metadata changes and the
group epoch is bumped.

Example::

    >>> from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore
    >>> gc = GroupCoordinator.create(MemoryOffsetsStore(1), clock=lambda: 0)
    >>> t = uuid.UUID(int=1)
    >>> gc.topic_metadata = lambda name: (t, 2) if name == "t" else None
    >>> r = gc.consumer_group_heartbeat("g", "m1", 0, rebalance_timeout_ms=30000,
    ...                                 subscribed_topic_names=["t"], owned=[])
    >>> r.error, r.member_epoch, r.assignment == {t: {0, 1}}
    (0, 1, True)
"""
from __future__ import annotations

import logging
import re
import uuid
from typing import Callable, Iterable, NamedTuple, TypeVar

from .. import errors
from .assignors import ASSIGNORS, DEFAULT_ASSIGNOR
from .consumer_group import ConsumerGroup, ConsumerGroupMember
from .consumer_group_records import changes, record_changes
from .current_assignment import UNREVOKED_PARTITIONS, Reconciliation, step
from .group import DEAD, EMPTY as CLASSIC_EMPTY
from .manager import offset_commit_error
from .parts import CoordinatorParts

__all__ = ["ConsumerGroupHeartbeats", "HeartbeatResult", "LEAVE_GROUP_MEMBER_EPOCH",
           "LEAVE_GROUP_STATIC_MEMBER_EPOCH"]

log = logging.getLogger("fastkafka.coordinator")
E = errors
NONE = 0
T = TypeVar("T")
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
#: how often a group's regexes are matched against the topics again (a topic created or deleted
#: meanwhile is seen by the first heartbeat after that)
REGEX_REFRESH_MS = 1000


class HeartbeatResult(NamedTuple):
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: dict | None = None      # {topic_id: {partition}}; None: not sent this time


class ConsumerGroupHeartbeats(CoordinatorParts):
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
        #: the names of the topics regex subscriptions are resolved against (the broker sets it)
        self.topic_names: Callable[[], Iterable[str]] = lambda: ()
        self.manager.consumer_groups_loaded = self._consumer_groups_loaded

    def consumer_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int, *,
                                 instance_id: str | None = None, rack_id: str | None = None,
                                 rebalance_timeout_ms: int = -1,
                                 subscribed_topic_names: list[str] | None = None,
                                 subscribed_topic_regex: str | None = None,
                                 server_assignor: str | None = None,
                                 owned: list[tuple[object, list[int]]] | None = None,
                                 client_id: str = "", client_host: str = "",
                                 callback: Callable[[HeartbeatResult], None] | None = None
                                 ) -> HeartbeatResult | None:
        """One heartbeat; ``owned`` is the request's TopicPartitions as ``(topic_id, partitions)``.
        The answer goes to ``callback`` once what the heartbeat changed is replicated (after the
        coordinator's lock is released); without one the call waits and returns it."""
        if callback is None:
            return self._wait(lambda cb: self.consumer_group_heartbeat(
                group_id, member_id, member_epoch, instance_id=instance_id, rack_id=rack_id,
                rebalance_timeout_ms=rebalance_timeout_ms, subscribed_topic_names=subscribed_topic_names,
                subscribed_topic_regex=subscribed_topic_regex, server_assignor=server_assignor, owned=owned,
                client_id=client_id, client_host=client_host, callback=cb))
        try:
            _validate(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                      subscribed_topic_names, subscribed_topic_regex, server_assignor, owned)
        except errors.KafkaError as e:
            callback(HeartbeatResult(e.code, str(e)))
            return None
        self._locked(self._heartbeat_and_store, callback, group_id, member_id, member_epoch, instance_id,
                     rack_id, rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
                     server_assignor, owned, client_id, client_host)
        return None

    def _heartbeat_and_store(self, callback, group_id, *args):
        result = self._consumer_heartbeat(group_id, *args)
        group = self.consumer_groups.get(group_id)
        if group is None:
            return self._respond(callback, result)

        def stored(code):
            self._respond(callback, HeartbeatResult(code) if code and not result.error else result)
        self._store_consumer_group(group, stored)

    def _consumer_heartbeat(self, group_id, member_id, epoch, instance_id, rack_id, rebalance_timeout_ms,
                            names, regex, assignor, owned, client_id, client_host):
        code = self._check_available(group_id)
        if code:
            return HeartbeatResult(code)
        now = self.clock()
        try:
            if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._consumer_leave(group_id, member_id, epoch, instance_id, now)
            group = self._consumer_group_for(group_id, create=epoch == 0)
            member, new = self._consumer_member(group, member_id or str(uuid.uuid4()), epoch, instance_id, owned)
        except errors.KafkaError as e:
            return HeartbeatResult(e.code, str(e))
        before, metadata_before = member.assigned, member.metadata()
        # librdkafka lists the names in no fixed order: compare them sorted; an empty regex clears it
        regex = None if regex is None else (regex or "")
        changed = new or (names is not None and tuple(sorted(names)) != member.subscribed_topic_names) or \
            (regex is not None and (regex or None) != member.subscribed_topic_regex) or \
            (assignor is not None and assignor != member.server_assignor)
        if instance_id is not None:
            member.instance_id = instance_id
        if rack_id is not None:
            member.rack_id = rack_id
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if names is not None:
            member.subscribed_topic_names = tuple(sorted(names))
        if regex is not None:
            member.subscribed_topic_regex = regex or None
        if assignor is not None:
            member.server_assignor = assignor
        member.client_id, member.client_host = client_id, client_host
        member.session_deadline = now + self.consumer_session_timeout_ms
        try:
            self._advance(group, member, changed or member.metadata() != metadata_before, changed, owned, now)
        except errors.KafkaError as e:
            return HeartbeatResult(e.code, str(e))
        full = epoch == 0 or (rebalance_timeout_ms != -1 and names is not None and owned is not None)
        return HeartbeatResult(NONE, None, member.member_id, member.member_epoch,
                               self.consumer_heartbeat_interval_ms,
                               member.assigned if full or member.assigned != before else None)

    def _advance(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: bool, resubscribed: bool,
                 owned, now: int) -> None:
        """``member`` (new, or ``updated`` by its request) in the group; the group epoch bumped
        when it ``resubscribed`` or a subscribed topic changed, the target assignment computed
        anew for a bumped epoch, and the member moved on toward its target (raises
        FENCED_MEMBER_EPOCH for a member that lost track). A heartbeat or a classic JoinGroup."""
        if updated:
            group.changed.add(member.member_id)
        group.add_member(member)
        metadata = self._subscription_metadata(group, now)
        if resubscribed or metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            group.group_epoch += 1
            log.info("consumer group %s: epoch %d (member %s)", group.group_id, group.group_epoch,
                     member.member_id)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        self._reconcile(group, member, owned, now)

    def _consumer_group_for(self, group_id: str, create: bool) -> ConsumerGroup:
        group = self._live_consumer_group(group_id)
        if group is not None:
            return group
        classic = self._group(group_id)
        if classic is not None and not classic.is_(DEAD) and not classic.is_(CLASSIC_EMPTY):
            if create:      # a consumer-protocol member joins a classic group: Kafka's online upgrade
                return self._upgrade(classic)
            raise E.GroupIdNotFoundError(f"group {group_id} is not a consumer group")
        if not create:
            # a group this coordinator does not know (deleted meanwhile): the member rejoins
            raise E.UnknownMemberIdError(f"consumer group {group_id} is not known here: rejoin")
        group = self.consumer_groups[group_id] = ConsumerGroup(group_id)
        return group

    def _consumer_member(self, group: ConsumerGroup, member_id: str, epoch: int, instance_id, owned
                         ) -> tuple[ConsumerGroupMember, bool]:
        """The heartbeat's member, and whether it is new to the group (which bumps its epoch; a
        static member back under a new id is not: unchanged, it goes on without a rebalance)."""
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
                return static, False
            if member_id in group.members:      # a member joining again starts over
                self._fence(group, group.members[member_id])
            return ConsumerGroupMember(member_id), True
        member = group.members.get(member_id)
        if member is None:
            raise E.UnknownMemberIdError(f"member {member_id} is not in group {group.group_id}")
        if epoch > member.member_epoch or (epoch < member.member_epoch and not (
                epoch == member.previous_member_epoch and _subset(owned, member.assigned))):
            raise E.FencedMemberEpochError(f"member epoch {epoch} is not {member.member_epoch}: "
                                           "abandon the partitions and rejoin")
        return member, False

    def _subscription_metadata(self, group: ConsumerGroup, now: int) -> dict:
        """The subscribed topics' ``(topic_id, partitions)`` by name; the regexes resolved anew
        when one is new or gone, else at most every REGEX_REFRESH_MS (each resolution reads
        every topic name)."""
        regexes = group.subscribed_regexes()
        if regexes != group.resolved_regexes.keys() or regexes and now >= group.regexes_resolved_ms + \
                REGEX_REFRESH_MS:
            names = list(self.topic_names())
            group.resolved_regexes = {r: frozenset(filter(re.compile(r).fullmatch, names)) for r in regexes}
            group.regexes_resolved_ms = now
        lookup = self.topic_metadata
        found = {name: lookup(name) for name in sorted(group.subscribed_topic_names())} if lookup else {}
        return {name: md for name, md in found.items() if md is not None}

    def _compute_target(self, group: ConsumerGroup) -> None:
        md = group.subscription_metadata
        subs = {mid: {md[t][0] for t in group.member_topics(m) if t in md}
                for mid, m in group.members.items()}
        name = group.assignor_name = group.preferred_assignor(DEFAULT_ASSIGNOR)
        old, group.target = group.target, ASSIGNORS[name](subs, dict(md.values()), group.target)
        group.assignment_epoch = group.group_epoch
        group.changed.update(mid for mid in old.keys() | group.target.keys() if old.get(mid) != group.target.get(mid))

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
        member = group.named(member_id, instance_id)
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
            if not self._maybe_downgrade(group, member):
                self._fence(group, member)
        return HeartbeatResult(NONE, None, member_id, epoch, 0, None)

    def _fence(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Out of the group; the others get its partitions once the next heartbeat reassigns."""
        group.remove_member(member.member_id)
        group.group_epoch += 1

    # --- persistence (module docstring) ---
    def _store_consumer_group(self, group: ConsumerGroup, done: Callable[[int], None]) -> None:
        """Write what changed in ``group`` since its last write; ``done`` gets 0 once replicated
        (at once when nothing changed) or the error a heartbeat answers with."""
        mids = group.changed
        level = (group.group_epoch, group.assignment_epoch, group.subscription_metadata)
        if not mids and level == group.written_level:
            return done(NONE)          # a heartbeat that changed nothing: nothing to encode
        group.changed, group.written_level = set(), level
        records = record_changes(group, mids)
        if not records:
            return done(NONE)
        undo = {k: group.records.get(k) for k, _ in records}
        _apply(group.records, records)

        def replicated(code):
            if code:        # not written: put back what the log holds, and write it with the next change
                _apply(group.records, undo.items())
                group.changed |= mids
                group.written_level = None
            done(_store_error(code))
        self.manager.store_records(group.group_id, records, replicated)

    def _drop_consumer_group(self, group_id: str) -> None:
        """Forget an (empty) consumer group and tombstone its records (DeleteGroups, or a classic
        group taking its id)."""
        group = self.consumer_groups.pop(group_id)
        records = changes(group.records, {})
        if records:
            def deleted(code: int) -> None:
                if code:
                    log.warning("cannot delete consumer group %s: error %d", group_id, code)
            self.manager.store_records(group_id, records, deleted)

    def _consumer_groups_loaded(self, groups: dict[str, ConsumerGroup]) -> None:
        """The groups of a loaded partition: their members get a new session (and, while they
        revoke, a new rebalance timeout) from now, as after a restart Kafka's do."""
        now = self.clock()
        for gid, group in groups.items():
            for m in group.members.values():
                m.session_deadline = now + (self.consumer_session_timeout_ms if m.classic is None
                                            else m.classic.session_timeout_ms)
                if m.state == UNREVOKED_PARTITIONS:
                    m.revocation_deadline = now + max(m.rebalance_timeout_ms, 0)
            self.consumer_groups[gid] = group
            log.info("consumer group %s loaded: epoch %d, %d members", gid, group.group_epoch, len(group.members))

    # --- timers, called under the lock from the coordinator's tick and group lookups ---
    def _expire_consumer_group(self, group: ConsumerGroup, now: int) -> None:
        """Fence the members whose deadlines passed (session; revocation; for a classic member,
        rejoining or syncing); the group may be downgraded to a classic group then."""
        fenced = False
        for m in list(group.members.values()):
            why = _overdue(m, now)
            if why:
                log.info("member %s of consumer group %s %s", m.member_id, group.group_id, why)
                if self._maybe_downgrade(group, m):
                    return
                self._fence(group, m)
                fenced = True
        if fenced:
            def stored(code: int) -> None:
                if code:
                    log.warning("cannot store consumer group %s: error %d", group.group_id, code)
            self._store_consumer_group(group, stored)

    # --- ConsumerGroupDescribe ---
    def read_consumer_group(self, group_id: str, read: Callable[[int, ConsumerGroup | None], T]) -> T:
        """``read(error, group)`` under the coordinator's lock, so it sees the group whole; the
        error is GROUP_ID_NOT_FOUND (group None) for an id that is not a consumer group."""
        return self._locked(self._read_consumer_group, group_id, read)

    def _read_consumer_group(self, group_id, read):
        code = self._check_available(group_id)
        if code:
            return read(code, None)
        group = self._live_consumer_group(group_id)
        if group is None:
            return read(E.GroupIdNotFoundError.code, None)
        return read(NONE, group)

    def _live_consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group ``group_id`` with its due deadlines applied first (None: there is
        none, or it has just been downgraded to a classic group)."""
        group = self.consumer_groups.get(group_id)
        if group is not None:
            self._expire_consumer_group(group, self.clock())
        return self.consumer_groups.get(group_id)

    # --- offsets: Kafka's ConsumerGroup.validateOffsetCommit / validateOffsetFetch ---
    def _consumer_offsets_error(self, group: ConsumerGroup, member_id: str | None, epoch: int,
                                commit: bool, api_version: int = 9) -> int:
        if epoch < 0 and (not group.members if commit else not member_id):
            return NONE          # an admin or a consumer outside group management
        member = group.members.get(member_id or "")
        if member is None:
            return E.UnknownMemberIdError.code
        if member.classic is not None:      # a classic member commits with its generation
            return NONE if epoch == member.member_epoch else E.IllegalGenerationError.code
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
        try:
            re.compile(regex)
        except re.error as e:
            raise E.InvalidRegularExpressionError(f"SubscribedTopicRegex `{regex}` is not a valid regular "
                                                  f"expression: {e}.") from None
    if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not member_id:
            raise bad("MemberId can't be empty.")
    elif epoch == 0:
        if rebalance_timeout_ms == -1:
            raise bad("RebalanceTimeoutMs must be provided in first request.")
        if owned:     # Kafka also refuses null; librdkafka sends null before it has an assignment
            raise bad("TopicPartitions must be empty when (re-)joining.")
        if not names and not regex:
            raise bad("Either SubscribedTopicNames or SubscribedTopicRegex must be non-empty when "
                      "(re-)joining.")
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


def _overdue(m: ConsumerGroupMember, now: int) -> str | None:
    """Why ``m`` is fenced at ``now``, None while it is not."""
    if m.session_deadline <= now:
        return "timed out (session)"
    if m.revocation_deadline is not None and m.revocation_deadline <= now and m.state == UNREVOKED_PARTITIONS:
        return "did not revoke in time"
    if m.join_deadline is not None and m.join_deadline <= now:
        return "did not rejoin in time (classic protocol)"
    if m.sync_deadline is not None and m.sync_deadline <= now:
        return "did not sync in time (classic protocol)"
    return None


def _apply(records: dict, changed) -> None:
    for k, v in changed:
        if v is None:
            records.pop(k, None)
        else:
            records[k] = v


def _store_error(code: int) -> int:
    """A heartbeat's answer for a write that ended with ``code`` (Kafka's normalizeException: a
    timed-out write, like too few replicas, is COORDINATOR_NOT_AVAILABLE; a lost leadership
    NOT_COORDINATOR)."""
    code = offset_commit_error(code)
    if code == E.InvalidCommitOffsetSizeError.code:
        return E.UnknownServerError.code
    return E.CoordinatorNotAvailableError.code if code == E.RequestTimedOutError.code else code


def _subset(owned, assigned: dict) -> bool:
    if owned is None:
        return False
    return all(p in assigned.get(tid, ()) for tid, ps in owned for p in ps)
