"""Typing for fastkafka._core.appender (the append path: one walk, a status, a summary)."""
from typing import Any, Callable, Optional, Union

from fastkafka._core.producer_entry import ProducerStateEntry

OK: int
ROLL: int
INVALID: int
BATCH_TOO_LARGE: int
SET_TOO_LARGE: int
NEEDS_PRODUCER_CHECK: int
NEEDS_KEY_CHECK: int
NULL_KEY: int
CLOSED: int
OFFSETS_BEHIND: int
CONTROL_BATCH: int
BYTES_CHECKED: int
PRODUCER_CHECKED: int
KEYS_CHECKED: int
AS_FOLLOWER: int
MARKERS_ALLOWED: int

class AppendResult:
    status: int
    flags: int
    bytes: int
    batch_count: int
    record_count: int
    largest_batch: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int
    compressed_batches: int
    null_keys: int
    transactional: bool
    control_batches: int
    producer_batches: int
    mixed_producers: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence_delta: int
    producer_first_offset: int
    producer_last_offset: int
    producer_max_timestamp: int
    first_epoch: int
    last_epoch: int

class Appender:
    next_offset: int
    high_watermark: int
    log_start_offset: int
    unflushed_messages: int
    first_unflushed_ms: int
    deleted: bool
    high_watermark_follows_end: bool
    base_offset: int
    size: int
    created_ms: int
    attached: bool
    def __init__(self, lock: Any, info_type: type, clock: Callable[[], int],
                 flush: Callable[[], None]) -> None: ...
    def set_limits(self, segment_bytes: int, segment_ms: int, max_batch_bytes: int, flush_messages: int,
                   flush_ms: int, log_append_time: bool, compact: bool) -> None: ...
    def attach(self, open_file: Callable[[], Any], open_indexes: Callable[[], tuple[Any, Any, Any]],
               base_offset: int, size: int, created_ms: int) -> None: ...
    def set_producers(self, producers: Optional[dict[int, ProducerStateEntry]]) -> None: ...
    def detach(self) -> None: ...
    def drop_file(self) -> None: ...
    def append(self, buf: Any, leader_epoch: int = ..., flags: int = ...) -> Optional[Union[tuple, AppendResult]]: ...
