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
#
# The produce path is one call into this module per Log.append in the common case
# (SegmentFile.append_checked: validation, offset stamping, the fits-in-this-segment checks, the
# write and the sparse index bookkeeping in C; from 256 KiB the CRC/record walk runs on a helper
# thread, segment_helper.h, while the pwrite runs, and from 8 KiB too when set_hot_posting(True)
# lets that helper spin);
# anything else takes append_flags + append_batches after records.validate. The Log's state
# around that call (offsets, flush counters) lives in _core.append_state. Issue 3: at 16 KiB
# batches every 100 ns of per-append overhead is ~2.5% of os.write's time.
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.errno cimport errno, EINTR
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, INT32_MAX, INT64_MIN, INT64_MAX

from fastkafka._core.byteorder cimport load_i32, load_i64, store_be32, store_be64
from posix.fcntl cimport open as c_open, O_RDWR, O_RDONLY, O_CREAT
from posix.unistd cimport close as c_close, pread, pwrite, fdatasync, ftruncate, lseek
cdef extern from "<unistd.h>":
    enum: SEEK_END

from fastkafka._core.records_layout cimport (ATTRIBUTES_OFFSET, BATCH_OK, COMPRESSION_MASK,
                                             LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET,
                                             NOGIL_THRESHOLD, PARTITION_LEADER_EPOCH_OFFSET,
                                             PRODUCER_ID_OFFSET, RECORD_COUNT_OFFSET, RECORDS_OFFSET,
                                             batch_last_offset, batch_size_at, check_batch, walk_records)
from fastkafka._core.wall_clock cimport wall_clock_now_ms

import os

cdef extern from "<fcntl.h>":
    int O_CLOEXEC

cdef extern from "segment_helper.h" nogil:
    ctypedef int (*fk_check_fn)(const unsigned char*, Py_ssize_t) noexcept nogil
    int fk_helper_post(fk_check_fn fn, const unsigned char* p, Py_ssize_t n)
    int fk_helper_post_hot(fk_check_fn fn, const unsigned char* p, Py_ssize_t n)
    void fk_helper_note_cold()
    int fk_helper_collect()
    ctypedef struct fk_helper_t:
        int hot
        int hot_off
        long long n_posts, n_hot_posts, n_helper_ran, n_kicks, n_waited
    fk_helper_t fk_h

cdef enum:
    GIL_RELEASE_BYTES = 16384   # below this a write is faster than releasing and retaking the GIL
    HEADER_NEEDED = 43          # through maxTimestamp
    SCAN_CHUNK = 4096 + 64      # one pread usually covers an index interval's worth of headers
    # append_checked: from this size the CRC/record walk runs on the helper thread (a second
    # core) while the pwrite runs (issue 3: ~25-40 us/MiB of validation otherwise adds to
    # ~126 us/MiB of write); below it the hand-off (a futex wake, a few us) costs more than the
    # overlap saves.
    PARALLEL_CHECK_BYTES = 262144
    # With set_hot_posting(True) (off by default), from this size the walk also goes to the
    # helper while it is awake (spinning after a recent task): a post is then one atomic store,
    # and a 16 KiB walk hides under its pwrite. Below it the walk is too short for a hand-off.
    HOT_CHECK_BYTES = 8192

# append_flags bits: what Log.append's policy must look at more closely (0 in the common case)
HAS_PRODUCER_ID = 1     # a batch carries a producer id: the producer state checks its sequence
OVERSIZE_BATCH = 2      # a batch is larger than the max.message.bytes given


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


