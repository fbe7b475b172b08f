"""The group coordinator and ``__consumer_offsets`` (L3): membership, generations, committed offsets,
and the producer-id manager of the idempotent producer.

Sans-I/O: the server drives :class:`GroupCoordinator` with method calls and ``tick()``, and
completes delayed JoinGroup/SyncGroup responses from the callbacks it passes in.
"""
from .coordinator import GroupCoordinator, GroupSummary, JoinResult, MemberSummary, SyncResult
from .formats import OffsetAndMetadata, partition_for
from .manager import GroupMetadataManager
from .storage import OFFSETS_TOPIC, LogOffsetsStore, MemoryOffsetsStore

__all__ = ["GroupCoordinator", "GroupMetadataManager", "GroupSummary", "JoinResult",
           "MemberSummary", "SyncResult", "OffsetAndMetadata", "partition_for", "OFFSETS_TOPIC",
           "LogOffsetsStore", "MemoryOffsetsStore"]
