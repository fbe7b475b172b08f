"""What the group coordinator's parts share: one state, one lock, and a few methods one part
calls in another.

:class:`~fastkafka.coordinator.coordinator.GroupCoordinator` is put together from parts, each
the methods of one family of requests (:class:`~.group_admin.GroupAdmin`,
:class:`~.group_offsets.GroupOffsets`, :class:`~.consumer_groups.ConsumerGroupHeartbeats`,
:class:`~.classic_members.ClassicMembers`). :class:`CoordinatorParts`, their base, declares that
shared state and those methods with their types, so a type checker checks each part's use of
them and each definition against its declaration. It adds nothing at run time: the methods are
defined by the coordinator or by one of the parts.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:
    from .consumer_group import ConsumerGroup, ConsumerGroupMember
    from .group import GroupMetadata
    from .manager import GroupMetadataManager

__all__ = ["CoordinatorParts"]

T = TypeVar("T")


class CoordinatorParts:
    """The base of the coordinator's parts (see the module docstring)."""

    # set by GroupCoordinator.__init__
    manager: GroupMetadataManager
    clock: Callable[[], int]
    active: bool                 # False once shut down: requests get COORDINATOR_NOT_AVAILABLE
    _lock: threading.RLock
    # set by ConsumerGroupHeartbeats.init_consumer_groups
    consumer_groups: dict[str, ConsumerGroup]
    topic_metadata: Callable[[str], tuple | None] | None

    if TYPE_CHECKING:
        # coordinator.py: the lock, the callbacks fired once it is released, the classic groups
        def _locked(self, fn: Callable[..., T], *args: object) -> T: ...

        @staticmethod
        def _wait(start: Callable[[Callable[[T], None]], T | None]) -> T: ...

        def _respond(self, callback: Callable | None, value: object) -> None: ...

        def _partition_code(self, partition: int) -> int: ...

        def _group(self, group_id: str) -> GroupMetadata | None: ...

        def _prepare_rebalance(self, group: GroupMetadata, now: int) -> None: ...

        def _store_group_quietly(self, group: GroupMetadata) -> None: ...

        # consumer_groups.py
        def _advance(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: bool, resubscribed: bool,
                     owned, now: int) -> None: ...

        def _fence(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None: ...

        def _store_consumer_group(self, group: ConsumerGroup, done: Callable[[int], None]) -> None: ...

        # classic_members.py: a group's moves between the classic and the consumer protocol
        def _upgrade(self, classic: GroupMetadata) -> ConsumerGroup: ...

        def _maybe_downgrade(self, group: ConsumerGroup, leaving: ConsumerGroupMember) -> bool: ...
