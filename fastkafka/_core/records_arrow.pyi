"""Typing for fastkafka._core.records_arrow (Arrow columns -> v2 record stream)."""
from typing import Any, Optional

_Buffer = Any  # a pyarrow Buffer or any bytes-like object
# (validity | None, offsets, data | None, offset, length): arr.buffers() + (arr.offset, len(arr))
_Column = tuple[Optional[_Buffer], _Buffer, Optional[_Buffer], int, int]

class ArrowColumns:
    num_rows: int
    def __init__(self, key: Optional[_Column], value: _Column,
                 headers: Optional[tuple[_Column, _Column, _Column]] = ...) -> None: ...

class ArrowRecordsBuilder:
    count: int
    size: int
    def __init__(self, reserve: int = ..., hint: int = ...) -> None: ...
    def append(self, cols: ArrowColumns, rows: Any, start: int, stop: int, timestamp: int,
               max_bytes: int) -> int: ...
    def finish(self) -> tuple[bytearray, int, int, int, int]: ...
