# The append path of one partition's log: a run of v2 batches in, one walk, a status and a summary
# out (contract: appender.pxd; byte layout: records_layout.pxd).
#
# Every append -- plain, idempotent, transactional, compacted, LogAppendTime -- is one call:
# frame and check every batch (CRC-32C, every record of the uncompressed ones) with the GIL
# released, summarize it (offsets taken, record count, largest batch, producer id/epoch/sequence
# range, null keys), and when the caller's limits and checks allow, under the Log's lock: stamp
# offsets (and LogAppendTime), pwrite at the end of the active segment, add the sparse index
# entries, publish the new size and advance the log end. Anything policy must decide first comes
# back as a status with the summary and nothing written; the caller settles it and calls again
# with the CHECKED_* flags of what it settled, so nothing is walked twice.
#
# An idempotent batch goes back to policy (NEEDS_PRODUCER_CHECK) unless it is the one case policy
# accepts without a question: one data batch of a producer the state knows, the next sequence of
# its epoch, outside a transaction (ProducerStateEntry.takes_next). That batch is checked and
# remembered in the producer's entry under the lock, in the same call: the producers lane.
#
# Control batches (transaction markers) are the broker's own: a set holding one is refused
# (CONTROL_BATCH) unless the caller says it writes markers (CONTROL_ALLOWED) or copies a leader's
# batches (FOLLOWER). Counting them is one bit test per batch, so plain sets pay nothing more.
#
# Mechanism only: what the limits are, what a status means, and when to roll, flush or fence a
# producer is fastkafka.log's (Python). This module holds no reference to a log/ object: the
# active segment is attached with its file opener, cursor and indexes (Appender.attach).
from cpython.buffer cimport PyBUF_WRITABLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject, PyTypeObject
from libc.stdint cimport int32_t, int64_t, INT32_MAX
from libc.string cimport memset

from fastkafka._core.index cimport OffsetIndex, TimeIndex
from fastkafka._core.producer_entry cimport ProducerStateEntry
from fastkafka._core.records_layout cimport (
    BATCH_END, BATCH_OK, BATCH_SHORT_HEADER, BATCH_TRUNCATED, BatchCursor, CONTROL_MASK, NOGIL_THRESHOLD,
    TRANSACTIONAL_MASK, batch_attributes,
    batch_base_offset, batch_base_sequence, batch_is_compressed, batch_last_offset, batch_last_offset_delta,
    batch_max_timestamp, batch_partition_leader_epoch, batch_producer_epoch, batch_producer_id,
    batch_record_count,
    cursor_batch, cursor_init, cursor_next, stamp_batch, walk_records)
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

# Python names of the statuses and flags (the enums are appender.pxd's)
OK = APPEND_OK
ROLL = APPEND_ROLL
INVALID = APPEND_INVALID
BATCH_TOO_LARGE = APPEND_BATCH_TOO_LARGE
SET_TOO_LARGE = APPEND_SET_TOO_LARGE
NEEDS_PRODUCER_CHECK = APPEND_NEEDS_PRODUCER_CHECK
NEEDS_KEY_CHECK = APPEND_NEEDS_KEY_CHECK
NULL_KEY = APPEND_NULL_KEY
CLOSED = APPEND_CLOSED
OFFSETS_BEHIND = APPEND_OFFSETS_BEHIND
CONTROL_BATCH = APPEND_CONTROL_BATCH
BYTES_CHECKED = CHECKED_BYTES
PRODUCER_CHECKED = CHECKED_PRODUCER
KEYS_CHECKED = CHECKED_KEYS
AS_FOLLOWER = FOLLOWER
MARKERS_ALLOWED = CONTROL_ALLOWED

cdef int64_t NO_PRODUCER_ID = -1


