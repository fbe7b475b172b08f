"""Typing for fastkafka._core.legacy: legacy message sets (magic 0/1), see legacy.pyx."""
from typing import Any, Iterable, Optional, Union

from typing_extensions import TypeAlias

_Buffer: TypeAlias = Union[bytes, bytearray, memoryview]

class MessageSetInfo:
    valid_bytes: int
    message_count: int
    wrapper_count: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    magic: int
    mixed_magic: bool
    truncated: bool
    error: Optional[Exception]
    error_position: int

def validate(buf: _Buffer, check_crc: bool = True) -> MessageSetInfo: ...
def decode(buf: _Buffer, check_crc: bool = True) -> list[tuple[int, int, int, int, Optional[bytes], Optional[bytes]]]:
    """(offset, magic, attributes, timestamp, key, value) per top-level message."""
def encode(messages: Iterable[tuple[Optional[_Buffer], Optional[_Buffer], Optional[int]]], magic: int,
           first_offset: int, attributes: int, offset_step: int = 1) -> bytes: ...
def legacy_units(buf: _Buffer) -> list[tuple[int, int, int, int, int, memoryview]]:
    """(codec, magic, attributes, offset, timestamp, payload) per run / wrapper."""
def to_v2_records(buf: _Buffer, inner: bool, wrapper_magic: int = 0, wrapper_attributes: int = 0,
                  wrapper_timestamp: int = -1, reserve: int = 0,
                  check_crc: bool = True) -> tuple[bytearray, int, int, int]:
    """(stream, count, base_timestamp, max_timestamp)."""
def lz4_header_checksum(frame: _Buffer, broken: bool) -> tuple[int, int]:
    """(expected HC, stored HC)."""
def lz4_set_header_checksum(frame: Any, broken: bool) -> Any: ...
def xxh32_digest(data: _Buffer, seed: int = 0) -> int: ...
