"""Typing for fastkafka._core.records_merge (fetched record streams -> re-based record streams)."""
from typing import Any

_Buffer = Any  # any C-contiguous bytes-like object
#: (buf, record_count, last_offset_delta, base_timestamp, max_timestamp, first_offset, last_offset)
_Chunk = tuple[bytearray, int, int, int, int, int, int]

class RecordMerger:
    chunks: list[_Chunk]
    def __init__(self, max_bytes: int, reserve: int) -> None: ...
    def add(self, stream: _Buffer, base_offset: int, base_timestamp: int, count: int, *,
            start_offset: int = ..., timestamp_type: int = ..., max_timestamp: int = ...) -> int: ...
    def finish(self) -> list[_Chunk]: ...
