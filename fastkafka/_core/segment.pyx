# A segment's .log file: record batches appended back to back, exactly as produced.
#
# Byte layout of each batch header this module reads (big-endian, Kafka's RecordBatch v2):
#   0  baseOffset int64     8 batchLength int32 (bytes after this field; batch size = 12 + batchLength)
#   12 partitionLeaderEpoch int32   16 magic int8   17 crc uint32   21 attributes int16
#   23 lastOffsetDelta int32        27 firstTimestamp int64          35 maxTimestamp int64
#   43 producerId int64  51 producerEpoch int16  53 baseSequence int32  57 records count int32  (61 bytes)
# Legacy entries (magic 0/1) share the first 12 bytes (offset, size); their offset is the last one.
#
# Mechanism only: append at the end (pwrite, no Python-side copy, GIL released above a few KiB),
# fdatasync when told, truncate, and the forward scan from an index position to the batch
# containing an offset. When to flush, roll or truncate is decided by fastkafka.log.
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.errno cimport errno, EINTR
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, INT64_MIN, INT64_MAX

from fastkafka._core.byteorder cimport load_i32, load_i64
from posix.fcntl cimport open as c_open, O_RDWR, O_RDONLY, O_CREAT
from posix.unistd cimport close as c_close, pread, pwrite, fdatasync, ftruncate, lseek
cdef extern from "<unistd.h>":
    enum: SEEK_END

from fastkafka._core.index cimport OffsetIndex

import os

cdef extern from "<fcntl.h>":
    int O_CLOEXEC

cdef enum:
    GIL_RELEASE_BYTES = 16384   # below this a write is faster than releasing and retaking the GIL
    HEADER_NEEDED = 43          # through maxTimestamp
    SCAN_CHUNK = 4096 + 64      # one pread usually covers an index interval's worth of headers






cdef ssize_t _write_all(int fd, const unsigned char* p, size_t n, int64_t pos) noexcept nogil:
    """pwrite all n bytes at pos; 0 on success, else -errno."""
    cdef ssize_t w
    while n > 0:
        w = pwrite(fd, p, n, pos)
        if w < 0:
            if errno == EINTR:
                continue
            return -errno
        p += w
        n -= w
        pos += w
    return 0


