from typing import Any, Callable, Optional

class AppendState:
    next_offset: int
    high_watermark: int
    log_start_offset: int
    unflushed_messages: int
    first_unflushed_ms: int
    segment_bytes: int
    segment_ms: int
    max_message_bytes: int
    flush_messages: int
    flush_ms: int
    plain: bool
    deleted: bool
    def __init__(self, lock: Any, segments: Any, info_type: type, clock: Callable[[], int],
                 flush: Callable[[], None]) -> None: ...
    def forget(self) -> None: ...
    def appended(self, next_offset: int, records: int, now: int) -> bool: ...
    def append(self, buf: Any, leader_epoch: int = ...) -> Optional[tuple]: ...
