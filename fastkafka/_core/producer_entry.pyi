"""Typing for fastkafka._core.producer_entry (one producer's remembered state on a partition)."""
from typing import Iterable, NamedTuple, Optional

class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int

class ProducerStateEntry:
    producer_id: int
    epoch: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int
    @property
    def batches(self) -> tuple[BatchMetadata, ...]: ...
    @batches.setter
    def batches(self, metas: Iterable[BatchMetadata]) -> None: ...
    def __init__(self, producer_id: int, epoch: int) -> None: ...
    @property
    def last_seq(self) -> int: ...
    def find_duplicate(self, first_seq: int, last_seq: int) -> Optional[BatchMetadata]: ...
    def add(self, meta: BatchMetadata | Iterable[int]) -> None: ...
    def record(self, first_seq: int, last_offset_delta: int, first_offset: int, last_offset: int,
               timestamp: int) -> None: ...
    def set_epoch(self, epoch: int) -> None: ...
