"""Typing for fastkafka._core.records_read (record streams -> Records / Arrow-layout columns)."""
from array import array
from typing import Any, Iterable, Optional, Sequence

_Buffer = Any  # any C-contiguous bytes-like object

class Record:
    offset: Optional[int]
    timestamp: Optional[int]
    key: Optional[bytes]
    value: Optional[bytes]
    headers: list[tuple[str, Optional[bytes]]]
    def __init__(self, offset: Optional[int] = ..., timestamp: Optional[int] = ...,
                 key: Optional[bytes] = ..., value: Optional[bytes] = ...,
                 headers: Iterable[tuple[str, Optional[bytes]]] = ...) -> None: ...

class Columns:
    count: int
    batch_count: int
    valid_bytes: int
    offsets: array[int]            # 'q', n
    timestamps: array[int]         # 'q', n (ms)
    timestamp_types: array[int]    # 'i', n
    key_offsets: array[int]        # 'i', n + 1
    key_validity: Optional[bytes]  # LSB-first bitmap, None when no key is null
    key_null_count: int
    key_data: bytes
    value_offsets: array[int]
    value_validity: Optional[bytes]
    value_null_count: int
    value_data: bytes
    header_offsets: array[int]     # 'i', n + 1: record i has headers [h[i], h[i+1])
    header_key_offsets: array[int]
    header_key_data: bytes
    header_value_offsets: array[int]
    header_value_validity: Optional[bytes]
    header_value_null_count: int
    header_value_data: bytes
    def __len__(self) -> int: ...

def decode_records(stream: _Buffer, base_offset: int, base_timestamp: int, count: int, *,
                   timestamp_type: int = ..., max_timestamp: int = ...) -> list[Record]: ...
def decode_columns(buf: _Buffer, decompressed: Optional[Sequence[Optional[bytes]]] = ..., *,
                   check_crc: bool = ..., include_control: bool = ...) -> Columns: ...
