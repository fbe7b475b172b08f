# Where one partition's log stands between appends, and the plain append as one call.
#
# No byte layout of its own: the batches are written by SegmentFile.append_checked_ptr
# (segment.pyx, RecordBatch v2 as laid out there). What lives here is the Log's per-append
# state as C fields -- next offset, high watermark, unflushed message count and the append time
# of the oldest unflushed one -- and the thresholds the Log's policy sets from its config
# (segment.bytes, segment.ms, max.message.bytes, flush.messages, flush.ms), so the produce
# path's common case (lock, clock, validate + write + index, offsets, flush bookkeeping,
# LogAppendInfo) costs Python one call (issue 3: at 16 KiB batches every 100 ns of per-append
# overhead is ~2.5% of os.write's time).
#
# Mechanism only: fastkafka.log.Log decides whether the one-call path applies (``plain``),
# what the thresholds are, what a flush is (``flush`` callback) and what to do when this path
# declines (None: the general path validates, rolls and raises).
from cpython.buffer cimport PyBUF_WRITABLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.object cimport PyObject, PyTypeObject
from libc.stdint cimport int32_t, int64_t

from fastkafka._core.index cimport OffsetIndex, TimeIndex
from fastkafka._core.segment cimport IndexCursor, SegmentFile
from fastkafka._core.wall_clock cimport wall_clock_now_ms

from fastkafka._core.segment import wall_clock_ms

cdef extern from *:
    """
    /* An instance of a tuple subclass (a NamedTuple) from four ints without a Python-level
     * __new__: what tuple.__new__(cls, (a, b, c, d)) does, minus the argument tuple. */
    static PyObject *fk_tuple4(PyTypeObject *cls, long long a, long long b, long long c, long long d) {
        long long v[4] = {a, b, c, d};
        PyObject *t = cls->tp_alloc(cls, 4);
        int i;
        if (t == NULL)
            return NULL;
        for (i = 0; i < 4; i++) {
            PyObject *x = PyLong_FromLongLong(v[i]);
            if (x == NULL) {
                Py_DECREF(t);
                return NULL;
            }
            PyTuple_SET_ITEM(t, i, x);
        }
        return t;
    }
    """
    object fk_tuple4(PyTypeObject* cls, long long a, long long b, long long c, long long d)


