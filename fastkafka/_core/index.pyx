# The sparse indexes of a segment, mmap'd like Kafka's (files named by the segment's base offset).
#
# Byte layout (big-endian, so Kafka's tools read them):
#   .index      8 bytes per entry: relativeOffset int32 (offset - base_offset) | position int32 in .log
#   .timeindex 12 bytes per entry: timestamp int64 | relativeOffset int32
# Entries are strictly increasing (offsets; timestamps), so lookups are a floor binary search.
# A writable index is preallocated to log.index.size.max.bytes (a sparse file) and mapped whole;
# `entries` says how many slots are used. On roll it is trimmed to entries * entry_size, so a
# cleanly closed index's length gives its entry count; an untrimmed file left by a crash fails
# is_valid() (zeros are not increasing) and is rebuilt from the log, as all indexes are derived data.
#
# A store into a hole of the sparse file needs a new block, and on a full disk the kernel answers
# that store with SIGBUS, which kills the broker. So blocks are allocated (posix_fallocate) a page
# at a time before entries are stored there: a full disk is an OSError from an append
# (KAFKA_STORAGE_ERROR to the client), never a store that faults. The slot after the last entry is
# always backed too, so the final time index entry written at roll or close needs no new block.
#
# Thread-safety: one writer (the Log holding its lock) appends/truncates; readers call lookup
# concurrently. An entry is written before `entries` is bumped, so a reader sees whole entries.
# Every method runs with the GIL held (no nogil section touches the mapping), so an unmap never
# lands in the middle of a lookup. trim keeps the mapping (so a roll never pulls it from under a
# reader). close/delete unmap and mark the object closed: a reader that still holds it gets
# ValueError (the C floor helpers answer "no entry": the caller's scan starts at position 0),
# never a dereference of the unmapped pages. The log therefore does not close indexes that
# lock-free readers may hold: it drops them, and an index is unmapped when collected, i.e. after
# the last reader holding it lets go.
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, INT32_MAX

from fastkafka._core.byteorder cimport load_i32, load_i64, store_be32, store_be64
from libc.string cimport memset
from libc.errno cimport errno
from posix.fcntl cimport open as c_open, O_RDWR, O_RDONLY, O_CREAT
from posix.types cimport off_t
from posix.unistd cimport close as c_close, ftruncate, lseek
cdef extern from "<unistd.h>":
    enum: SEEK_END
from posix.mman cimport mmap, munmap, msync, madvise, PROT_READ, PROT_WRITE, MAP_SHARED, MAP_FAILED, MS_SYNC, MADV_RANDOM

import os

cdef extern from "<fcntl.h>":
    int O_CLOEXEC
    int posix_fallocate(int fd, off_t offset, off_t length) nogil

cdef Py_ssize_t BACKING_STEP = 4096      # a page: what one store into a hole allocates


