"""Typing for fastkafka._core.varint: Kafka VARINT / VARLONG / UNSIGNED_VARINT (see varint.pyx)."""
from array import array
from mmap import mmap
from typing import Any, Union

from typing_extensions import TypeAlias

_Buffer: TypeAlias = Union[bytes, bytearray, memoryview, mmap, array[Any]]

def encode_varint(v: int) -> bytes:
    """Zigzag int32 varint; OverflowError outside int32."""

def encode_varlong(v: int) -> bytes:
    """Zigzag int64 varint; OverflowError outside int64."""

def encode_uvarint(u: int) -> bytes:
    """Unsigned uint32 varint; OverflowError outside 0..2**32-1."""

def size_varint(v: int) -> int: ...
def size_varlong(v: int) -> int: ...
def size_uvarint(u: int) -> int: ...

def decode_varint(buf: _Buffer, pos: int = 0) -> tuple[int, int]:
    """``(value, new_pos)``; VarintError when truncated or overlong, ValueError for a bad pos."""

def decode_varlong(buf: _Buffer, pos: int = 0) -> tuple[int, int]:
    """``(value, new_pos)``; VarintError when truncated or overlong, ValueError for a bad pos."""

def decode_uvarint(buf: _Buffer, pos: int = 0) -> tuple[int, int]:
    """``(value, new_pos)``; VarintError when truncated or overlong, ValueError for a bad pos."""
