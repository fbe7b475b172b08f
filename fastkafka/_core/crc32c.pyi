"""Typing for fastkafka._core.crc32c (CRC-32C, Castagnoli; see crc32c.pyx)."""
from array import array
from mmap import mmap
from typing import Any, Union

from typing_extensions import TypeAlias

# Any object exporting a C-contiguous buffer; these are the usual ones.
_Buffer: TypeAlias = Union[bytes, bytearray, memoryview, mmap, array[Any]]

def crc32c(data: _Buffer, value: int = 0) -> int:
    """CRC-32C of ``data``, continuing from ``value`` (the CRC of the preceding bytes)."""

def crc32c_sw(data: _Buffer, value: int = 0) -> int:
    """:func:`crc32c` on the portable slicing-by-8 engine."""

def crc32c_engine(data: _Buffer, value: int = 0, name: str = "software") -> int:
    """:func:`crc32c` on the named engine (one of :func:`engines`); ValueError if unavailable."""

def crc32c_repeat(data: _Buffer, reps: int, name: str = "software") -> int:
    """CRC-32C of ``data * reps`` by running engine ``name`` ``reps`` times (for timing)."""

def engines() -> tuple[str, ...]:
    """Engines this machine can run, slowest first."""

def crc32c_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32C of ``a + b`` from ``crc32c(a)``, ``crc32c(b)`` and ``len(b)``."""

def hardware() -> bool:
    """True when :func:`crc32c` uses the CPU's CRC32 instruction."""

def engine() -> str:
    """``"sse4.2+pclmul"``, ``"sse4.2"`` or ``"software"``."""
