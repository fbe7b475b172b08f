"""GroupCoordinator: Kafka's classic group membership protocol as a sans-I/O state machine.

Driven by method calls from the request handlers and by :meth:`GroupCoordinator.tick` (a clock
the caller owns: the broker ticks it from a thread, tests call it with a fake time). JoinGroup
and SyncGroup answers are *delayed responses*: the caller passes a ``callback`` that receives a
:class:`JoinResult` / :class:`SyncResult` exactly once, either before the call returns or later,
when the rebalance completes (another member's request, or a tick). Callbacks always run
outside the coordinator's lock, so they may send on sockets or call back in.

Offset commits answer the same way when given a callback (without one the call waits): they,
and the group metadata a rebalance writes, count only once replicated (the store calls back; in
cluster mode when the ``__consumer_offsets`` partition's high watermark passes them).
Everything else answers directly with Kafka error codes (0 for none). Thread-safe: one lock.

In cluster mode the broker coordinates only the groups of the partitions it leads
(``partition_error``); :meth:`GroupCoordinator.load_partitions` and
:meth:`GroupCoordinator.unload_partitions` follow leadership as it comes and goes.

Example (two members, one rebalance)::

    >>> from fastkafka.coordinator.storage import MemoryOffsetsStore
    >>> now = [0]
    >>> gc = GroupCoordinator.create(MemoryOffsetsStore(4), clock=lambda: now[0],
    ...                              initial_rebalance_delay_ms=0)
    >>> got = []
    >>> proto = [("range", b"sub")]
    >>> gc.join_group("g", "", None, "c1", "/h", 10_000, 10_000, "consumer", proto, got.append)
    >>> leader = got[0].member_id; got[0].generation_id, got[0].leader_id == leader
    (1, True)
    >>> gc.sync_group("g", 1, leader, None, {leader: b"all"}, got.append); got[1].assignment
    b'all'
    >>> gc.heartbeat("g", 1, leader, None)
    0
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Callable, TypeVar

from ..config.definitions import (GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS, GROUP_CONSUMER_MIGRATION_POLICY,
                                  GROUP_CONSUMER_SESSION_TIMEOUT_MS, GROUP_INITIAL_REBALANCE_DELAY_MS,
                                  GROUP_MAX_SESSION_TIMEOUT_MS, GROUP_MIN_SESSION_TIMEOUT_MS,
                                  OFFSETS_RETENTION_CHECK_INTERVAL_MS, OFFSETS_RETENTION_MINUTES,
                                  OFFSET_METADATA_MAX_BYTES)
from .. import errors
from .classic_members import MIGRATION_POLICIES, ClassicMembers
from .consumer_groups import ConsumerGroupHeartbeats
from .group_admin import GroupAdmin
from .group_offsets import GroupOffsets
from .group import (COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, GroupMetadata,
                    MemberMetadata)
from .manager import GroupMetadataManager
from .results import GroupSummary, JoinResult, MemberSummary, SyncResult

log = logging.getLogger("fastkafka.coordinator")

__all__ = ["GroupCoordinator", "JoinResult", "SyncResult", "GroupSummary", "MemberSummary"]

NONE = 0
E = errors
T = TypeVar("T")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class GroupCoordinator(GroupAdmin, GroupOffsets, ConsumerGroupHeartbeats, ClassicMembers):
    """Membership, generations and offsets of every group this broker coordinates (classic
    groups here, KIP-848 consumer groups in :mod:`.consumer_groups`, the classic requests of a
    consumer group's members and the moves between the two in :mod:`.classic_members`)."""

    def __init__(self, manager: GroupMetadataManager, *, clock: Callable[[], int] = wall_clock_ms,
                 min_session_timeout_ms: int = 6000, max_session_timeout_ms: int = 1_800_000,
                 initial_rebalance_delay_ms: int = 3000,
                 offsets_retention_check_interval_ms: int = 600_000,
                 consumer_session_timeout_ms: int = 45_000, consumer_heartbeat_interval_ms: int = 5000,
                 consumer_migration_policy: str = "bidirectional"):
        self.manager = manager
        self.clock = clock
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.retention_check_interval_ms = offsets_retention_check_interval_ms
        self._next_retention_check = clock() + offsets_retention_check_interval_ms
        self._lock = threading.RLock()
        self._depth = 0               # nested _locked calls (a write completing inside one)
        self._outbox: list[tuple[Callable, object]] = []
        self.active = True
        self.init_consumer_groups(consumer_session_timeout_ms, consumer_heartbeat_interval_ms)
        if consumer_migration_policy not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy: {consumer_migration_policy!r}")
        #: group.consumer.migration.policy: which way a group with members may change protocol
        self.migration_policy = consumer_migration_policy
        #: cluster mode: the error the groups of a ``__consumer_offsets`` partition get here — 0
        #: when this broker leads it (and coordinates them), NOT_COORDINATOR when another does,
        #: COORDINATOR_LOAD_IN_PROGRESS while it becomes leader, COORDINATOR_NOT_AVAILABLE while
        #: the topic does not exist. None means every partition is this broker's (embedded).
        self.partition_error: Callable[[int], int] | None = None
        # a write completes on the store's thread: its continuation takes the lock like a request
        manager.guard = lambda fn: (lambda code: self._locked(fn, code))

    @classmethod
    def create(cls, store, *, clock: Callable[[], int] = wall_clock_ms,
               retention_ms: int = 7 * 24 * 3600 * 1000, load: bool = True, **kw) -> "GroupCoordinator":
        """A coordinator over ``store``, its partitions loaded (unless ``load`` is False)."""
        manager = GroupMetadataManager(store, clock=clock, retention_ms=retention_ms)
        gc = cls(manager, clock=clock, **kw)
        if load:
            gc.load_all()
        return gc

    @classmethod
    def from_config(cls, config, store, *, clock: Callable[[], int] = wall_clock_ms, load: bool = False):
        """A coordinator with the broker's ``group.*`` and ``offsets.*`` settings."""
        manager = GroupMetadataManager(store, clock=clock,
                                       retention_ms=config[OFFSETS_RETENTION_MINUTES] * 60_000,
                                       max_metadata_size=config[OFFSET_METADATA_MAX_BYTES])
        gc = cls(manager, clock=clock,
                 min_session_timeout_ms=config[GROUP_MIN_SESSION_TIMEOUT_MS],
                 max_session_timeout_ms=config[GROUP_MAX_SESSION_TIMEOUT_MS],
                 initial_rebalance_delay_ms=config[GROUP_INITIAL_REBALANCE_DELAY_MS],
                 offsets_retention_check_interval_ms=config[OFFSETS_RETENTION_CHECK_INTERVAL_MS],
                 consumer_session_timeout_ms=config[GROUP_CONSUMER_SESSION_TIMEOUT_MS],
                 consumer_heartbeat_interval_ms=config[GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS],
                 consumer_migration_policy=config[GROUP_CONSUMER_MIGRATION_POLICY])
        if load:
            gc.load_all()
        return gc

    # --- plumbing: one lock, callbacks fired after it is released ---
    def _locked(self, fn, *args):
        with self._lock:
            self._depth += 1
            try:
                result = fn(*args)
            finally:
                self._depth -= 1
                outbox = []
                if self._depth == 0:      # only the outermost call, once the lock is let go
                    outbox, self._outbox = self._outbox, []
        for callback, value in outbox:
            callback(value)
        return result

    @staticmethod
    def _wait(start: Callable[[Callable[[T], None]], T | None]) -> T:
        """``start(callback)`` (a request method, answering through ``callback``), then wait for
        the callback's value (a caller without a callback of its own; the store's commit timeout
        bounds the wait)."""
        done, box = threading.Event(), []

        def answer(value: T) -> None:
            box.append(value)
            done.set()
        start(answer)
        done.wait()
        return box[0]

    def _respond(self, callback: Callable | None, value) -> None:
        if callback is not None:
            self._outbox.append((callback, value))

    def load_all(self) -> None:
        """Replay every ``__consumer_offsets`` partition (groups answer LOAD_IN_PROGRESS until done)."""
        for p in range(self.manager.num_partitions):
            self._locked(self.manager.load_partition, p)

    def load_partitions(self, partitions) -> None:
        """Replay some partitions: in cluster mode, those whose leader this broker has become."""
        for p in partitions:
            self._locked(self.manager.load_partition, p)

    def unload_partitions(self, partitions) -> None:
        """Forget the groups of partitions whose leadership this broker lost (Kafka's
        onResignation): their parked JoinGroup/SyncGroup requests get NOT_COORDINATOR, and so
        does every later request (``partition_error``), so clients find the new coordinator."""
        def unload():
            for p in partitions:
                for group in self.manager.unload_partition(p):
                    self._send_away(group)
                    group.transition(DEAD, self.clock())   # writes still in flight leave it be
            gone = set(partitions)
            for gid in [g for g in self.consumer_groups if self.manager.partition_for(g) in gone]:
                del self.consumer_groups[gid]
        self._locked(unload)

    def _send_away(self, group: GroupMetadata) -> None:
        """Answer the group's parked JoinGroup/SyncGroup requests with NOT_COORDINATOR."""
        for m in group.members.values():
            self._respond(m.awaiting_join, JoinResult(E.NotCoordinatorError.code, member_id=m.member_id))
            self._respond(m.awaiting_sync, SyncResult(E.NotCoordinatorError.code))
            m.awaiting_join = m.awaiting_sync = None

    def _check_available(self, group_id: str) -> int:
        if not self.active:
            return E.CoordinatorNotAvailableError.code
        return self._partition_code(self.manager.partition_for(group_id))

    def _partition_code(self, partition: int) -> int:
        """0 when this coordinator serves the groups of ``partition``, else what they get:
        NOT_COORDINATOR sends the client to FindCoordinator again."""
        code = NONE if self.partition_error is None else self.partition_error(partition)
        if code == NONE and self.manager.unloaded({partition}):
            return E.CoordinatorLoadInProgressError.code
        return code

    # --- JoinGroup ---
    def join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                   client_id: str, client_host: str, session_timeout_ms: int,
                   rebalance_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], callback: Callable[[JoinResult], None],
                   require_known_member_id: bool = False) -> None:
        """Answer through ``callback`` now (errors, unchanged members) or when the rebalance completes.

        ``require_known_member_id`` is JoinGroup v4+: a new dynamic member first gets
        MEMBER_ID_REQUIRED with its id and must join again with it.
        """
        if rebalance_timeout_ms < 0:                     # JoinGroup v0 has no rebalance timeout
            rebalance_timeout_ms = session_timeout_ms
        self._locked(self._join, group_id, member_id or "", group_instance_id, client_id or "",
                     client_host, session_timeout_ms, rebalance_timeout_ms, protocol_type,
                     [(n, bytes(m or b"")) for n, m in protocols], callback, require_known_member_id)

    def _join(self, group_id, member_id, instance_id, client_id, client_host, session_timeout_ms,
              rebalance_timeout_ms, protocol_type, protocols, callback, require_known):
        def fail(code, mid=member_id):
            self._respond(callback, JoinResult(code, member_id=mid))

        if not group_id:
            return fail(E.InvalidGroupIdError.code)
        code = self._check_available(group_id)
        if code:
            return fail(code)
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            return fail(E.InvalidSessionTimeoutError.code)
        consumer_group = self._live_consumer_group(group_id)
        if consumer_group is not None:
            if consumer_group.members:     # the consumer group answers for its classic members
                return self._classic_join_consumer_group(
                    consumer_group, member_id, instance_id, client_id, client_host, session_timeout_ms,
                    rebalance_timeout_ms, protocol_type, protocols, callback, require_known)
            self._drop_consumer_group(group_id)        # an empty one gives way, as in Kafka
        now = self.clock()
        group = self._group(group_id)
        names = [n for n, _ in protocols]
        if not member_id:
            if group is None:
                group = self.manager.get_or_create(group_id)
            if group.is_(DEAD):
                return fail(E.CoordinatorNotAvailableError.code)
            if not group.supports_protocols(protocol_type, names):
                return fail(E.InconsistentGroupProtocolError.code)
            new_id = f"{instance_id or client_id}-{uuid.uuid4()}"
            if group.static_member_id(instance_id) is not None:
                return self._rejoin_static(group, new_id, instance_id, client_id, client_host,
                                           session_timeout_ms, rebalance_timeout_ms, protocols,
                                           callback, now)
            if require_known and instance_id is None:
                # KIP-394: the id is handed out first, so a client that times out and retries
                # comes back as the same member instead of leaving an orphan behind.
                group.pending_members[new_id] = now + session_timeout_ms
                return fail(E.MemberIdRequiredError.code, new_id)
            return self._add_member(group, new_id, instance_id, client_id, client_host,
                                    session_timeout_ms, rebalance_timeout_ms, protocol_type,
                                    protocols, callback, now)
        if group is None or group.is_(DEAD):
            return fail(E.UnknownMemberIdError.code)
        if not group.supports_protocols(protocol_type, names):
            return fail(E.InconsistentGroupProtocolError.code)
        if member_id in group.pending_members:
            return self._add_member(group, member_id, instance_id, client_id, client_host,
                                    session_timeout_ms, rebalance_timeout_ms, protocol_type,
                                    protocols, callback, now)
        if group.is_static_member_fenced(instance_id, member_id):
            return fail(E.FencedInstanceIdError.code)
        if not group.has(member_id):
            return fail(E.UnknownMemberIdError.code)
        member = group.get(member_id)
        if group.is_(PREPARING_REBALANCE):
            self._update_member(group, member, protocols, session_timeout_ms,
                                rebalance_timeout_ms, callback)
            self._maybe_complete_join(group, now)
        elif group.is_(COMPLETING_REBALANCE) and member.matches(protocols):
            # the member lost our JoinGroup response: repeat it
            self._respond(callback, self._join_result(group, member))
        elif group.is_(STABLE) and member.matches(protocols) and not group.is_leader(member_id):
            # nothing changed for a follower: no rebalance, same generation
            self._respond(callback, self._join_result(group, member))
        elif group.is_(EMPTY):
            fail(E.UnknownMemberIdError.code)
        else:
            # the leader rejoining in Stable asks for a new assignment (e.g. new topics matched)
            self._update_member(group, member, protocols, session_timeout_ms,
                                rebalance_timeout_ms, callback)
            self._prepare_rebalance(group, now)

    def _add_member(self, group, member_id, instance_id, client_id, client_host, session_timeout_ms,
                    rebalance_timeout_ms, protocol_type, protocols, callback, now):
        member = MemberMetadata(member_id, group.group_id, instance_id, client_id, client_host,
                                session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols)
        member.is_new = True
        member.awaiting_join = callback
        member.heartbeat_deadline = now + session_timeout_ms
        group.add(member)
        group.new_member_added = True
        if group.can_rebalance():
            self._prepare_rebalance(group, now)
        else:
            if group.initial_delay_until is not None:
                # group.initial.rebalance.delay.ms: each newcomer buys the others a little more
                # time, bounded by the rebalance timeout, so a fleet starting together is
                # assigned once instead of rebalancing for every member
                group.initial_delay_until = min(now + self.initial_rebalance_delay_ms,
                                                group.rebalance_deadline)
            self._maybe_complete_join(group, now)

    def _update_member(self, group, member, protocols, session_timeout_ms, rebalance_timeout_ms,
                       callback):
        if member.awaiting_join is not None and member.awaiting_join is not callback:
            self._respond(member.awaiting_join, JoinResult(E.RebalanceInProgressError.code,
                                                           member_id=member.member_id))
        member.protocols = list(protocols)
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.awaiting_join = callback

    def _rejoin_static(self, group, new_id, instance_id, client_id, client_host, session_timeout_ms,
                       rebalance_timeout_ms, protocols, callback, now):
        """A known group.instance.id joined without a member id (a restarted static member).

        It takes over the old member's place; in a Stable group with unchanged protocols that
        needs no rebalance at all (KIP-345), which is the point of static membership.
        """
        old = group.get(group.static_member_id(instance_id))
        fenced = JoinResult(E.FencedInstanceIdError.code, member_id=old.member_id)
        self._respond(old.awaiting_join, fenced)
        self._respond(old.awaiting_sync, SyncResult(E.FencedInstanceIdError.code))
        old.awaiting_join = old.awaiting_sync = None
        member = group.replace_static_member(instance_id, new_id)
        member.client_id, member.client_host = client_id, client_host
        member.heartbeat_deadline = now + session_timeout_ms
        unchanged = member.matches(protocols)
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        if group.is_(STABLE) and unchanged:
            def stored(code):
                if code or not group.has(new_id):
                    return self._respond(callback, JoinResult(code or E.UnknownMemberIdError.code,
                                                              member_id=new_id))
                self._respond(callback, self._join_result(group, group.get(new_id)))
            return self.manager.store_group(group, stored)
        self._update_member(group, member, protocols, session_timeout_ms, rebalance_timeout_ms,
                            callback)
        if group.can_rebalance():
            self._prepare_rebalance(group, now)
        else:
            self._maybe_complete_join(group, now)

    def _join_result(self, group: GroupMetadata, member: MemberMetadata) -> JoinResult:
        leader = group.is_leader(member.member_id)
        return JoinResult(NONE, group.generation_id, group.protocol_name or "", group.leader_id or "",
                          member.member_id, group.member_list() if leader else [], group.protocol_type)

    # --- rebalance ---
    def _prepare_rebalance(self, group: GroupMetadata, now: int) -> None:
        if group.is_(COMPLETING_REBALANCE):
            self._reset_and_abort_sync(group, E.RebalanceInProgressError.code)
        was_empty = group.is_(EMPTY)
        group.transition(PREPARING_REBALANCE, now)
        timeout = group.max_rebalance_timeout_ms()
        group.rebalance_deadline = now + timeout
        group.initial_delay_until = None
        if was_empty and self.initial_rebalance_delay_ms > 0:
            group.initial_delay_until = now + min(self.initial_rebalance_delay_ms, timeout)
        self._maybe_complete_join(group, now)

    def _reset_and_abort_sync(self, group: GroupMetadata, code: int) -> None:
        for m in group.members.values():
            m.assignment = b""
            if m.awaiting_sync is not None:
                self._respond(m.awaiting_sync, SyncResult(code))
                m.awaiting_sync = None

    def _maybe_complete_join(self, group: GroupMetadata, now: int) -> None:
        if not group.is_(PREPARING_REBALANCE):
            return
        if group.initial_delay_until is not None:
            if now < group.initial_delay_until:
                return
            group.initial_delay_until = None
        deadline = group.rebalance_deadline
        assert deadline is not None, "_prepare_rebalance sets it with the state"
        if group.all_members_joined() or now >= deadline:
            self._complete_join(group, now)

    def _complete_join(self, group: GroupMetadata, now: int) -> None:
        for m in group.not_yet_rejoined():
            # missed the rebalance timeout: out of the new generation
            group.remove(m.member_id)
        group.init_next_generation(now)
        if group.is_(EMPTY):
            self._store_group_quietly(group)
            return
        for m in group.members.values():
            result = self._join_result(group, m)
            callback, m.awaiting_join = m.awaiting_join, None
            m.is_new = False
            m.heartbeat_deadline = now + m.session_timeout_ms
            self._respond(callback, result)
        # the leader has this long to send the assignment
        group.rebalance_deadline = now + group.max_rebalance_timeout_ms()

    def _store_group_quietly(self, group: GroupMetadata) -> None:
        def stored(code):
            if code:      # the in-memory state still holds; clients retry
                log.warning("cannot store group %s: error %d", group.group_id, code)
        self.manager.store_group(group, stored)

    def _remove_member(self, group: GroupMetadata, member: MemberMetadata, now: int) -> None:
        group.remove(member.member_id)
        self._respond(member.awaiting_join, JoinResult(E.UnknownMemberIdError.code,
                                                       member_id=member.member_id))
        self._respond(member.awaiting_sync, SyncResult(E.UnknownMemberIdError.code))
        member.awaiting_join = member.awaiting_sync = None
        if group.is_(STABLE) or group.is_(COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now)
        elif group.is_(PREPARING_REBALANCE):
            self._maybe_complete_join(group, now)

    # --- SyncGroup ---
    def sync_group(self, group_id: str, generation_id: int, member_id: str,
                   group_instance_id: str | None, assignments: dict[str, bytes],
                   callback: Callable[[SyncResult], None], protocol_type: str | None = None,
                   protocol_name: str | None = None) -> None:
        """The leader's call carries every member's assignment; followers wait for it.

        ``protocol_type`` / ``protocol_name`` (SyncGroup v5+) must be the group's when given,
        else INCONSISTENT_GROUP_PROTOCOL (a client checking it joined what it thinks it joined).
        """
        self._locked(self._sync, group_id, generation_id, member_id, group_instance_id,
                     assignments, callback, protocol_type, protocol_name)

    def _sync(self, group_id, generation_id, member_id, instance_id, assignments, callback,
              protocol_type=None, protocol_name=None):
        consumer_group = None if self._check_available(group_id) else self._live_consumer_group(group_id)
        if consumer_group is not None:
            return self._classic_sync_consumer_group(consumer_group, generation_id, member_id, instance_id,
                                                     protocol_type, protocol_name, callback)
        code = self._check_available(group_id) or self._check_member(
            group_id, member_id, instance_id, generation_id)
        group = self._group(group_id)
        if not code and (protocol_type is not None and protocol_type != group.protocol_type or
                         protocol_name is not None and protocol_name != group.protocol_name):
            code = E.InconsistentGroupProtocolError.code
        if code:
            return self._respond(callback, SyncResult(code))
        member = group.get(member_id)
        now = self.clock()
        if group.is_(PREPARING_REBALANCE):
            return self._respond(callback, SyncResult(E.RebalanceInProgressError.code))
        if group.is_(STABLE):
            member.heartbeat_deadline = now + member.session_timeout_ms
            return self._respond(callback, self._sync_result(group, member))
        # CompletingRebalance
        member.awaiting_sync = callback
        member.heartbeat_deadline = now + member.session_timeout_ms
        if not group.is_leader(member_id):
            return
        for m in group.members.values():
            m.assignment = bytes(assignments.get(m.member_id) or b"")
        generation = group.generation_id

        def stored(code):
            # the members hear of the assignment once it is replicated, as Kafka's storeGroup
            # callback tells them; meanwhile the group may have moved on (or been unloaded)
            if not group.is_(COMPLETING_REBALANCE) or group.generation_id != generation:
                return
            now = self.clock()
            if code:
                self._reset_and_abort_sync(group, code)
                self._prepare_rebalance(group, now)
                return
            group.transition(STABLE, now)
            group.rebalance_deadline = None
            for m in group.members.values():
                if m.awaiting_sync is not None:
                    self._respond(m.awaiting_sync, self._sync_result(group, m))
                    m.awaiting_sync = None
        self.manager.store_group(group, stored)

    @staticmethod
    def _sync_result(group: GroupMetadata, member: MemberMetadata) -> SyncResult:
        return SyncResult(NONE, member.assignment, group.protocol_type, group.protocol_name)

    def _check_member(self, group_id: str, member_id: str, instance_id: str | None,
                      generation_id: int) -> int:
        """The checks SyncGroup and Heartbeat share, in Kafka's order."""
        group = self._group(group_id)
        if group is None or group.is_(DEAD):
            return E.UnknownMemberIdError.code
        if group.is_static_member_fenced(instance_id, member_id):
            return E.FencedInstanceIdError.code
        if not group.has(member_id):
            return E.UnknownMemberIdError.code
        if group.is_(EMPTY):
            return E.UnknownMemberIdError.code
        if generation_id != group.generation_id:
            return E.IllegalGenerationError.code
        return NONE

    # --- Heartbeat / LeaveGroup ---
    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None = None) -> int:
        """Keep the member alive; REBALANCE_IN_PROGRESS tells it to rejoin."""
        return self._locked(self._heartbeat, group_id, generation_id, member_id, group_instance_id)

    def _heartbeat(self, group_id, generation_id, member_id, instance_id):
        consumer_group = None if self._check_available(group_id) else self._live_consumer_group(group_id)
        if consumer_group is not None:
            return self._classic_heartbeat_consumer_group(consumer_group, generation_id, member_id, instance_id)
        code = self._check_available(group_id) or self._check_member(
            group_id, member_id, instance_id, generation_id)
        group = self._group(group_id)
        if code == E.IllegalGenerationError.code and group.is_(PREPARING_REBALANCE):
            code = E.RebalanceInProgressError.code
        if code and code != E.RebalanceInProgressError.code:
            return code
        member = group.get(member_id)
        member.heartbeat_deadline = self.clock() + member.session_timeout_ms
        if group.is_(PREPARING_REBALANCE):
            return E.RebalanceInProgressError.code
        return NONE

    def leave_group(self, group_id: str, member_id: str) -> int:
        """LeaveGroup v0-v2: one dynamic member leaves; its error or the group's."""
        code, codes = self.leave_group_members(group_id, [(member_id, None)])
        return code or codes[0]

    def leave_group_members(self, group_id: str, members: list[tuple[str, str | None]]
                            ) -> tuple[int, list[int]]:
        """LeaveGroup v3+: ``(member_id, group_instance_id)`` pairs leave at once.

        Returns the group's error (then no member is touched) and an error per member, by
        Kafka's rules: an empty member id with an instance id removes that static member (an
        admin's removal, KIP-345); a member id whose instance id now belongs to another member
        is FENCED_INSTANCE_ID; an instance id nobody holds, or an unknown member, is
        UNKNOWN_MEMBER_ID. An unknown group answers UNKNOWN_MEMBER_ID for each member.
        """
        return self._locked(self._leave, group_id, members)

    def _leave(self, group_id, members):
        code = self._check_available(group_id)
        if code:
            return code, []
        consumer_group = self._live_consumer_group(group_id)
        if consumer_group is not None:
            return NONE, self._classic_leave_consumer_group(consumer_group, members)
        group = self._group(group_id)
        if group is None:
            return NONE, [E.UnknownMemberIdError.code] * len(members)
        if group.is_(DEAD):
            return E.CoordinatorNotAvailableError.code, []
        return NONE, [self._leave_one(group, mid, iid) for mid, iid in members]

    def _leave_one(self, group, member_id: str, instance_id: str | None) -> int:
        now = self.clock()
        if not member_id:
            current = group.static_member_id(instance_id)
            if current is None:
                return E.UnknownMemberIdError.code
            member_id = current
        elif member_id in group.pending_members:
            del group.pending_members[member_id]
            self._maybe_complete_join(group, now)
            return NONE
        elif instance_id is not None:
            current = group.static_member_id(instance_id)
            if current is None:
                return E.UnknownMemberIdError.code
            if current != member_id:
                return E.FencedInstanceIdError.code
        if not group.has(member_id):
            return E.UnknownMemberIdError.code
        self._remove_member(group, group.get(member_id), now)
        return NONE

    # --- timers ---
    def tick(self, now: int | None = None) -> None:
        """Expire dead members, end rebalances whose time is up, expire old offsets."""
        self._locked(self._tick, self.clock() if now is None else now)

    def _tick(self, now: int) -> None:
        for group in list(self.manager.groups.values()):
            self._expire(group, now)
        for consumer_group in list(self.consumer_groups.values()):
            self._expire_consumer_group(consumer_group, now)
        if now >= self._next_retention_check:
            self._next_retention_check = now + self.retention_check_interval_ms
            self.manager.expire_offsets(now)

    def _expire(self, group, now: int) -> None:
        """Everything of ``group`` whose deadline has passed by ``now``: pending member ids,
        a rebalance the leader never completed, members whose session ran out."""
        for mid, deadline in list(group.pending_members.items()):
            if deadline <= now:
                del group.pending_members[mid]
        if group.is_(COMPLETING_REBALANCE) and group.rebalance_deadline is not None \
                and now >= group.rebalance_deadline:
            # the leader never sent the assignment: drop whoever did not sync, start over
            for m in [m for m in group.members.values() if m.awaiting_sync is None]:
                group.remove(m.member_id)
            self._prepare_rebalance(group, now)
        for m in list(group.members.values()):
            if m.awaiting_join is None and m.awaiting_sync is None \
                    and m.heartbeat_deadline <= now and group.has(m.member_id):
                self._remove_member(group, m, now)
        self._maybe_complete_join(group, now)

    def _group(self, group_id: str):
        """The group a request names, with its due deadlines applied first: each member expires
        on its own deadline, as Kafka's delayed heartbeats do, not at the next tick."""
        group = self.manager.get(group_id)
        if group is not None:
            self._expire(group, self.clock())
        return group

    def shutdown(self) -> None:
        """Stop answering: parked JoinGroup/SyncGroup requests get NOT_COORDINATOR to go elsewhere."""
        def stop():
            self.active = False
            for group in self.manager.groups.values():
                self._send_away(group)
        self._locked(stop)