cdef class AppendState:
    """A Log's append-side state, and ``append``: its common case in one call.

    ``append(buf, leader_epoch)`` takes the Log's lock (the ``lock`` given: the same RLock every
    other Log method takes), reads the clock, and -- when ``plain`` is set, the log is not
    ``deleted``, the active segment is not due to roll by age, and ``append_checked`` accepts the
    batches (valid, no producer id, within max.message.bytes, fits the segment) -- writes them,
    advances ``next_offset`` and ``high_watermark``, counts them as unflushed, and returns
    ``info_type(base_offset, last_offset, -1, log_start_offset)``. After releasing the lock it
    calls ``flush()`` when ``flush_messages`` or more are unflushed or the oldest is
    ``flush_ms`` old. Otherwise it returns None having changed nothing (the caller's general
    path). OSError from the write propagates. Thread-safe (the lock); the fields are the
    writer's, read lock-free by readers like the Log's Python attributes were.

    The active segment, its cursor and indexes are cached: re-read when the segment list
    (``segments._snap``) changes, and dropped by ``forget()``, which the Log calls after
    anything else that touches the active segment. Its file handle is not held (the FileCache
    may evict it between appends: holding it would break the descriptor budget): each append
    takes ``segment._file``, through ``segment.writer_file()`` when evicted or when its size is not
    the one last published (another handle wrote).

    Example::

        >>> st = AppendState(lock, segments, LogAppendInfo, wall_clock_ms, flush)  # doctest: +SKIP
        >>> st.append(bytearray(build_batch([(b"k", b"v", [], 1)])), -1)   # doctest: +SKIP
        LogAppendInfo(base_offset=0, last_offset=0, log_append_time=-1, log_start_offset=0)
    """

    cdef public int64_t next_offset
    cdef public int64_t high_watermark
    cdef public int64_t log_start_offset
    cdef public int64_t unflushed_messages
    cdef public int64_t first_unflushed_ms
    cdef public int64_t segment_bytes
    cdef public int64_t segment_ms
    cdef public int64_t max_message_bytes
    cdef public int64_t flush_messages
    cdef public int64_t flush_ms
    cdef public bint plain
    cdef public bint deleted
    cdef object _acquire, _release, _clock, _flush, _segments, _info_type
    cdef bint _c_clock
    cdef object _snap, _seg
    cdef int64_t _published          # the segment's size as last published by this object
    cdef IndexCursor _cursor
    cdef OffsetIndex _oi
    cdef TimeIndex _ti
    cdef int64_t _created_ms

    def __init__(self, lock, segments, type info_type not None, clock, flush):
        if not issubclass(info_type, tuple):
            raise TypeError("info_type must be a tuple subclass (a NamedTuple)")
        self._acquire = lock.acquire
        self._release = lock.release
        self._segments = segments
        self._info_type = info_type
        self._clock = clock
        self._c_clock = clock is wall_clock_ms
        self._flush = flush
        self.plain = False
        self.flush_messages = self.flush_ms = self.segment_ms = (1 << 63) - 1

    def forget(self):
        """Drop the cached active segment objects (the Log rolled, truncated, closed...)."""
        self._snap = self._seg = None
        self._cursor = None
        self._oi = None
        self._ti = None

    cdef int _refresh(self, snap) except -1:
        segs = snap[0]
        seg = segs[len(segs) - 1]          # (no negative indexing: wraparound is off)
        self._cursor = seg._cursor or seg._load_cursor()
        self._oi = seg._offset_index or seg.offset_index()
        self._ti = seg._time_index or seg.time_index()
        self._created_ms = seg.created_ms
        self._seg = seg
        self._snap = snap
        self._published = -1
        return 0

    cpdef bint appended(self, int64_t next_offset, int64_t records, int64_t now):
        """Count an append that ended at ``next_offset`` (the log end and high watermark move
        there) as ``records`` unflushed messages; True when the flush policy is due: at most
        flush.messages messages, or flush.ms of age, are ever left unflushed. Under the lock."""
        self.next_offset = self.high_watermark = next_offset
        if not self.unflushed_messages:
            self.first_unflushed_ms = now
        self.unflushed_messages += records
        return (self.unflushed_messages >= self.flush_messages
                or now - self.first_unflushed_ms >= self.flush_ms)

    def append(self, buf, int32_t leader_epoch=-1):
        """Append ``buf`` (a writable buffer of v2 batches) if it takes the plain path: the
        LogAppendInfo, or None with nothing changed. See the class docstring."""
        cdef Py_buffer view
        cdef bint flush_due = False
        try:
            PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
        except (BufferError, TypeError):    # read-only or not a buffer: the caller's business
            return None
        try:
            self._acquire()
            try:
                info = self._append_locked(<unsigned char*>view.buf, view.len, leader_epoch, &flush_due)
            finally:
                self._release()
        finally:
            PyBuffer_Release(&view)
        if flush_due:
            self._flush()
        return info

    cdef object _append_locked(self, unsigned char* p, Py_ssize_t n, int32_t leader_epoch,
                               bint* flush_due):
        cdef int64_t now, base, nxt
        cdef SegmentFile f
        if not self.plain or self.deleted:
            return None
        now = wall_clock_now_ms() if self._c_clock else self._clock()
        snap = self._segments._snap
        if snap is not self._snap:
            self._refresh(snap)
        seg = self._seg
        f = seg._file
        if f is None or f.size != self._published:
            f = seg.writer_file()            # (re)opened through the cache, at the published end
            self._published = f.size
        if f.size and now - self._created_ms >= self.segment_ms:
            return None                      # due to roll by age: the general path rolls
        base = self.next_offset
        nxt = f.append_checked_ptr(p, n, self._cursor, self._oi, self._ti, base, leader_epoch,
                                   self.segment_bytes, self.max_message_bytes)
        if nxt < 0:
            return None
        seg.size = self._published = f.size  # publish last: readers bound themselves by it
        flush_due[0] = self.appended(nxt, f.appended_records, now)
        return fk_tuple4(<PyTypeObject*>self._info_type, base, nxt - 1, -1, self.log_start_offset)
