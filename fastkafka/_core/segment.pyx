# A segment's .log file: record batches appended back to back, exactly as produced (byte layout:
# records_layout.pxd; legacy entries, magic 0/1, share the first 12 bytes -- offset, size -- and
# their offset is the last one).
#
# Mechanism only: write at the end (pwrite, no Python-side copy, GIL released above a few KiB),
# fdatasync when told, truncate, the forward scan from an index position to the batch containing
# an offset, and the sparse index bookkeeping of written batches (IndexCursor). The append path
# itself -- one walk, stamping, the write, the index -- is _core.appender's; when to flush, roll
# or truncate is decided by fastkafka.log.
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.errno cimport errno, EINTR
from libc.stdint cimport int32_t, int64_t, INT64_MIN

from fastkafka._core.byteorder cimport load_i32, load_i64
from posix.fcntl cimport open as c_open, O_RDWR, O_RDONLY, O_CREAT
from posix.unistd cimport close as c_close, pread, pwrite, fdatasync, ftruncate, lseek
cdef extern from "<unistd.h>":
    enum: SEEK_END

from fastkafka._core.records_layout cimport (
    BATCH_OVERHEAD, BatchCursor, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2, PRODUCER_ID_OFFSET,
    batch_base_offset, batch_last_offset, batch_max_timestamp, cursor_batch, cursor_init, cursor_next)
from fastkafka._core.wall_clock cimport wall_clock_now_ms

import os

cdef extern from "<fcntl.h>":
    int O_CLOEXEC

cdef enum:
    GIL_RELEASE_BYTES = 16384   # below this a write is faster than releasing and retaking the GIL
    HEADER_NEEDED = PRODUCER_ID_OFFSET   # a scan reads through maxTimestamp
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


def wall_clock_ms():
    """Milliseconds since the epoch (CLOCK_REALTIME), like ``time.time_ns() // 1_000_000`` but
    without the Python-level frame: the log's default clock, read once per append."""
    return wall_clock_now_ms()


