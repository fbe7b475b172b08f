"""Typing for fastkafka._core.records_build (records -> v2 record stream -> batch)."""
from typing import Any, Iterable, Optional, Sequence, Union

from .records_read import Record

_RecordIn = Union[Record, tuple[Optional[bytes], Optional[bytes],
                                Optional[Sequence[tuple[str, Optional[bytes]]]], Optional[int]]]

def encode_records(records: Iterable[_RecordIn], default_timestamp: int,
                   base_timestamp: Optional[int] = ..., *, base_offset: int = ...,
                   reserve: int = ...) -> tuple[bytearray, int, int, int, int]: ...
def finish_batch(buf: Any, *, record_count: int, last_offset_delta: int, base_timestamp: int,
                 max_timestamp: int, base_offset: int = ..., partition_leader_epoch: int = ...,
                 compression: int = ..., timestamp_type: int = ..., is_transactional: bool = ...,
                 is_control: bool = ..., producer_id: int = ..., producer_epoch: int = ...,
                 base_sequence: int = ...) -> Any: ...
