"""Typing for fastkafka._core.legacy_down: record batches v2 -> legacy message sets."""
from typing import Union

from typing_extensions import TypeAlias

_Buffer: TypeAlias = Union[bytes, bytearray, memoryview]

def v2_to_legacy(stream: _Buffer, magic: int, base_offset: int, base_timestamp: int,
                 max_timestamp: int, attributes: int, record_count: int,
                 inner: bool) -> tuple[bytes, int, int]:
    """(message_set, last_offset, wrapper_timestamp)."""
def down_convert_parts(buf: _Buffer, magic: int) -> list[Union[bytes, tuple[int, int, int, int, int, int, memoryview]]]:
    """Converted runs (bytes) and compressed batches (codec, base_offset, base_timestamp,
    max_timestamp, attributes, record_count, payload) for the caller's codec."""