cdef void summarize(const unsigned char* p, Py_ssize_t n, bint check, bint count_keys, bint whole_prefix,
                    AppendSummary* s) noexcept nogil:
    """The one walk over the set: frame every batch (and with ``check`` its CRC and records),
    and sum up what the policy looks at. Sets ``s.status`` to APPEND_INVALID on bad bytes. With
    ``whole_prefix`` (a fetched copy, which may end inside a batch) a cut-off last batch is left
    out: ``s.bytes`` is then the length of the whole batches before it."""
    cdef BatchCursor c
    cdef const unsigned char* b
    cdef Py_ssize_t err_pos = 0
    cdef int64_t pid, ts
    cdef int32_t seq_end = 0
    cdef int attrs
    cursor_init(&c, p, n)
    s.max_timestamp = -1
    s.producer_id = NO_PRODUCER_ID
    s.offsets_increase = True
    while cursor_next(&c, check):
        b = cursor_batch(&c)
        if s.batch_count == 0:
            s.set_first_offset = batch_base_offset(b)
            s.first_epoch = batch_partition_leader_epoch(b)
        elif batch_base_offset(b) <= s.set_last_offset:
            s.offsets_increase = False
        s.set_last_offset = batch_last_offset(b)
        s.last_epoch = batch_partition_leader_epoch(b)
        if check and not batch_is_compressed(b):
            if walk_records(b, <Py_ssize_t>c.size, &err_pos, &s.null_keys if count_keys else NULL) != 0:
                s.status = APPEND_INVALID
                return
        s.batch_count += 1
        s.record_count += batch_record_count(b)
        s.offsets += <int64_t>batch_last_offset_delta(b) + 1
        if c.size > s.largest_batch:
            s.largest_batch = c.size
        ts = batch_max_timestamp(b)
        if ts > s.max_timestamp:
            s.max_timestamp = ts
        if batch_is_compressed(b):
            s.compressed_batches += 1
        attrs = batch_attributes(b)
        if attrs & TRANSACTIONAL_MASK:
            s.transactional = True
        pid = batch_producer_id(b)
        if attrs & CONTROL_MASK:       # a marker: not a producer's data batch (the walk reads it)
            s.control_batches += 1
        elif pid != NO_PRODUCER_ID:
            if s.producer_batches == 0:
                s.producer_id = pid
                s.producer_epoch = batch_producer_epoch(b)
                s.base_sequence = batch_base_sequence(b)
            elif (pid != s.producer_id or batch_producer_epoch(b) != s.producer_epoch
                  or batch_base_sequence(b) != <int32_t>(<int64_t>s.base_sequence + seq_end + 1)):
                s.mixed_producers = True
            seq_end = <int32_t>(<int64_t>batch_base_sequence(b) - s.base_sequence) + batch_last_offset_delta(b)
            s.producer_batches += 1
    s.last_sequence_delta = seq_end
    if whole_prefix and (c.status == BATCH_TRUNCATED or c.status == BATCH_SHORT_HEADER):
        s.bytes = c.pos
    elif c.status != BATCH_END or s.batch_count == 0:
        s.status = APPEND_INVALID
    elif s.producer_batches and s.producer_batches != s.batch_count:
        s.mixed_producers = True       # plain (or control) and idempotent batches in one set


cdef void stamp_all(unsigned char* p, Py_ssize_t n, int64_t next_offset, int32_t leader_epoch,
                    int64_t log_append_time, bint keep, AppendSummary* s) noexcept nogil:
    """Give the set its offsets (the set framed already) -- or with ``keep`` take the ones it
    carries (a follower's copy of the leader's batches) -- and note where the producer batches
    landed."""
    cdef BatchCursor c
    cdef unsigned char* b
    cursor_init(&c, p, n)
    s.first_offset = s.set_first_offset if keep else next_offset
    s.producer_first_offset = -1
    while cursor_next(&c, False):
        b = <unsigned char*>cursor_batch(&c)
        if keep:
            next_offset = batch_base_offset(b)
        else:
            stamp_batch(b, c.size, next_offset, leader_epoch, log_append_time)
        if batch_producer_id(b) != NO_PRODUCER_ID and not (batch_attributes(b) & CONTROL_MASK):
            if s.producer_first_offset < 0:
                s.producer_first_offset = next_offset
            s.producer_last_offset = next_offset + batch_last_offset_delta(b)
            if batch_max_timestamp(b) > s.producer_max_timestamp:
                s.producer_max_timestamp = batch_max_timestamp(b)
        next_offset += <int64_t>batch_last_offset_delta(b) + 1
    s.last_offset = next_offset - 1
    if log_append_time >= 0:
        s.max_timestamp = log_append_time


