"""GroupMetadataManager: the groups' cache and their persistence in ``__consumer_offsets``.

It owns every :class:`GroupMetadata` and the committed offsets, writes group metadata and offset
commits as records to the partition ``partition_for(group)`` through an :class:`OffsetsStore`,
replays those partitions at start-up or when this broker becomes their leader (answering
COORDINATOR_LOAD_IN_PROGRESS meanwhile), forgets them when it stops leading them, and expires
old offsets (``offsets.retention.minutes``) with tombstones so compaction drops them.

Offset commits and group metadata are acknowledged only once replicated, as Kafka appends them
with acks=all: their callbacks run when the store says so, and only then do commits enter the
cache. Tombstones (deletion, expiry) are not waited for (Kafka appends them with acks 0 too).

It is not thread-safe on its own: the :class:`GroupCoordinator`'s lock guards every call, and
``guard`` wraps each write's completion so that it takes that lock when it arrives later.

Example::

    >>> from fastkafka.coordinator.storage import MemoryOffsetsStore
    >>> store = MemoryOffsetsStore(num_partitions=4)
    >>> m = GroupMetadataManager(store, clock=lambda: 1000)
    >>> m.load_all()
    >>> g = m.get_or_create("g")
    >>> m.store_offsets(g, {("t", 0): OffsetAndMetadata(5, "", 1000)}, print)
    {('t', 0): 0}
    >>> m2 = GroupMetadataManager(store, clock=lambda: 2000); m2.load_all()
    >>> m2.get("g").offsets[("t", 0)].offset
    5
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable, Sequence

from .. import errors
from ..records import CONTROL_COMMIT
from .consumer_group_records import replay as replay_consumer_groups
from .formats import (ConsumerGroupKey, GroupKey, GroupRecord, MemberRecord, OffsetAndMetadata, OffsetKey,
                      decode_group_value, decode_key, decode_offset_value, group_key, group_value,
                      offset_key, offset_value, partition_for)
from .group import DEAD, EMPTY, STABLE, GroupMetadata, MemberMetadata

__all__ = ["GroupMetadataManager", "OffsetAndMetadata", "offset_commit_error", "group_store_error"]

log = logging.getLogger("fastkafka.coordinator")

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
NO_PRODUCER = -1


class GroupMetadataManager:
    """Groups by id, their offsets, and the ``__consumer_offsets`` partitions they live in."""

    def __init__(self, store, *, clock: Callable[[], int], retention_ms: int = DEFAULT_RETENTION_MS,
                 max_metadata_size: int = 4096):
        self.store = store
        self.num_partitions = store.num_partitions
        self.clock = clock
        self.retention_ms = retention_ms
        self.max_metadata_size = max_metadata_size
        self.groups: dict[str, GroupMetadata] = {}
        self._loaded: set[int] = set()
        #: wraps a write's completion callback (the coordinator's: take its lock first)
        self.guard: Callable[[Callable[[int], None]], Callable[[int], None]] = lambda fn: fn
        #: gets the KIP-848 consumer groups a loaded partition holds, by id (the coordinator's)
        self.consumer_groups_loaded: Callable[[dict], None] = lambda groups: None

    # --- ownership and loading ---
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def unloaded(self, partitions: set[int]) -> set[int]:
        """Those of ``partitions`` whose groups are not loaded yet."""
        return partitions - self._loaded

    def is_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) not in self._loaded

    def check_loaded(self, group_id: str) -> None:
        if self.is_loading(group_id):
            raise errors.CoordinatorLoadInProgressError(f"group {group_id}: offsets still loading")

    def load_all(self) -> None:
        for p in range(self.num_partitions):
            self.load_partition(p)

    def load_partition(self, partition: int) -> None:
        """Replay one partition: the last record per key wins, a tombstone deletes. KIP-848
        consumer groups are rebuilt from their records and handed to ``consumer_groups_loaded``.

        Loaded groups keep their members (state Stable) so clients that survive a coordinator
        restart carry on heartbeating; members that do not come back expire after their session.
        """
        offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        groups: dict[str, GroupRecord | None] = {}
        # transactional commits wait for their producer's marker: pid -> [(group, tp, offset)]
        pending: dict[int, list[tuple[str, tuple[str, int], OffsetAndMetadata]]] = {}
        consumer_group_records = []
        for rec in self.store.read(partition):
            if rec.control is not None:
                done = pending.pop(rec.producer_id, ())
                if rec.control == CONTROL_COMMIT:
                    for gid, tp, om in done:
                        offsets.setdefault(gid, {})[tp] = om
                continue
            try:
                key, value = decode_key(rec.key), rec.value
                if isinstance(key, OffsetKey):
                    tp = (key.topic, key.partition)
                    if rec.producer_id != NO_PRODUCER and value is not None:
                        pending.setdefault(rec.producer_id, []).append(
                            (key.group, tp, decode_offset_value(value)))
                    elif value is None:
                        offsets.setdefault(key.group, {}).pop(tp, None)
                    else:
                        offsets.setdefault(key.group, {})[tp] = decode_offset_value(value)
                elif isinstance(key, GroupKey):
                    groups[key.group] = None if value is None else decode_group_value(value)
                elif isinstance(key, ConsumerGroupKey):
                    consumer_group_records.append((rec.key, value))
            except errors.CorruptRecordError as e:
                log.warning("__consumer_offsets-%d: skipping an unreadable record (%s)", partition, e)
        open_txns: dict[str, dict[int, dict]] = {}
        for pid, items in pending.items():
            for gid, tp, om in items:
                open_txns.setdefault(gid, {}).setdefault(pid, {})[tp] = om
        now = self.clock()
        for gid in set(offsets) | set(groups) | set(open_txns):
            record = groups.get(gid)
            group_offsets = offsets.get(gid, {})
            if record is None and not group_offsets and gid not in open_txns:
                continue
            group = self._group_from_record(gid, record, now)
            group.offsets.update(group_offsets)
            group.pending_txn_offsets = open_txns.get(gid, {})
            self.groups[gid] = group
        self.consumer_groups_loaded(replay_consumer_groups(consumer_group_records))
        self._loaded.add(partition)

    def unload_partition(self, partition: int) -> list[GroupMetadata]:
        """Forget the groups of a partition this broker no longer leads (Kafka's
        removeGroupsForPartition) and return them, so that their waiting members can be sent
        elsewhere; leading it again means loading it again, from the replicated log."""
        self._loaded.discard(partition)
        gone = [g for gid, g in self.groups.items() if self.partition_for(gid) == partition]
        for g in gone:
            del self.groups[g.group_id]
        return gone

    def _group_from_record(self, gid: str, record: GroupRecord | None, now: int) -> GroupMetadata:
        group = GroupMetadata(gid, now_ms=now)
        if record is None:
            return group
        group.protocol_type = record.protocol_type or None
        group.generation_id = record.generation_id
        group.protocol_name = record.protocol_name
        if record.current_state_timestamp >= 0:
            group.state_timestamp = record.current_state_timestamp
        for mr in record.members:
            member = MemberMetadata(mr.member_id, gid, mr.group_instance_id, mr.client_id,
                                    mr.client_host, mr.session_timeout_ms,
                                    mr.rebalance_timeout_ms if mr.rebalance_timeout_ms > 0
                                    else mr.session_timeout_ms, record.protocol_type,
                                    [(record.protocol_name or "", mr.subscription)])
            member.assignment = mr.assignment
            member.heartbeat_deadline = now + mr.session_timeout_ms
            group.add(member)
        if group.members:
            group.leader_id = record.leader_id if record.leader_id in group.members \
                else next(iter(group.members))
            group.state = STABLE
            group.state_timestamp = now
        return group

    # --- the cache ---
    def get(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def get_or_create(self, group_id: str) -> GroupMetadata:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = GroupMetadata(group_id, now_ms=self.clock())
        return group

    def remove(self, group: GroupMetadata) -> None:
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    # --- writes ---
    def store_group(self, group: GroupMetadata, done: Callable[[int], None]) -> None:
        """Persist the group's membership and assignment (after a rebalance, or when it empties);
        ``done`` gets the error for the members (Kafka's storeGroup mapping, 0 = stored) once the
        write is replicated or failed. Raises nothing."""
        members = [MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                m.rebalance_timeout_ms, m.session_timeout_ms,
                                m.metadata(group.protocol_name) if group.protocol_name else b"",
                                m.assignment)
                   for m in group.members.values()]
        record = GroupRecord(group.protocol_type or "", group.generation_id, group.protocol_name,
                             group.leader_id, group.state_timestamp, members)
        try:
            self._append(group.group_id, [(group_key(group.group_id), group_value(record))],
                         on_replicated=lambda code: done(group_store_error(code)))
        except errors.KafkaError as e:
            done(group_store_error(e.code))

    def store_records(self, group_id: str, records: list[tuple[bytes, bytes | None]],
                      done: Callable[[int], None]) -> None:
        """Append ``records`` (a KIP-848 group's changes) to the group's partition; ``done`` gets
        0 once they are replicated, else the error. Raises nothing."""
        try:
            self._append(group_id, records, on_replicated=done)
        except errors.KafkaError as e:
            done(e.code)

    def store_offsets(self, group: GroupMetadata, offsets: dict[tuple[str, int], OffsetAndMetadata],
                      done: Callable[[dict[tuple[str, int], int]], None],
                      producer: tuple[int, int] | None = None) -> None:
        """Validate and persist commits; ``done`` gets an error code per partition (0 = stored)
        once they are replicated, and only then are they cached. With ``producer`` =
        ``(producer_id, epoch)`` (TxnOffsetCommit) they are written into that producer's
        transaction and stay pending until :meth:`complete_txn`. Raises nothing."""
        result: dict[tuple[str, int], int] = {}
        records = []
        accepted = {}
        for tp, om in offsets.items():
            if om.metadata is not None and len(om.metadata.encode()) > self.max_metadata_size:
                result[tp] = errors.OffsetMetadataTooLargeError.code
                continue
            om = om._replace(metadata=om.metadata or "")
            accepted[tp] = om
            records.append((offset_key(group.group_id, tp[0], tp[1]), offset_value(om)))
        if not records:
            return done(result)

        def replicated(code: int) -> None:
            if code == 0 and not group.is_(DEAD):     # a group unloaded meanwhile is gone
                if producer is None:
                    group.offsets.update(accepted)
                else:
                    group.pending_txn_offsets.setdefault(producer[0], {}).update(accepted)
            done({**result, **dict.fromkeys(accepted, offset_commit_error(code))})
        try:
            self._append(group.group_id, records, producer, replicated)
        except errors.KafkaError as e:
            replicated(e.code)

    def fetch_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], OffsetAndMetadata | None]:
        """Committed offsets of ``partitions`` (None for those never committed); all when None."""
        group = self.groups.get(group_id)
        cached = {} if group is None or group.is_(DEAD) else group.offsets
        if partitions is None:
            return dict(cached)
        return {tp: cached.get(tp) for tp in partitions}

    def delete_offsets(self, group: GroupMetadata, partitions: list[tuple[str, int]]) -> None:
        """Tombstone the committed offsets of ``partitions`` (OffsetDelete)."""
        gone = [tp for tp in partitions if tp in group.offsets]
        if gone:
            self._append(group.group_id, [(offset_key(group.group_id, t, p), None) for t, p in gone])
            for tp in gone:
                del group.offsets[tp]

    def delete_group(self, group: GroupMetadata) -> None:
        """Tombstone the group and every offset it committed, then forget it."""
        records = [(offset_key(group.group_id, t, p), None) for t, p in group.offsets]
        records.append((group_key(group.group_id), None))
        self._append(group.group_id, records)
        group.offsets.clear()
        group.state = DEAD
        self.remove(group)

    def expire_offsets(self, now: int) -> int:
        """Tombstone offsets past their retention; drop groups left empty. Returns how many expired.

        As in Kafka 2.1+: an explicit expire timestamp (OffsetCommit v2-4 retention) wins; other
        offsets of a group without members age from when the group became Empty (consumer
        groups) or from their commit (standalone "simple" commits with no protocol type). Offsets
        of groups that still have members are kept.
        """
        expired_total = 0
        for group in list(self.groups.values()):
            if group.is_(DEAD):
                continue
            expired = []
            for tp, om in group.offsets.items():
                if om.expire_timestamp is not None:
                    if now >= om.expire_timestamp:
                        expired.append(tp)
                elif group.is_(EMPTY):
                    base = group.state_timestamp if group.protocol_type else om.commit_timestamp
                    if now - base >= self.retention_ms:
                        expired.append(tp)
            if expired:
                try:
                    self._append(group.group_id,
                                 [(offset_key(group.group_id, t, p), None) for t, p in expired])
                except errors.KafkaError as e:
                    log.warning("cannot expire offsets of group %s: %s", group.group_id, e)
                    continue
                for tp in expired:
                    del group.offsets[tp]
                expired_total += len(expired)
            if group.is_(EMPTY) and not group.offsets and not group.pending_txn_offsets:
                try:
                    self.delete_group(group)
                except errors.KafkaError as e:
                    log.warning("cannot delete expired group %s: %s", group.group_id, e)
        return expired_total

    def complete_txn(self, producer_id: int, partition: int, commit: bool) -> None:
        """A marker of ``producer_id``'s transaction reached ``__consumer_offsets-<partition>``:
        its pending offsets there become committed (COMMIT) or vanish (ABORT)."""
        for group in self.groups.values():
            if producer_id in group.pending_txn_offsets and self.partition_for(group.group_id) == partition:
                done = group.pending_txn_offsets.pop(producer_id)
                if commit:
                    group.offsets.update(done)

    def _append(self, group_id: str, records: Sequence[tuple[bytes, bytes | None]],
                producer: tuple[int, int] | None = None,
                on_replicated: Callable[[int], None] | None = None) -> None:
        self.store.append(self.partition_for(group_id), records, self.clock(), producer,
                          None if on_replicated is None else self.guard(on_replicated))


# Kafka maps a write's failure to a coordinator error the client knows what to do with: ask
# again (COORDINATOR_NOT_AVAILABLE), find the coordinator again (NOT_COORDINATOR), or give up
_UNAVAILABLE = frozenset(e.code for e in (errors.UnknownTopicOrPartitionError, errors.NotEnoughReplicasError,
                                          errors.NotEnoughReplicasAfterAppendError))
_MOVED = frozenset(e.code for e in (errors.NotLeaderOrFollowerError, errors.KafkaStorageError))
_TOO_LARGE = frozenset(e.code for e in (errors.MessageTooLargeError, errors.RecordListTooLargeError,
                                        errors.InvalidFetchSizeError))


def offset_commit_error(code: int) -> int:
    """An offset commit's answer for a write that ended with ``code`` (Kafka's
    maybeConvertOffsetCommitError; REQUEST_TIMED_OUT stays, and the client commits again).

    Example::

        >>> offset_commit_error(errors.NotLeaderOrFollowerError.code), offset_commit_error(7)
        (16, 7)
    """
    if code in _UNAVAILABLE:
        return errors.CoordinatorNotAvailableError.code
    if code in _MOVED:
        return errors.NotCoordinatorError.code
    if code in _TOO_LARGE:
        return errors.InvalidCommitOffsetSizeError.code
    return code


def group_store_error(code: int) -> int:
    """The members' answer for a group metadata write that ended with ``code`` (Kafka's
    storeGroup: a timed-out write makes them rejoin).

    Example::

        >>> group_store_error(errors.RequestTimedOutError.code) == errors.RebalanceInProgressError.code
        True
    """
    if code == errors.RequestTimedOutError.code:
        return errors.RebalanceInProgressError.code
    if code in _TOO_LARGE:
        return errors.UnknownServerError.code
    return offset_commit_error(code)