cdef class SegmentFile:
    """An open segment ``.log`` file; appends go to its end.

    Not thread-safe for writers (the owning Log serializes appends under its lock); ``read``,
    ``find_batch`` and ``locate`` use pread and may run concurrently with an append, seeing only
    bytes below the ``size`` they were given. The descriptor closes on ``close()`` or when the
    object is collected, so a reader holding it keeps a valid fd even after the segment is deleted.

    Example::

        >>> import os, tempfile
        >>> from fastkafka.records import build_batch
        >>> tmpdir = tempfile.TemporaryDirectory()
        >>> f = SegmentFile(os.path.join(tmpdir.name, "00000000000000000000.log"), create=True)
        >>> f.append(build_batch([(b"k", b"v", [], 1000)]))        # the position it was written at
        0
        >>> f.append(build_batch([(b"k", b"w", [], 2000)], base_offset=1)), f.size
        (70, 140)
        >>> f.find_batch(1)      # (position, base_offset, last_offset, max_timestamp, size)
        (70, 1, 1, 2000, 70)
        >>> f.read(70, 140) == build_batch([(b"k", b"w", [], 2000)], base_offset=1)
        True
        >>> f.close(); tmpdir.cleanup()
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
        return self.write_end(&buf[0] if buf.shape[0] else NULL, buf.shape[0])

    cdef int64_t write_end(self, const unsigned char* p, size_t n) except -1:
        self._check_open()
        cdef int64_t pos = self.size
        cdef ssize_t rc
        if n == 0:
            return pos
        if n >= GIL_RELEASE_BYTES:
            with nogil:
                rc = _write_all(self.fd, p, n, pos)
        else:
            rc = _write_all(self.fd, p, n, pos)
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
        cdef int fd = self.fd, err = 0
        with nogil:
            while got < n:
                r = pread(fd, p + got, n - got, position + got)
                if r < 0:
                    if errno == EINTR:
                        continue
                    err = errno     # before anything else can overwrite it
                    break
                if r == 0:
                    break           # end of file: a short read
                got += r
        if err:
            raise OSError(err, os.strerror(err), self.path)
        return out if got == n else out[:got]

    cdef int scan(self, int64_t start, int64_t end, int64_t target_offset, int64_t target_ts,
                  BatchPos* out) except -1:
        cdef unsigned char chunk[SCAN_CHUNK]
        cdef int64_t chunk_pos = -1, chunk_len = 0, pos = start, size, last
        cdef ssize_t r
        cdef const unsigned char* h
        cdef int32_t length
        self._check_open()
        while pos + LOG_OVERHEAD <= end:
            if chunk_pos < 0 or pos + HEADER_NEEDED > chunk_pos + chunk_len:
                r = pread(self.fd, chunk, SCAN_CHUNK, pos)
                if r < 0:
                    raise OSError(errno, os.strerror(errno), self.path)
                chunk_pos, chunk_len = pos, r
                if r < LOG_OVERHEAD:
                    return 0
            h = chunk + (pos - chunk_pos)
            length = load_i32(h + LENGTH_OFFSET)
            if length < 0:
                return 0
            size = LOG_OVERHEAD + <int64_t>length
            if pos + size > end:
                return 0               # a batch cut by `end` (torn, or past a reader's bound)
            if chunk_len - (pos - chunk_pos) >= HEADER_NEEDED and h[MAGIC_OFFSET] == MAGIC_V2:
                last = batch_last_offset(h)
                out.max_timestamp = batch_max_timestamp(h)
                out.base_offset = batch_base_offset(h)
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


cdef class IndexCursor:
    """Where a segment's sparse indexes stand between appends: the bytes written since the last
    offset index entry, and the largest batch timestamp so far with its (last) offset.

    A batch that starts more than ``index_interval`` bytes after the last entry gets one: its last
    offset and position in the offset index, the largest timestamp so far in the time index (a
    no-op there unless it grew), so ListOffsets by timestamp starts scanning near its answer.
    Entries stop when either index is full, and ``full`` turns on: the owning Log then rolls.
    Writer only (the Log's lock); the attributes are public so recovery and truncation can set
    them.

    Example::

        >>> import os, tempfile
        >>> from fastkafka._core.index import OffsetIndex, TimeIndex
        >>> from fastkafka.records import build_batch
        >>> tmpdir = tempfile.TemporaryDirectory()
        >>> oi = OffsetIndex(os.path.join(tmpdir.name, "00000000000000000000.index"), 0)
        >>> ti = TimeIndex(os.path.join(tmpdir.name, "00000000000000000000.timeindex"), 0)
        >>> segment = b"".join(build_batch([(b"k", b"v", [], ts)], base_offset=o)
        ...                    for o, ts in enumerate([1000, 3000, 2000, 4000]))   # 70-byte batches
        >>> cur = IndexCursor(100)                  # an entry once 100 bytes went unindexed
        >>> cur.index_batches(segment, oi, ti)      # a rebuild
        >>> [oi.entry(i) for i in range(oi.entries)], [ti.entry(i) for i in range(ti.entries)]
        ([(2, 140)], [(3000, 1)])
        >>> cur.max_timestamp, cur.offset_of_max_timestamp, cur.full
        (4000, 3, False)
        >>> oi.close(); ti.close(); tmpdir.cleanup()
    """

    def __init__(self, int64_t index_interval, int64_t max_timestamp=-1,
                 int64_t offset_of_max_timestamp=-1, int64_t bytes_since_last_index_entry=0):
        self.index_interval = index_interval
        self.max_timestamp = max_timestamp
        self.offset_of_max_timestamp = offset_of_max_timestamp
        self.bytes_since_last_index_entry = bytes_since_last_index_entry
        self.full = False

    cdef int index_run(self, const unsigned char* p, int64_t n, int64_t position,
                       OffsetIndex oi, TimeIndex ti) except -1:
        # p[0:n] is whole, validated v2 batches stored at `position` (framed again: a caller's
        # mistake stops the walk instead of reading past n)
        cdef BatchCursor c
        cdef int64_t last, ts
        cdef const unsigned char* b
        cursor_init(&c, p, n)
        while cursor_next(&c, False):
            b = cursor_batch(&c)
            last = batch_last_offset(b)
            ts = batch_max_timestamp(b)
            if ts > self.max_timestamp:
                self.max_timestamp = ts
                self.offset_of_max_timestamp = last
            if self.bytes_since_last_index_entry > self.index_interval and not oi.full() and not ti.full():
                oi.append_entry(last, position + c.pos)
                ti.append_entry(self.max_timestamp, self.offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += c.size
        self.full = oi.full() or ti.full()
        return 0

    cdef int reserve_run(self, int64_t n, OffsetIndex oi, TimeIndex ti) except -1:
        # Before n bytes are written: blocks for as many entries as index_run can add for them
        # (one, then one per index_interval bytes past it, and no more than one per batch), so a
        # full disk refuses the append before its bytes reach the log.
        if self.bytes_since_last_index_entry + n <= self.index_interval:
            return 0          # no entry can come of these bytes (most small appends)
        cdef int64_t most = n // max(self.index_interval + 1, BATCH_OVERHEAD) + 1
        oi.reserve_entries(most)
        ti.reserve_entries(most)
        return 0

    def index_batches(self, const unsigned char[::1] buf not None, OffsetIndex offset_index not None,
                      TimeIndex time_index not None, int64_t position=0):
        """Index the whole v2 batches of ``buf`` (stored from ``position`` of the segment): an
        index rebuild walks the valid prefix of the file through this. Writer only."""
        if buf.shape[0]:
            self.index_run(&buf[0], buf.shape[0], position, offset_index, time_index)