# The produce-path validation of append_checked: the same checks, in the same order, as
# records.validate(buf, records=True) -- check_batch and walk_records are records_layout.pxd's.
# Only a yes/no: on "no" the caller runs records.validate itself for the error, so the message
# and code come from one place.
cdef int _batches_valid(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t err_pos = 0
    cdef int64_t size = 0
    while pos < n:
        if check_batch(p, pos, n, True, &size) != BATCH_OK:
            return False
        if (p[pos + ATTRIBUTES_OFFSET + 1] & COMPRESSION_MASK) == 0 and walk_records(p + pos, size, &err_pos) != 0:
            return False
        pos += size
    return True


cdef void _stamp(unsigned char* p, Py_ssize_t n, int64_t next_offset, int32_t leader_epoch) noexcept nogil:
    # p[0:n] frames as whole batches (checked by the caller): baseOffset and partitionLeaderEpoch,
    # both outside the CRC
    cdef Py_ssize_t pos = 0
    cdef unsigned char* b
    while pos < n:
        b = p + pos
        store_be64(b, <uint64_t>next_offset)
        store_be32(b + PARTITION_LEADER_EPOCH_OFFSET, <uint32_t>leader_epoch)
        next_offset = batch_last_offset(b) + 1
        pos += batch_size_at(p, pos)


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
        return self._append(&buf[0] if buf.shape[0] else NULL, buf.shape[0])

    def append_batches(self, unsigned char[::1] buf not None, IndexCursor cursor not None,
                       OffsetIndex offset_index not None, TimeIndex time_index not None,
                       int64_t next_offset, int32_t leader_epoch, int64_t max_size):
        """The produce path's write in one call: stamp validated v2 batches with consecutive
        offsets from ``next_offset`` and ``leader_epoch`` (in place, outside the CRC), write them
        at the end and add their sparse index entries (see IndexCursor). Returns the next offset.

        Returns -1, writing nothing, when a non-empty file cannot take them: the file would pass
        ``max_size`` bytes, an offset would not fit the index's 32-bit relative offsets, or an index
        is full — the caller rolls a new segment and appends there. Not thread-safe (the owning
        Log's lock).

        Example::

            >>> f.append_batches(buf, IndexCursor(4096), oi, ti, 0, -1, 1 << 30)  # doctest: +SKIP
            3
        """
        cdef Py_ssize_t n = buf.shape[0], pos = 0
        cdef int64_t size, nxt = next_offset
        cdef unsigned char* b
        if n == 0:
            return next_offset
        while n - pos >= RECORDS_OFFSET:
            size = batch_size_at(&buf[0], pos)
            if size < RECORDS_OFFSET or size > n - pos:
                break
            b = &buf[pos]
            store_be64(b, <uint64_t>nxt)
            store_be32(b + PARTITION_LEADER_EPOCH_OFFSET, <uint32_t>leader_epoch)
            nxt = batch_last_offset(b) + 1
            pos += size
        if pos != n:
            raise ValueError(f"append_batches: bytes from position {pos} do not frame as a batch")
        if self.size and (self.size + n > max_size or cursor.full
                          or nxt - 1 - offset_index.base_offset > INT32_MAX):
            return -1
        cdef int64_t at = self._append(&buf[0], n)
        cursor.index_run(&buf[0], n, at, offset_index, time_index)
        return nxt

    def append_checked(self, unsigned char[::1] buf not None, IndexCursor cursor not None,
                       OffsetIndex offset_index not None, TimeIndex time_index not None,
                       int64_t next_offset, int32_t leader_epoch, int64_t max_size,
                       int64_t max_batch_bytes):
        """Log.append's common case in one call: validate v2 batches (as
        ``records.validate(buf, records=True)``), stamp offsets and epoch, write them at the end and
        index them, like ``append_batches``. Returns the next offset; the record count is left in
        ``appended_records``.

        Returns -1 with the file, its size and the indexes unchanged -- the caller then takes the
        general path (validate, policy checks, roll, ``append_batches``), which also raises the
        exact error -- when: the bytes do not validate; a batch carries a producer id or is over
        ``max_batch_bytes``; the set is over ``max_size`` or does not fit this non-empty segment
        (bytes, 32-bit relative offsets, full index). Nothing is stamped then, except when
        validation failed on a buffer the helper thread may take (PARALLEL_CHECK_BYTES or more;
        HOT_CHECK_BYTES with set_hot_posting(True)): there the offsets are stamped
        (outside the CRC) first, and when the helper thread takes the CRC/record walk
        (segment_helper.h, GIL released) the pwrite runs meanwhile past the published ``size``
        -- which readers never pass -- and a failed walk truncates the file back. Not
        thread-safe (the Log's lock).

        Example::

            >>> f.append_checked(buf, IndexCursor(4096), oi, ti, 0, -1, 1 << 30, 1 << 20)  # doctest: +SKIP
            3
        """
        if buf.shape[0] == 0:
            return -1
        return self.append_checked_ptr(&buf[0], buf.shape[0], cursor, offset_index, time_index,
                                       next_offset, leader_epoch, max_size, max_batch_bytes)

    cdef int64_t append_checked_ptr(self, unsigned char* p, Py_ssize_t n, IndexCursor cursor,
                                    OffsetIndex offset_index, TimeIndex time_index,
                                    int64_t next_offset, int32_t leader_epoch, int64_t max_size,
                                    int64_t max_batch_bytes) except -2:
        self._check_open()
        cdef Py_ssize_t pos = 0
        cdef int64_t size = 0, nxt = next_offset, records = 0, at = self.size
        cdef int fd = self.fd
        cdef const unsigned char* b
        cdef bint ok, posted = False
        cdef ssize_t rc = 0
        if n <= 0:
            return -1
        # headers only (no CRC): framing, the policy's exceptions, the offsets this set takes
        while pos < n:
            if check_batch(p, pos, n, False, &size) != BATCH_OK:
                return -1
            b = p + pos
            if load_i64(b + PRODUCER_ID_OFFSET) >= 0 or size > max_batch_bytes:
                return -1
            records += load_i32(b + RECORD_COUNT_OFFSET)
            nxt += <int64_t>load_i32(b + LAST_OFFSET_DELTA_OFFSET) + 1
            pos += size
        if n > max_size or (at and (at + n > max_size or cursor.full
                                    or nxt - 1 - offset_index.base_offset > INT32_MAX)):
            return -1
        # below the helper's sizes validate, then stamp and write; the helper takes sets from
        # PARALLEL_CHECK_BYTES, or from HOT_CHECK_BYTES when set_hot_posting(True) let it spin
        if n < (PARALLEL_CHECK_BYTES if fk_h.hot_off else HOT_CHECK_BYTES):
            if n >= NOGIL_THRESHOLD:
                with nogil:
                    ok = _batches_valid(p, n)
                    if ok:
                        _stamp(p, n, next_offset, leader_epoch)
                        rc = _write_all(fd, p, n, at)
            else:
                ok = _batches_valid(p, n)
                if ok:
                    _stamp(p, n, next_offset, leader_epoch)
                    rc = _write_all(fd, p, n, at)
        else:
            # stamped before the walk may start on the helper (the stamped fields are outside
            # the CRC; the helper only reads)
            _stamp(p, n, next_offset, leader_epoch)
            with nogil:
                if n >= PARALLEL_CHECK_BYTES:
                    posted = fk_helper_post(_batches_valid, p, n)
                else:
                    posted = fk_helper_post_hot(_batches_valid, p, n)
                    if not posted:
                        fk_helper_note_cold()
                if posted:
                    rc = _write_all(fd, p, n, at)
                    ok = fk_helper_collect()
                else:                   # helper asleep or busy with another partition's append
                    ok = _batches_valid(p, n)
                    if ok:
                        rc = _write_all(fd, p, n, at)
            if not ok and posted:
                # the bytes past `at` were never published; cut them so no reader, recovery or
                # later append sees them (a failed write's partial bytes are cut the same way)
                if ftruncate(fd, at) < 0:
                    raise OSError(errno, os.strerror(errno), self.path)
        if not ok:
            return -1
        if rc < 0:
            # like _append: size stays at the last whole append, the next append overwrites
            raise OSError(-rc, os.strerror(-rc), self.path)
        self.size = at + n
        self.appended_records = records
        cursor.index_run(p, n, at, offset_index, time_index)
        return nxt

    cdef int64_t _append(self, const unsigned char* p, size_t n) except -1:
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

        >>> cur = IndexCursor(4096)
        >>> cur.index_batches(segment_bytes, oi, ti)    # a rebuild   # doctest: +SKIP
        >>> cur.max_timestamp, cur.full                               # doctest: +SKIP
        (1700000000999, False)
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
        # p[0:n] is whole, validated v2 batches stored at `position`; the bound checks only keep a
        # caller's mistake from reading past n.
        cdef int64_t pos = 0, size, last, ts
        cdef const unsigned char* b
        while n - pos >= RECORDS_OFFSET:
            size = batch_size_at(p, pos)
            if size < RECORDS_OFFSET or size > n - pos:
                break
            b = p + pos
            last = batch_last_offset(b)
            ts = load_i64(b + MAX_TIMESTAMP_OFFSET)
            if ts > self.max_timestamp:
                self.max_timestamp = ts
                self.offset_of_max_timestamp = last
            if self.bytes_since_last_index_entry > self.index_interval and not oi.full() and not ti.full():
                oi.append_entry(last, position + pos)
                ti.append_entry(self.max_timestamp, self.offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += size
            pos += size
        self.full = oi.full() or ti.full()
        return 0

    def index_batches(self, const unsigned char[::1] buf not None, OffsetIndex offset_index not None,
                      TimeIndex time_index not None, int64_t position=0):
        """Index the whole v2 batches of ``buf`` (stored from ``position`` of the segment): an
        index rebuild walks the valid prefix of the file through this. Writer only."""
        if buf.shape[0]:
            self.index_run(&buf[0], buf.shape[0], position, offset_index, time_index)


def helper_stats():
    """The append helper thread's counters (segment_helper.h), for tests and benchmarks: tasks
    posted (large, with a wake-up) and posted hot (small, to a spinning helper), tasks the
    helper ran (the rest were claimed back by their caller), of those the ones whose caller
    finished its write first and waited (waited), wake-ups of a sleeping helper for a burst
    (kicks), and whether it is awake right now (``hot``).

    Example::

        >>> sorted(helper_stats())
        ['helper_ran', 'hot', 'kicks', 'posts', 'posts_hot', 'waited']
    """
    return {"posts": fk_h.n_posts, "posts_hot": fk_h.n_hot_posts, "helper_ran": fk_h.n_helper_ran,
            "kicks": fk_h.n_kicks, "waited": fk_h.n_waited, "hot": bool(fk_h.hot)}


def set_hot_posting(bint on):
    """Whether sets below PARALLEL_CHECK_BYTES may go to an awake (spinning) helper; off (the
    default) they are walked inline and the helper never spins.

    Off by default because end to end it bought nothing measurable: 16 KiB appends measured
    0.71-0.85x os.write with it and 0.79-0.83x inline (medians 0.81x both, bench_log.py append,
    9 runs each), while its spin (up to 20 us after each small task) takes CPU a 2-core broker's
    network threads need. Kept for benchmarks and for machines with cores to spare.

    Example::

        >>> set_hot_posting(False)
    """
    fk_h.hot_off = not on


def append_flags(const unsigned char[::1] buf not None, int64_t max_batch_bytes):
    """One walk of the headers of validated v2 batches: HAS_PRODUCER_ID | OVERSIZE_BATCH bits for
    what Log.append's policy must look at more closely; 0 for plain batches within the limit.

    Example::

        >>> from fastkafka.records import build_batch
        >>> append_flags(build_batch([(b"k", b"v", [], 1)], producer_id=7), 1 << 20) == HAS_PRODUCER_ID
        True
    """
    cdef const unsigned char* p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t n = buf.shape[0], pos = 0
    cdef int64_t size
    cdef int flags = 0
    while n - pos >= RECORDS_OFFSET:
        size = batch_size_at(p, pos)
        if size < RECORDS_OFFSET or size > n - pos:
            break
        if load_i64(p + pos + PRODUCER_ID_OFFSET) >= 0:
            flags |= HAS_PRODUCER_ID
        if size > max_batch_bytes:
            flags |= OVERSIZE_BATCH
        pos += size
    return flags
