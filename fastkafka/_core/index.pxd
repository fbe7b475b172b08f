# Contract of the mmap'd offset and time indexes of a segment (layout in index.pyx).
from libc.stdint cimport int64_t

cdef class _MmapIndex:
    cdef unsigned char* map
    cdef Py_ssize_t map_len       # bytes mapped (max size while writable, the file's size otherwise)
    cdef Py_ssize_t backed        # bytes from the file's start with disk blocks: stores there cannot fault
    cdef readonly int entry_size
    cdef readonly Py_ssize_t entries
    cdef readonly int64_t base_offset
    cdef readonly object path
    cdef readonly bint writable
    cdef readonly Py_ssize_t max_index_size
    cdef readonly bint closed     # unmapped by close()/delete() (or a failed remap): every access raises

    cdef int _map(self, Py_ssize_t length) except -1
    cdef int _check_open(self) except -1
    cdef void _unmap(self) noexcept
    cdef int _check_writable(self) except -1
    cdef bint full(self) noexcept
    cdef int _back(self, Py_ssize_t entries) except -1
    # disk blocks for `more` entries past the last, before the append path writes (OSError: disk full)
    cdef int reserve_entries(self, Py_ssize_t more) except -1

cdef class OffsetIndex(_MmapIndex):
    cdef int64_t floor_position(self, int64_t target_offset) noexcept
    cdef Py_ssize_t _floor_slot(self, int64_t target_offset) noexcept
    # the entry appends of the def methods, for segment.pyx's append path (no Python call)
    cdef int append_entry(self, int64_t offset, int64_t position) except -1

cdef class TimeIndex(_MmapIndex):
    cdef Py_ssize_t _floor_slot(self, int64_t target_ts) noexcept
    cdef int append_entry(self, int64_t timestamp, int64_t offset) except -1