cdef class _MmapIndex:
    """Shared mechanism of both indexes: the mapping, preallocation, trimming."""

    def __cinit__(self, *args, **kwargs):
        self.map = NULL
        self.map_len = 0
        self.backed = 0
        self.closed = False

    def __init__(self, path, int64_t base_offset, Py_ssize_t max_index_size=10 * 1024 * 1024,
                 bint writable=True):
        self.path = os.fsdecode(path)
        self.base_offset = base_offset
        self.writable = writable
        cdef Py_ssize_t length = self._file_length(True)
        self.entries = length // self.entry_size
        if writable:
            self.max_index_size = max(max_index_size - max_index_size % self.entry_size, length)
        else:
            self.max_index_size = length
        self._map(self.max_index_size)

    cdef int _map(self, Py_ssize_t length) except -1:
        cdef bytes p = os.fsencode(self.path)
        cdef int fd = c_open(p, (O_RDWR | O_CREAT if self.writable else O_RDONLY) | O_CLOEXEC, 0o644)
        cdef void* m
        if fd < 0:
            raise OSError(errno, os.strerror(errno), self.path)
        try:
            if self.writable and lseek(fd, 0, SEEK_END) != length:
                if ftruncate(fd, length) < 0:
                    raise OSError(errno, os.strerror(errno), self.path)
            if length > 0:
                m = mmap(NULL, length, PROT_READ | (PROT_WRITE if self.writable else 0), MAP_SHARED, fd, 0)
                if m == MAP_FAILED:
                    raise OSError(errno, os.strerror(errno), self.path)
                # No read-around on faults: the first touch of a hole in the sparse preallocated file
                # otherwise zero-fills a large folio of readahead (3.5 ms per new log's first index
                # entries, 1000 partitions' worth of seconds); lookups are binary searches anyway.
                madvise(m, length, MADV_RANDOM)
                self.map = <unsigned char*>m
            self.map_len = length
            self.backed = 0       # unknown: the first stores allocate (a no-op where blocks exist)
        finally:
            c_close(fd)   # the mapping does not need the descriptor: indexes cost no fd budget
        return 0

    def _file_length(self, bint create):
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            if not (create and self.writable):
                raise
            return 0

    cdef void _unmap(self) noexcept:
        if self.map != NULL:
            munmap(self.map, self.map_len)
            self.map = NULL
        self.map_len = 0

    cdef int _check_open(self) except -1:
        if self.closed:
            raise ValueError(f"index {self.path} is closed")
        return 0

    def __dealloc__(self):
        self._unmap()

    cdef int _back(self, Py_ssize_t entries) except -1:
        # Blocks for the first `entries` slots and the one after, rounded up to a page.
        cdef Py_ssize_t end = min((entries + 1) * self.entry_size, self.max_index_size)
        if end <= self.backed:
            return 0
        end = min((end + BACKING_STEP - 1) // BACKING_STEP * BACKING_STEP, self.max_index_size)
        cdef bytes p = os.fsencode(self.path)
        cdef int fd = c_open(p, O_RDWR | O_CLOEXEC)
        cdef int err
        if fd < 0:
            raise OSError(errno, os.strerror(errno), self.path)
        err = posix_fallocate(fd, self.backed, end - self.backed)
        c_close(fd)
        if err:
            raise OSError(err, os.strerror(err), self.path)
        self.backed = end
        return 0

    cdef int reserve_entries(self, Py_ssize_t more) except -1:
        self._check_writable()
        return self._back(min(self.entries + more, self.max_index_size // self.entry_size))

    @property
    def max_entries(self):
        return self.max_index_size // self.entry_size

    @property
    def is_full(self):
        return self.full()

    cdef bint full(self) noexcept:
        return self.entries >= self.max_index_size // self.entry_size

    @property
    def size_in_bytes(self):
        return self.entries * self.entry_size

    cdef int _check_writable(self) except -1:
        if not self.writable or self.closed or self.map == NULL and self.max_index_size > 0:
            raise ValueError(f"index {self.path} is not writable or is closed")
        return 0

    def reset(self):
        """Drop every entry (before a rebuild). Writer only."""
        self._check_writable()
        if self.map != NULL:
            # only the file's bytes: after a trim the mapping reaches past the end of the file,
            # and touching a page wholly past it raises SIGBUS
            self._back(self.max_index_size // self.entry_size)
            memset(self.map, 0, min(self.map_len, self.max_index_size))
        self.entries = 0

    def trim(self):
        """Shrink the file to its entries (on roll); the index is then full. Writer only.

        The mapping is kept as it is: lock-free readers may be inside a lookup right now, and
        they only touch slots below ``entries``, which stay inside the file. (Touching a page
        wholly past the new end of file would fault, so nothing does.)"""
        if not self.writable or self.map == NULL:
            return
        cdef Py_ssize_t length = self.entries * self.entry_size
        os.truncate(self.path, length)
        self.max_index_size = length
        self.backed = min(self.backed, length)

    def resize(self, Py_ssize_t max_index_size):
        """Grow (or shrink, never below the entries) the preallocated size: a segment made active
        again. Remaps: not safe while another thread runs a lookup on this object."""
        if not self.writable:
            raise ValueError("read-only index")
        self._check_open()
        max_index_size -= max_index_size % self.entry_size
        self._unmap()
        self.max_index_size = max(max_index_size, self.entries * self.entry_size)
        try:
            self._map(self.max_index_size)
        except BaseException:
            self.closed = True    # no mapping behind `entries` any more
            raise

    def flush(self):
        """msync the mapping (on flush of the segment)."""
        if self.map != NULL and self.writable:
            if msync(self.map, self.map_len, MS_SYNC) < 0:
                raise OSError(errno, os.strerror(errno), self.path)

    def close(self):
        """Unmap (idempotent); a writable index is trimmed first so its length gives its entries
        on reopen. Later calls raise ValueError, in any thread."""
        if self.writable and self.map != NULL:
            self.trim()
        self.closed = True
        self._unmap()

    def delete(self):
        """Unmap and remove the file (missing file is fine). Later calls raise ValueError."""
        self.closed = True
        self._unmap()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def rename(self, new_path):
        """Rename the file; the mapping stays valid."""
        new_path = os.fsdecode(new_path)
        try:
            os.rename(self.path, new_path)
        except FileNotFoundError:
            pass
        self.path = new_path


cdef class OffsetIndex(_MmapIndex):
    """Offset -> file position, one entry per ``index.interval.bytes`` of log.

    Example::

        >>> import os, tempfile
        >>> tmpdir = tempfile.TemporaryDirectory()
        >>> idx = OffsetIndex(os.path.join(tmpdir.name, "00000000000000000100.index"), 100)
        >>> idx.append(105, 4096); idx.append(110, 8192)
        >>> idx.lookup(107), idx.lookup(110), idx.lookup(101)   # floor entry, else the segment's start
        ((105, 4096), (110, 8192), (100, 0))
        >>> idx.entries, idx.is_valid()
        (2, True)
        >>> idx.close(); tmpdir.cleanup()
    """

    def __cinit__(self, *args, **kwargs):
        self.entry_size = 8

    cdef Py_ssize_t _floor_slot(self, int64_t target_offset) noexcept:
        cdef int64_t rel = target_offset - self.base_offset
        cdef Py_ssize_t lo = 0, hi = self.entries - 1, mid
        if self.entries == 0 or self.map == NULL or rel < load_i32(self.map):
            return -1
        if rel > INT32_MAX:
            return hi
        while lo < hi:   # last slot whose relative offset <= rel
            mid = (lo + hi + 1) >> 1
            if load_i32(self.map + 8 * mid) <= rel:
                lo = mid
            else:
                hi = mid - 1
        return lo

    cdef int64_t floor_position(self, int64_t target_offset) noexcept:
        cdef Py_ssize_t slot = self._floor_slot(target_offset)
        return 0 if slot < 0 else load_i32(self.map + 8 * slot + 4)

    def lookup(self, int64_t target_offset):
        """Largest entry with offset <= target as (offset, position); (base_offset, 0) if none.
        Thread-safe against the writer."""
        self._check_open()
        cdef Py_ssize_t slot = self._floor_slot(target_offset)
        if slot < 0:
            return (self.base_offset, 0)
        return (self.base_offset + load_i32(self.map + 8 * slot), load_i32(self.map + 8 * slot + 4))

    def entry(self, Py_ssize_t i):
        self._check_open()
        if not 0 <= i < self.entries:
            raise IndexError(i)
        return (self.base_offset + load_i32(self.map + 8 * i), load_i32(self.map + 8 * i + 4))

    @property
    def last_offset(self):
        self._check_open()
        return self.base_offset + (load_i32(self.map + 8 * (self.entries - 1)) if self.entries else 0)

    def append(self, int64_t offset, int64_t position):
        """Add an entry; offsets must increase. Writer only."""
        self.append_entry(offset, position)

    cdef int append_entry(self, int64_t offset, int64_t position) except -1:
        self._check_writable()
        cdef int64_t rel = offset - self.base_offset
        if rel < 0 or rel > INT32_MAX or position < 0 or position > INT32_MAX:
            raise ValueError(f"entry ({offset}, {position}) does not fit index {self.path}")
        if self.entries and rel <= load_i32(self.map + 8 * (self.entries - 1)):
            raise ValueError(f"offset {offset} is not larger than the last entry of {self.path}")
        if self.full():
            raise ValueError(f"index {self.path} is full")
        self._back(self.entries + 1)
        cdef unsigned char* p = self.map + 8 * self.entries
        store_be32(p, <uint32_t>rel)
        store_be32(p + 4, <uint32_t>position)
        self.entries += 1
        return 0

    def truncate_to(self, int64_t offset):
        """Remove entries with offset >= ``offset``. Writer only."""
        self._check_open()
        cdef Py_ssize_t slot = self._floor_slot(offset - 1) if offset > self.base_offset else -1
        self.entries = slot + 1

    def is_valid(self):
        """Relative offsets strictly increase and positions never decrease."""
        self._check_open()
        cdef Py_ssize_t i
        cdef int32_t prev_off = -1, prev_pos = 0, o, p
        for i in range(self.entries):
            o = load_i32(self.map + 8 * i)
            p = load_i32(self.map + 8 * i + 4)
            if o <= prev_off or p < prev_pos:
                return False
            prev_off, prev_pos = o, p
        return True


cdef class TimeIndex(_MmapIndex):
    """Timestamp -> offset: the largest timestamp seen so far when each offset index entry was
    written, so ListOffsets by timestamp can start scanning near the answer.

    Example::

        >>> import os, tempfile
        >>> tmpdir = tempfile.TemporaryDirectory()
        >>> ti = TimeIndex(os.path.join(tmpdir.name, "00000000000000000100.timeindex"), 100)
        >>> ti.append(1700000000000, 105); ti.append(1700000000000, 107)   # not newer: no entry
        >>> ti.lookup(1700000000500), ti.lookup(1600000000000), ti.entries
        ((1700000000000, 105), (-1, 100), 1)
        >>> ti.close(); tmpdir.cleanup()
    """

    def __cinit__(self, *args, **kwargs):
        self.entry_size = 12

    cdef Py_ssize_t _floor_slot(self, int64_t target_ts) noexcept:
        cdef Py_ssize_t lo = 0, hi = self.entries - 1, mid
        if self.entries == 0 or self.map == NULL or target_ts < load_i64(self.map):
            return -1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if load_i64(self.map + 12 * mid) <= target_ts:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def lookup(self, int64_t target_timestamp):
        """Largest entry with timestamp <= target as (timestamp, offset); (-1, base_offset) if none.
        Thread-safe against the writer."""
        self._check_open()
        cdef Py_ssize_t slot = self._floor_slot(target_timestamp)
        if slot < 0:
            return (-1, self.base_offset)
        return (load_i64(self.map + 12 * slot), self.base_offset + load_i32(self.map + 12 * slot + 8))

    def entry(self, Py_ssize_t i):
        self._check_open()
        if not 0 <= i < self.entries:
            raise IndexError(i)
        return (load_i64(self.map + 12 * i), self.base_offset + load_i32(self.map + 12 * i + 8))

    @property
    def last_entry(self):
        self._check_open()
        if self.entries == 0:
            return (-1, self.base_offset)
        return self.entry(self.entries - 1)

    def append(self, int64_t timestamp, int64_t offset):
        """Add (timestamp, offset) if timestamp is larger than the last one (else a no-op); offsets
        must not go back. Writer only."""
        self.append_entry(timestamp, offset)

    cdef int append_entry(self, int64_t timestamp, int64_t offset) except -1:
        self._check_writable()
        cdef int64_t rel = offset - self.base_offset
        cdef unsigned char* last
        if rel < 0 or rel > INT32_MAX:
            raise ValueError(f"offset {offset} does not fit time index {self.path}")
        if self.entries:
            last = self.map + 12 * (self.entries - 1)
            if timestamp <= load_i64(last):
                return 0
            if rel < load_i32(last + 8):
                raise ValueError(f"offset {offset} goes back in time index {self.path}")
        if self.full():
            raise ValueError(f"time index {self.path} is full")
        self._back(self.entries + 1)
        cdef unsigned char* p = self.map + 12 * self.entries
        store_be64(p, <uint64_t>timestamp)
        store_be32(p + 8, <uint32_t>rel)
        self.entries += 1
        return 0

    def truncate_to(self, int64_t offset):
        """Remove entries with offset >= ``offset``. Writer only."""
        self._check_open()
        cdef int64_t rel = offset - self.base_offset
        cdef Py_ssize_t n = self.entries
        while n > 0 and load_i32(self.map + 12 * (n - 1) + 8) >= rel:
            n -= 1
        self.entries = n

    def is_valid(self):
        """Timestamps strictly increase and offsets never decrease."""
        self._check_open()
        cdef Py_ssize_t i
        cdef int64_t prev_ts = -(1 << 62), t
        cdef int32_t prev_off = 0, o
        for i in range(self.entries):
            t = load_i64(self.map + 12 * i)
            o = load_i32(self.map + 12 * i + 8)
            if t <= prev_ts or o < prev_off:
                return False
            prev_ts, prev_off = t, o
        return True
