# Contract of a segment's .log file: an append-only run of record batches (see segment.pyx).
from libc.stdint cimport int32_t, int64_t

from fastkafka._core.index cimport OffsetIndex, TimeIndex

cdef struct BatchPos:
    int64_t position        # byte position of the batch in the file
    int64_t base_offset
    int64_t last_offset
    int64_t max_timestamp
    int64_t size            # whole batch: 12 + batchLength

cdef class IndexCursor


cdef class SegmentFile:
    cdef int fd
    cdef readonly object path
    cdef readonly int64_t size          # bytes written so far; appends go here
    cdef readonly int64_t sync_count    # fdatasync calls made (tests count them)
    cdef readonly bint writable

    cdef int _check_open(self) except -1
    # pwrite n bytes at ``size`` and advance it; returns where they start (OSError: size unchanged)
    cdef int64_t write_end(self, const unsigned char* p, size_t n) except -1
    # Find the first batch in [start, end) with last_offset >= target_offset and
    # max_timestamp >= target_ts. Returns 1 found, 0 not found, -1 with an exception set.
    cdef int scan(self, int64_t start, int64_t end, int64_t target_offset, int64_t target_ts,
                  BatchPos* out) except -1

cdef class IndexCursor:
    cdef public int64_t index_interval
    cdef public int64_t bytes_since_last_index_entry
    cdef public int64_t max_timestamp
    cdef public int64_t offset_of_max_timestamp
    cdef public bint full                 # either index has no slot left: time to roll

    # Index p[0:n] (whole validated v2 batches stored at `position`).
    cdef int index_run(self, const unsigned char* p, int64_t n, int64_t position,
                       OffsetIndex oi, TimeIndex ti) except -1
    # Disk blocks for the entries index_run may add for n bytes (OSError on a full disk).
    cdef int reserve_run(self, int64_t n, OffsetIndex oi, TimeIndex ti) except -1
