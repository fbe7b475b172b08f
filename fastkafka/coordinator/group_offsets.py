"""The group coordinator's offset requests: OffsetCommit, TxnOffsetCommit and OffsetFetch, and
the transaction markers that settle transactional commits. A mixin of
:class:`~fastkafka.coordinator.coordinator.GroupCoordinator`, split off to keep that file to the
membership protocol; it runs under the coordinator's lock (``_locked``), sees groups through
``_group`` (due expirations applied first), and answers commits through the outbox once the
store has replicated them (``_answer_later``).
"""
from __future__ import annotations

from typing import Callable

from .. import errors
from .formats import OffsetAndMetadata
from .group import COMPLETING_REBALANCE, DEAD, EMPTY
from .parts import CoordinatorParts

__all__ = ["GroupOffsets"]

NONE = 0
E = errors


class GroupOffsets(CoordinatorParts):
    """OffsetCommit, TxnOffsetCommit, OffsetFetch (see the module docstring)."""

    def commit_offsets(self, group_id: str, member_id: str, generation_id: int,
                       offsets: dict[tuple[str, int], OffsetAndMetadata],
                       group_instance_id: str | None = None,
                       callback: Callable[[dict[tuple[str, int], int]], None] | None = None,
                       api_version: int = 9) -> dict[tuple[str, int], int] | None:
        """An error code per partition, through ``callback`` once the commit is replicated (or
        failed); without one the call waits and returns them. ``generation_id`` < 0 is a commit
        outside group management. A KIP-848 member must commit with OffsetCommit ``api_version``
        9 or later (UNSUPPORTED_VERSION otherwise, as Kafka answers)."""
        if callback is None:
            return self._wait(lambda cb: self.commit_offsets(group_id, member_id, generation_id, offsets,
                                                             group_instance_id, cb, api_version))
        self._locked(self._commit, group_id, member_id or "", generation_id, offsets,
                     group_instance_id, callback, api_version)
        return None

    def _commit(self, group_id, member_id, generation_id, offsets, instance_id, callback, api_version=9):
        done = self._answer_later(callback)
        code = self._check_available(group_id) if group_id else E.InvalidGroupIdError.code
        consumer_group = None if code else self._live_consumer_group(group_id)
        if consumer_group is not None:        # KIP-848: the generation is the member epoch
            code = self._consumer_offsets_error(consumer_group, member_id, generation_id, commit=True,
                                                api_version=api_version)
            if not code:
                return self.manager.store_offsets(self.manager.get_or_create(group_id), offsets, done)
        elif not code:
            group = self._group(group_id)
            if group is None or group.is_(DEAD):
                if generation_id < 0:
                    return self.manager.store_offsets(self.manager.get_or_create(group_id), offsets, done)
                code = E.IllegalGenerationError.code
            elif group.is_static_member_fenced(instance_id, member_id):
                code = E.FencedInstanceIdError.code
            elif generation_id < 0 and group.is_(EMPTY):
                return self.manager.store_offsets(group, offsets, done)
            elif group.is_(COMPLETING_REBALANCE):
                code = E.RebalanceInProgressError.code
            elif not group.has(member_id):
                code = E.UnknownMemberIdError.code
            elif generation_id != group.generation_id:
                code = E.IllegalGenerationError.code
            else:
                member = group.get(member_id)
                member.heartbeat_deadline = self.clock() + member.session_timeout_ms
                return self.manager.store_offsets(group, offsets, done)
        done({tp: code for tp in offsets})

    def _answer_later(self, callback: Callable) -> Callable:
        """``callback`` as the outbox delivers it: after the lock is released."""
        return lambda value: self._respond(callback, value)

    def txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                           offsets: dict[tuple[str, int], OffsetAndMetadata], member_id: str = "",
                           generation_id: int = -1, group_instance_id: str | None = None,
                           callback: Callable[[dict[tuple[str, int], int]], None] | None = None
                           ) -> dict[tuple[str, int], int] | None:
        """TxnOffsetCommit: ``offsets`` written into the producer's transaction; they become the
        group's committed offsets when its COMMIT marker arrives (:meth:`complete_txn`). With
        KIP-447's member and generation (v3), a zombie member is refused as in OffsetCommit.
        Answers like :meth:`commit_offsets`."""
        if callback is None:
            return self._wait(lambda cb: self.txn_commit_offsets(
                group_id, producer_id, producer_epoch, offsets, member_id, generation_id,
                group_instance_id, cb))
        self._locked(self._txn_commit, group_id, producer_id, producer_epoch, offsets,
                     member_id, generation_id, group_instance_id, callback)
        return None

    def _txn_commit(self, group_id, producer_id, producer_epoch, offsets, member_id, generation_id,
                    instance_id, callback):
        done = self._answer_later(callback)
        code = self._check_available(group_id) if group_id else E.InvalidGroupIdError.code
        if not code:
            group = self._group(group_id) or self.manager.get_or_create(group_id)
            if group.is_(DEAD):
                code = E.CoordinatorNotAvailableError.code
            elif group.is_static_member_fenced(instance_id, member_id):
                code = E.FencedInstanceIdError.code
            elif member_id and not group.has(member_id):
                code = E.UnknownMemberIdError.code
            elif generation_id >= 0 and generation_id != group.generation_id:
                code = E.IllegalGenerationError.code
            else:
                return self.manager.store_offsets(group, offsets, done, (producer_id, producer_epoch))
        done({tp: code for tp in offsets})

    def complete_txn(self, producer_id: int, partition: int, commit: bool) -> None:
        """The transaction coordinator wrote ``producer_id``'s marker to
        ``__consumer_offsets-<partition>``: its offsets there are committed or dropped."""
        self._locked(self.manager.complete_txn, producer_id, partition, commit)

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[int, dict[tuple[str, int], OffsetAndMetadata | None]]:
        """``(error, {tp: committed or None})``; every committed partition when ``partitions`` is None.
        ``member_id`` / ``member_epoch`` (OffsetFetch v9) are checked against a consumer group's."""
        return self._locked(self._fetch, group_id, partitions, member_id, member_epoch)

    def unstable_offsets(self, group_id: str) -> set[tuple[str, int]]:
        """The partitions with offsets committed in a transaction not yet ended (KIP-447's
        OffsetFetch ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for them)."""
        return self._locked(self._unstable, group_id)

    def _unstable(self, group_id):
        group = self._group(group_id)
        return set() if group is None else {tp for pending in group.pending_txn_offsets.values() for tp in pending}

    def _fetch(self, group_id, partitions, member_id=None, member_epoch=-1):
        code = self._check_available(group_id)
        consumer_group = None if code else self.consumer_groups.get(group_id)
        if consumer_group is not None:
            code = self._consumer_offsets_error(consumer_group, member_id, member_epoch, commit=False)
        if code:
            return code, {tp: None for tp in partitions or ()}
        return NONE, self.manager.fetch_offsets(group_id, partitions)