cdef class AppendResult:
    """What an append that policy must look at found (``Appender.append``'s non-plain answer):
    ``status`` (OK, ROLL, INVALID, ...) and the set's summary. After OK, ``first_offset`` ..
    ``last_offset`` are the offsets given and the ``producer_*`` offsets where its idempotent
    batches landed. Pass ``flags`` back on the retry after settling the status.

    Example::

        >>> import threading
        >>> from fastkafka.records import build_batch
        >>> a = Appender(threading.RLock(), tuple, wall_clock_ms, None)
        >>> r = a.append(bytearray(build_batch([(b"k", b"v", [], 1)], producer_id=7,
        ...                                    producer_epoch=0, base_sequence=0)))
        >>> r.status == NEEDS_PRODUCER_CHECK, r.producer_id, r.base_sequence, r.record_count
        (True, 7, 0, 1)
    """
    cdef AppendSummary s

    @property
    def status(self): return self.s.status
    @property
    def flags(self): return self.s.flags
    @property
    def bytes(self): return self.s.bytes
    @property
    def batch_count(self): return self.s.batch_count
    @property
    def record_count(self): return self.s.record_count
    @property
    def largest_batch(self): return self.s.largest_batch
    @property
    def first_offset(self): return self.s.first_offset
    @property
    def last_offset(self): return self.s.last_offset
    @property
    def max_timestamp(self): return self.s.max_timestamp
    @property
    def log_append_time(self): return self.s.log_append_time
    @property
    def compressed_batches(self): return self.s.compressed_batches
    @property
    def null_keys(self): return self.s.null_keys
    @property
    def transactional(self): return self.s.transactional
    @property
    def control_batches(self): return self.s.control_batches
    @property
    def producer_batches(self): return self.s.producer_batches
    @property
    def mixed_producers(self): return self.s.mixed_producers
    @property
    def producer_id(self): return self.s.producer_id
    @property
    def producer_epoch(self): return self.s.producer_epoch
    @property
    def base_sequence(self): return self.s.base_sequence
    @property
    def last_sequence_delta(self): return self.s.last_sequence_delta
    @property
    def producer_first_offset(self): return self.s.producer_first_offset
    @property
    def producer_last_offset(self): return self.s.producer_last_offset
    @property
    def producer_max_timestamp(self): return self.s.producer_max_timestamp
    @property
    def first_epoch(self): return self.s.first_epoch
    @property
    def last_epoch(self): return self.s.last_epoch

    def __repr__(self):
        return (f"AppendResult(status={self.s.status}, batches={self.s.batch_count}, "
                f"records={self.s.record_count}, offsets={self.s.first_offset}..{self.s.last_offset}, "
                f"producer_id={self.s.producer_id})")