cdef class SegmentFile:
    """An open segment ``.log`` file; appends go to its end.

    Not thread-safe for writers (the owning Log serializes appends under its lock); ``read``,
    ``find_batch`` and ``locate`` use pread and may run concurrently with an append, seeing only
    bytes below the ``size`` they were given. The descriptor closes on ``close()`` or when the
    object is collected, so a reader holding it keeps a valid fd even after the segment is deleted.

    Example::

        >>> f = SegmentFile("/tmp/00000000000000000000.log", create=True)  # doctest: +SKIP
        >>> f.append(batch_bytes)   # -> position the batch was written at  # doctest: +SKIP
        0
    """

    def __cinit__(self):
        self.fd = -1

    def __init__(self, path, bint writable=True, bint create=False):
        cdef bytes p = os.fsencode(path)
        cdef int flags = (O_RDWR if writable else O_RDONLY) | O_CLOEXEC
        if create:
            flags |= O_CREAT
        self.fd = c_open(p, flags, 0o644)
        if self.fd < 0:
            raise OSError(errno, os.strerror(errno), path)
        self.path = os.fsdecode(path)
        self.writable = writable
        self.size = lseek(self.fd, 0, SEEK_END)

    def __dealloc__(self):
        if self.fd >= 0:
            c_close(self.fd)
            self.fd = -1

    cdef int _check_open(self) except -1:
        if self.fd < 0:
            raise ValueError(f"segment file {self.path} is closed")
        return 0

    def fileno(self):
        self._check_open()
        return self.fd

    @property
    def closed(self):
        return self.fd < 0

    def append(self, const unsigned char[::1] buf not None):
        """Write ``buf`` at the end of the file; return the position it starts at. Not thread-safe."""
        self._check_open()
        cdef size_t n = buf.shape[0]
        cdef int64_t pos = self.size
        cdef ssize_t rc
        if n == 0:
            return pos
        if n >= GIL_RELEASE_BYTES:
            with nogil:
                rc = _write_all(self.fd, &buf[0], n, pos)
        else:
            rc = _write_all(self.fd, &buf[0], n, pos)
        if rc < 0:
            # A partial write may have landed; keep size at the last whole append so the next
            # append overwrites it (recovery would truncate it anyway).
            raise OSError(-rc, os.strerror(-rc), self.path)
        self.size = pos + n
        return pos

    def flush(self):
        """fdatasync the file (GIL released: it may wait on the disk). Not thread-safe with close."""
        self._check_open()
        cdef int rc
        with nogil:
            rc = fdatasync(self.fd)
        if rc < 0:
            raise OSError(errno, os.strerror(errno), self.path)
        self.sync_count += 1

    def set_size(self, int64_t size):
        """Set where the next append goes without touching the file: a handle opened while another
        handle was writing learns the writer's end from the LogSegment. Writer only."""
        if size < 0:
            raise ValueError("negative size")
        self.size = size

    def truncate(self, int64_t size):
        """Cut the file to ``size`` bytes (no-op if already smaller). Not thread-safe."""
        self._check_open()
        if size < 0:
            raise ValueError("negative size")
        if size >= self.size:
            return
        if ftruncate(self.fd, size) < 0:
            raise OSError(errno, os.strerror(errno), self.path)
        self.size = size

    def read(self, int64_t position, Py_ssize_t n):
        """Up to ``n`` bytes from ``position`` as bytes (tools and the cleaner, not the fetch path)."""
        self._check_open()
        if n < 0 or position < 0:
            raise ValueError("negative position or length")
        cdef bytes out = PyBytes_FromStringAndSize(NULL, n)
        cdef char* p = PyBytes_AS_STRING(out)
        cdef ssize_t got = 0, r
        with nogil:
            while got < n:
                r = pread(self.fd, p + got, n - got, position + got)
                if r < 0 and errno == EINTR:
                    continue
                if r <= 0:
                    break
                got += r
        if got < 0:
            raise OSError(errno, os.strerror(errno), self.path)
        return out if got == n else out[:got]

    cdef int scan(self, int64_t start, int64_t end, int64_t target_offset, int64_t target_ts,
                  BatchPos* out) except -1:
        cdef unsigned char chunk[SCAN_CHUNK]
        cdef int64_t chunk_pos = -1, chunk_len = 0, pos = start, size, last
        cdef ssize_t r
        cdef const unsigned char* h
        cdef int32_t length
        self._check_open()
        while pos + 12 <= end:
            if chunk_pos < 0 or pos + HEADER_NEEDED > chunk_pos + chunk_len:
                r = pread(self.fd, chunk, SCAN_CHUNK, pos)
                if r < 0:
                    raise OSError(errno, os.strerror(errno), self.path)
                chunk_pos, chunk_len = pos, r
                if r < 12:
                    return 0
            h = chunk + (pos - chunk_pos)
            length = load_i32(h + 8)
            if length < 0:
                return 0
            size = 12 + <int64_t>length
            if pos + size > end:
                return 0               # a batch cut by `end` (torn, or past a reader's bound)
            if chunk_len - (pos - chunk_pos) >= HEADER_NEEDED and h[16] == 2:
                last = load_i64(h) + load_i32(h + 23)
                out.max_timestamp = load_i64(h + 35)
                out.base_offset = load_i64(h)
            else:
                last = load_i64(h)            # legacy wrapper: its offset is the last one
                out.max_timestamp = -1
                out.base_offset = last
            if last >= target_offset and out.max_timestamp >= target_ts:
                out.position = pos
                out.last_offset = last
                out.size = size
                return 1
            pos += size
        return 0

    def find_batch(self, int64_t target_offset, int64_t start=0, int64_t end=-1,
                   int64_t target_timestamp=INT64_MIN):
        """First batch in [start, end) with last offset >= target_offset and max timestamp >=
        target_timestamp, as (position, base_offset, last_offset, max_timestamp, size), or None.

        Thread-safe against a concurrent append when ``end`` is a size read before the call.
        """
        cdef BatchPos b
        if end < 0:
            end = self.size
        if self.scan(start, end, target_offset, target_timestamp, &b):
            return (b.position, b.base_offset, b.last_offset, b.max_timestamp, b.size)
        return None

    def locate(self, OffsetIndex index not None, int64_t target_offset, int64_t end):
        """Floor-search ``index`` for ``target_offset`` then scan forward: the batch containing
        it, like ``find_batch``, in one call (the fetch path's lookup)."""
        cdef BatchPos b
        cdef int64_t start = index.floor_position(target_offset)
        if self.scan(start, end, target_offset, INT64_MIN, &b):
            return (b.position, b.base_offset, b.last_offset, b.max_timestamp, b.size)
        return None

    def region(self, OffsetIndex index not None, int64_t target_offset, int64_t max_bytes, int64_t end,
               bint min_one_message=True):
        """The fetch path in one call: (position, length) of the bytes to send for a read from the
        batch containing ``target_offset`` — at most ``max_bytes`` (may end inside a batch) but the
        whole first batch when ``min_one_message`` (KIP-74) — bounded by ``end``; None if no batch
        at or after the offset lies below ``end``. Thread-safe against an append (see find_batch)."""
        cdef BatchPos b
        cdef int64_t length
        if not self.scan(index.floor_position(target_offset), end, target_offset, INT64_MIN, &b):
            return None
        length = end - b.position
        if max_bytes < length:
            length = b.size if min_one_message and max_bytes < b.size else max_bytes
        return (b.position, length)

    def close(self):
        """Close the descriptor (idempotent). Not thread-safe with other calls on this object."""
        if self.fd >= 0:
            c_close(self.fd)
            self.fd = -1
