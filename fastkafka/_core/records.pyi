"""Typing for fastkafka._core.records (record batch v2: validate, index, stamp offsets)."""
from typing import Any, Optional

from fastkafka.errors import CorruptRecordError

from .records_build import encode_records as encode_records, finish_batch as finish_batch
from .records_read import (Columns as Columns, Record as Record,
                           decode_columns as decode_columns, decode_records as decode_records)

_Buffer = Any  # any C-contiguous bytes-like object (bytes, bytearray, memoryview, mmap)

BATCH_OVERHEAD: int  # 61
LOG_OVERHEAD: int    # 12

class HeaderOffsets:
    """Byte offsets of the v2 batch header fields (records_layout.pxd)."""
    BASE_OFFSET: int
    LENGTH: int
    PARTITION_LEADER_EPOCH: int
    MAGIC: int
    CRC: int
    ATTRIBUTES: int
    LAST_OFFSET_DELTA: int
    BASE_TIMESTAMP: int
    MAX_TIMESTAMP: int
    PRODUCER_ID: int
    PRODUCER_EPOCH: int
    BASE_SEQUENCE: int
    RECORD_COUNT: int
    RECORDS: int

class Validation:
    valid_bytes: int
    batch_count: int
    record_count: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    error: Optional[CorruptRecordError]
    error_code: int
    error_position: int
    truncated: bool

class BatchHeader:
    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    @property
    def compression(self) -> int: ...
    @property
    def timestamp_type(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def size(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def next_offset(self) -> int: ...

def validate(buf: _Buffer, *, check_crc: bool = ..., records: bool = ...) -> Validation: ...
def validate_records(buf: _Buffer) -> Validation: ...
def batch_epochs(buf: _Buffer) -> list[tuple[int, int, int]]: ...
def batch_index(buf: _Buffer, *, check_crc: bool = ...) -> list[tuple[int, int, int, int, int]]: ...
def assign_offsets(buf: Any, base_offset: int, partition_leader_epoch: int = ...,
                   log_append_time: int = ...) -> int: ...
def read_header(buf: _Buffer, pos: int = ...) -> BatchHeader: ...
def magic_of(buf: _Buffer, pos: int = ...) -> int: ...
def compressed_batches(buf: _Buffer) -> list[tuple[int, int, int, int]]: ...
def count_null_keys(stream: _Buffer) -> int: ...