cdef class Appender:
    """One partition log's append path: its log-end state and its attached active segment.

    ``append(buf, leader_epoch, flags)`` walks the batches of ``buf`` (a writable buffer) once;
    when the limits (``set_limits``) and the caller's ``flags`` leave nothing to policy it takes
    ``lock`` (the Log's RLock), reads the clock, writes the set into the active segment and
    returns ``info_type(base_offset, last_offset, log_append_time, log_start_offset)``;
    otherwise it returns an :class:`AppendResult` whose status says why nothing was written (or,
    with status OK, that the set was written but holds idempotent batches or markers the
    producer state records). A known producer's next batch is checked and remembered here
    (``set_producers``: the producers lane) and answered like a plain set. None for a buffer
    that is read-only or not a buffer. After the lock is released it calls ``flush()`` when
    flush.messages or flush.ms is reached. Thread-safe; the public fields are written under the
    lock and read lock-free.

    A replica's copy (``AS_FOLLOWER`` in ``flags``) keeps the offsets, epochs and timestamps the
    leader gave the batches; they must start at or after the log end and increase
    (OFFSETS_BEHIND otherwise), and the answer is always an AppendResult, whose epochs feed the
    leader-epoch cache. Control batches come back as CONTROL_BATCH unless ``flags`` has
    ``MARKERS_ALLOWED`` (the broker's own transaction markers) or ``AS_FOLLOWER``. The high
    watermark moves with the log end only while ``high_watermark_follows_end`` (the partition
    has one in-sync replica); otherwise replication moves it.

    Example::

        >>> import os, tempfile, threading
        >>> from fastkafka._core.index import OffsetIndex, TimeIndex
        >>> from fastkafka._core.segment import IndexCursor, SegmentFile
        >>> from fastkafka.log.log import LogAppendInfo
        >>> from fastkafka.records import build_batch
        >>> tmpdir = tempfile.TemporaryDirectory(); d = tmpdir.name
        >>> def indexes():
        ...     oi = OffsetIndex(os.path.join(d, "0.index"), 0, 4096)
        ...     ti = TimeIndex(os.path.join(d, "0.timeindex"), 0, 4096)
        ...     return IndexCursor(4096), oi, ti
        >>> a = Appender(threading.RLock(), LogAppendInfo, wall_clock_ms, None)
        >>> a.attach(lambda: SegmentFile(os.path.join(d, "0.log"), create=True), indexes, 0, 0, wall_clock_ms())
        >>> a.append(bytearray(build_batch([(b"k", b"v", [], 1)])))
        LogAppendInfo(base_offset=0, last_offset=0, log_append_time=-1, log_start_offset=0)
        >>> a.next_offset, a.size
        (1, 70)
        >>> tmpdir.cleanup()
    """

    def __init__(self, lock, type info_type not None, clock, flush):
        if not issubclass(info_type, tuple):
            raise TypeError("info_type must be a tuple subclass (a NamedTuple)")
        self._acquire = lock.acquire
        self._release = lock.release
        self._info_type = info_type
        self._clock = clock
        self._c_clock = clock is wall_clock_ms
        self._flush = flush
        self.high_watermark_follows_end = True
        self.set_limits(1 << 30, (1 << 63) - 1, 1 << 20, (1 << 63) - 1, (1 << 63) - 1, False, False)

    def set_limits(self, int64_t segment_bytes, int64_t segment_ms, int64_t max_batch_bytes,
                   int64_t flush_messages, int64_t flush_ms, bint log_append_time, bint compact):
        """The Log's config as the append path applies it (see AppendLimits in appender.pxd)."""
        self.limits.segment_bytes = segment_bytes
        self.limits.segment_ms = segment_ms
        self.limits.max_batch_bytes = max_batch_bytes
        self.limits.flush_messages = flush_messages
        self.limits.flush_ms = flush_ms
        self.limits.log_append_time = log_append_time
        self.limits.compact = compact

    def attach(self, open_file, open_indexes, int64_t base_offset, int64_t size, int64_t created_ms):
        """Appends go to this active segment from now on: ``open_file()`` gives its writable
        file (called again after ``drop_file``), ``open_indexes()`` its (IndexCursor,
        OffsetIndex, TimeIndex) on the first append (an empty partition maps no index until
        then), and ``size`` is where its published bytes end. Under the Log's lock."""
        self._open_file = open_file
        self._open_indexes = open_indexes
        self._file = None
        self._cursor = None
        self._oi = None
        self._ti = None
        self.base_offset = base_offset
        self.size = size
        self.created_ms = created_ms
        self.attached = True

    def set_producers(self, dict producers):
        """The producer state's ``producer id -> ProducerStateEntry`` map (kept by the caller for
        the state's life; None: no lane, every idempotent batch asks policy). Under the lock."""
        self._producers = producers

    def detach(self):
        """No active segment (the log closed, or a new one is about to be attached): the next
        append answers CLOSED. Under the Log's lock."""
        self._open_file = self._open_indexes = self._file = None
        self._cursor = None
        self._oi = None
        self._ti = None
        self.attached = False

    def drop_file(self):
        """The descriptor budget closed the active segment's file: reopen it on the next append.
        Any thread (an append in flight keeps its own reference)."""
        self._file = None

    cdef bint _appended(self, int64_t next_offset, int64_t records, int64_t now):
        """Count ``records`` appended up to ``next_offset`` (the log end and the high watermark
        move there); True when the flush limits are reached. Under the lock."""
        self.next_offset = next_offset
        if self.high_watermark_follows_end:
            self.high_watermark = next_offset
        if not self.unflushed_messages:
            self.first_unflushed_ms = now
        self.unflushed_messages += records
        return (self.unflushed_messages >= self.limits.flush_messages
                or now - self.first_unflushed_ms >= self.limits.flush_ms)

    def append(self, buf, int32_t leader_epoch=-1, int flags=0):
        """Append ``buf`` or say why not; see the class docstring."""
        cdef Py_buffer view
        cdef bint flush_due = False
        cdef AppendSummary s
        cdef AppendResult r
        try:
            PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
        except (BufferError, TypeError):    # read-only or not a buffer: the caller copies
            return None
        try:
            self._append(<unsigned char*>view.buf, view.len, leader_epoch, flags, &s, &flush_due)
        finally:
            PyBuffer_Release(&view)
        if flush_due:
            self._flush()
        if s.status == APPEND_OK and (s.producer_batches == 0 or s.producer_recorded) and s.control_batches == 0 \
                and not (flags & FOLLOWER):
            return fk_tuple4(<PyTypeObject*>self._info_type, s.first_offset, s.last_offset,
                             s.log_append_time, self.log_start_offset)
        r = AppendResult.__new__(AppendResult)
        r.s = s
        return r

    cdef int _append(self, unsigned char* p, Py_ssize_t n, int32_t leader_epoch, int flags,
                     AppendSummary* s, bint* flush_due) except -1:
        cdef AppendLimits* lim = &self.limits
        cdef bint check = not (flags & CHECKED_BYTES)
        cdef bint keep = flags & FOLLOWER
        cdef int64_t now, at, append_time, last
        cdef SegmentFile f
        cdef ProducerStateEntry producer = None
        cdef PyObject* found
        cdef bint lane = False
        memset(s, 0, sizeof(AppendSummary))
        s.flags = flags
        s.bytes = n
        s.log_append_time = -1
        if n <= 0:
            s.status = APPEND_INVALID
            return 0
        if check and n >= NOGIL_THRESHOLD:
            with nogil:
                summarize(p, n, True, lim.compact, keep, s)
        else:
            summarize(p, n, check, lim.compact, keep, s)
        if s.status != APPEND_OK or s.batch_count == 0:   # (a follower's fetch: nothing whole)
            return 0
        n = s.bytes
        s.flags |= CHECKED_BYTES
        if s.largest_batch > lim.max_batch_bytes:
            s.status = APPEND_BATCH_TOO_LARGE
        elif n > lim.segment_bytes:
            s.status = APPEND_SET_TOO_LARGE
        elif keep:
            if not s.offsets_increase:
                s.status = APPEND_OFFSETS_BEHIND
        elif s.control_batches and not (flags & CONTROL_ALLOWED):
            s.status = APPEND_CONTROL_BATCH
        elif lim.compact and s.null_keys:
            s.status = APPEND_NULL_KEY
        elif lim.compact and s.compressed_batches and not (flags & CHECKED_KEYS):
            s.status = APPEND_NEEDS_KEY_CHECK
        elif s.producer_batches and not (flags & CHECKED_PRODUCER):
            # one data batch, no transaction: the lane may take it (decided under the lock)
            lane = self._producers is not None and s.batch_count == 1 and not s.transactional
            if not lane:
                s.status = APPEND_NEEDS_PRODUCER_CHECK
        if s.status != APPEND_OK:
            return 0
        self._acquire()
        try:
            if not self.attached or self.deleted:
                s.status = APPEND_CLOSED
                return 0
            if lane:
                found = PyDict_GetItem(self._producers, s.producer_id)
                if found != NULL and type(<object>found) is ProducerStateEntry:
                    producer = <ProducerStateEntry>found
                if producer is None or not producer.takes_next(s.producer_epoch, s.base_sequence):
                    s.status = APPEND_NEEDS_PRODUCER_CHECK
                    return 0
            if self._cursor is None:
                self._cursor, self._oi, self._ti = self._open_indexes()
            now = wall_clock_now_ms() if self._c_clock else self._clock()
            at = self.size
            if keep and s.set_first_offset < self.next_offset:
                s.status = APPEND_OFFSETS_BEHIND
                return 0
            last = s.set_last_offset if keep else self.next_offset + s.offsets - 1
            if at and (now - self.created_ms >= lim.segment_ms or at + n > lim.segment_bytes
                       or self._cursor.full or last - self.base_offset > INT32_MAX):
                s.status = APPEND_ROLL
                return 0
            f = self._file
            if f is None:
                f = self._file = self._open_file()
            if f.size != at:        # a handle opened by a reader starts at the file's end then
                f.set_size(at)
            self._cursor.reserve_run(n, self._oi, self._ti)
            append_time = now if lim.log_append_time and not keep else -1
            if append_time >= 0 and n >= NOGIL_THRESHOLD:
                with nogil:
                    stamp_all(p, n, self.next_offset, leader_epoch, append_time, False, s)
            else:
                stamp_all(p, n, self.next_offset, leader_epoch, append_time, keep, s)
            s.log_append_time = append_time
            f.write_end(p, n)
            self._cursor.index_run(p, n, at, self._oi, self._ti)
            self.size = at + n       # publish last: readers bound themselves by it
            if producer is not None:
                producer.remember(s.base_sequence, s.last_sequence_delta, s.producer_first_offset,
                                  s.producer_last_offset, s.producer_max_timestamp)
                s.producer_recorded = True
                s.flags |= CHECKED_PRODUCER
            flush_due[0] = self._appended(s.last_offset + 1, s.record_count, now)
        finally:
            self._release()
        return 0
