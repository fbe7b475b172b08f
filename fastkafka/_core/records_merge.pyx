# Record streams of fetched batches -> new record streams of about max_bytes each, records
# re-based (offset deltas 0, 1, 2, ... and timestamp deltas from the stream's first record)
# without making a Python object per record: the mirror's merge of small source batches.
#
# A record (layout in records_read.pyx) keeps its attributes, key, value and headers byte for
# byte; only its length, timestampDelta and offsetDelta varints are written anew, since the new
# deltas may take another number of bytes. Each record is framed by scan_record before it is
# copied: a corrupt stream raises CorruptRecordError (VarintError for an overlong varint).
cimport cython
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy

from fastkafka._core.records_build cimport RecordsOutput
from fastkafka._core.records_layout cimport *
from fastkafka._core.varint cimport varlong_size, write_varlong

from fastkafka.errors import CorruptRecordError, VarintError


@cython.final
cdef class RecordMerger:
    """Appends the records of fetched record streams to output streams of at most ``max_bytes``
    (a record bigger than that gets a stream of its own), each behind ``reserve`` bytes for the
    batch header. ``chunks`` lists the finished streams as ``(buf, record_count, last_offset_delta,
    base_timestamp, max_timestamp, first_offset, last_offset)``: the first five are what
    ``encode_records`` returns, the last two the source offsets of the stream's first and last
    record. :meth:`finish` ends the stream under way and hands them over.

    Example::

        >>> from fastkafka.records import build_batch
        >>> from fastkafka._core.records import read_header
        >>> from fastkafka._core.records_read import decode_records
        >>> b = build_batch([(b"k%d" % i, b"v", [("h", b"1")], 1000 + i) for i in range(3)], base_offset=40)
        >>> h = read_header(b)
        >>> m = RecordMerger(1_000_000, 0)
        >>> m.add(b[61:], h.base_offset, h.base_timestamp, h.record_count, start_offset=41)
        2
        >>> buf, n, last, base_ts, max_ts, first, last_src = m.finish()[0]
        >>> n, last, base_ts, max_ts, first, last_src
        (2, 1, 1001, 1002, 41, 42)
        >>> [(r.offset, r.timestamp, r.key) for r in decode_records(bytes(buf), 0, base_ts, n)]
        [(0, 1001, b'k1'), (1, 1002, b'k2')]
    """
    cdef readonly list chunks
    cdef Py_ssize_t max_bytes, reserve
    cdef RecordsOutput out
    cdef int32_t count
    cdef int64_t base_ts, max_ts, first_offset, last_offset

    def __cinit__(self, Py_ssize_t max_bytes, Py_ssize_t reserve):
        self.chunks = []
        self.max_bytes = max_bytes
        self.reserve = reserve
        self.out = None

    cdef void _close(self):
        if self.out is not None:
            self.chunks.append((self.out.finish(), self.count, self.count - 1, self.base_ts, self.max_ts,
                                self.first_offset, self.last_offset))
            self.out = None

    def finish(self):
        """Hand over the finished streams, the one under way included (``chunks`` starts afresh)."""
        self._close()
        out, self.chunks = self.chunks, []
        return out

    def add(self, const unsigned char[::1] stream, int64_t base_offset, int64_t base_timestamp, int32_t count, *,
            int64_t start_offset=-1, int timestamp_type=0, int64_t max_timestamp=-1):
        """Append the records of one batch's uncompressed record stream (``count`` records; its
        header's base offset and timestamp) whose offsets are at least ``start_offset``;
        LogAppendTime (``timestamp_type`` 1) gives each record ``max_timestamp``. Returns how
        many were appended."""
        cdef Py_ssize_t end = stream.shape[0]
        cdef const unsigned char* s = &stream[0] if end else NULL
        cdef Py_ssize_t pos = 0, p, rest, body
        cdef RecordSpan r
        cdef int32_t i
        cdef int64_t ts, offset
        cdef int32_t added = 0
        cdef unsigned char* w
        if count < 0:
            raise CorruptRecordError(f"negative record count {count}")
        for i in range(count):
            if pos >= end:
                raise CorruptRecordError(f"record stream holds {i} records, recordCount says {count}")
            p = scan_record(s, pos, end, &r)
            if p < 0:
                cls = VarintError if p == REC_BAD_VARINT else CorruptRecordError
                raise cls(f"record {i}: {record_error_text(<int>p, r.err_pos)}")
            offset = base_offset + r.offset_delta
            if offset >= start_offset:
                ts = max_timestamp if timestamp_type == 1 else base_timestamp + r.timestamp_delta
                rest = r.fields_pos      # key, value and headers: copied as they are
                if self.out is not None:
                    body = 1 + varlong_size(ts - self.base_ts) + varlong_size(self.count) + (p - rest)
                    if self.out.used - self.reserve + varlong_size(body) + body > self.max_bytes:
                        self._close()
                if self.out is None:
                    self.out = RecordsOutput(self.reserve, 65536)
                    self.count = 0
                    self.base_ts = self.max_ts = ts
                    self.first_offset = offset
                body = 1 + varlong_size(ts - self.base_ts) + varlong_size(self.count) + (p - rest)
                w = self.out.room(varlong_size(body) + body)
                w += write_varlong(w, body)
                w[0] = <unsigned char>r.attributes
                w += 1
                w += write_varlong(w, ts - self.base_ts)
                w += write_varlong(w, self.count)
                memcpy(w, s + rest, p - rest)
                w += p - rest
                self.out.used = w - self.out.ptr
                if ts > self.max_ts:
                    self.max_ts = ts
                self.last_offset = offset
                self.count += 1
                added += 1
            pos = p
        if pos != end:
            raise CorruptRecordError(f"{end - pos} bytes left in the record stream after recordCount={count} records")
        return added
