# Contract of fastkafka._core.records: record batch v2 framing, validation and in-place
# offset assignment. Byte layout: records_layout.pxd. Builders live in records_build,
# decoders in records_read; records re-exports their Python names.
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t


cdef class Validation:
    cdef readonly Py_ssize_t valid_bytes
    cdef readonly Py_ssize_t batch_count
    cdef readonly int64_t record_count
    cdef readonly int64_t first_offset
    cdef readonly int64_t last_offset
    cdef readonly int64_t max_timestamp
    cdef readonly object error
    cdef readonly int error_code
    cdef readonly Py_ssize_t error_position
    cdef readonly bint truncated


cdef class BatchHeader:
    cdef readonly Py_ssize_t position
    cdef readonly int64_t base_offset
    cdef readonly int32_t batch_length
    cdef readonly int32_t partition_leader_epoch
    cdef readonly int magic
    cdef readonly uint32_t crc
    cdef readonly int attributes
    cdef readonly int32_t last_offset_delta
    cdef readonly int64_t base_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly int32_t record_count
