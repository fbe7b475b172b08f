# Record batch v2 readers: a record stream -> Python Records, or many batches -> columns.
#
# Record (all varints zigzag; batch layout in records_layout.pxd):
#   length varint | attributes i8 | timestampDelta varlong | offsetDelta varint |
#   keyLength varint (-1 null) | key | valueLength varint (-1 null) | value |
#   headerCount varint | [hKeyLength varint | hKey utf-8 | hValueLength varint (-1 null) | hValue]*
# offset = baseOffset + offsetDelta; timestamp = baseTimestamp + timestampDelta, or the batch's
# maxTimestamp for every record when the batch is LogAppendTime.
#
# Columns follow Arrow's binary layout so Spark/pyarrow can wrap them without copying: for each
# variable-size column an int32 offsets array of n+1 entries into one contiguous data buffer and an
# LSB-first validity bitmap (None when nothing is null). Headers are a list column: per record an
# [start, end) range (header_offsets) into flat header key / header value columns.
#
# decode_columns makes two passes in C without the GIL for big inputs. The batch headers give
# the record counts, so the fixed-size columns are allocated first; the first pass checks each
# batch's CRC and right after, while the batch is in cache, frames its records (the one
# scan_record per record), writes those columns -- offsets, timestamps and where each key, value
# and header list ends -- and notes where each key and value is. The second
# copies the keys, values and headers into data buffers allocated once at their exact size,
# without scanning again and without a bounds check. Compressed record streams are decompressed
# above (L1) and passed in; this module never imports fastkafka.compression.
cimport cython
from cpython cimport array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject_GetItem
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from fastkafka._core.records_layout cimport *

import array as _array

from fastkafka.errors import CorruptRecordError, VarintError

cdef array.array _INT64 = _array.array("q")
cdef array.array _INT32 = _array.array("i")


# Not tracked by the cyclic GC: a consumer materialising 100k Records otherwise pays for repeated
# full collections (measured 2x); the fields are ints, bytes and a list of tuples, so a cycle
# needs a caller to put a Record inside its own headers.
@cython.no_gc
cdef class Record:
    """One record: ``offset``, ``timestamp``, ``key``, ``value`` (bytes or None), ``headers``
    (list of ``(str, bytes | None)``).

    Also the builder's input: a Record whose offset is None gets the next offset in the batch.

    Example::

        >>> Record(5, 1000, b"k", b"v", [("h", b"x")]).offset
        5
    """

    def __init__(self, offset=None, timestamp=None, key=None, value=None, headers=()):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = list(headers)

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        cdef Record o = other
        return (self.offset == o.offset and self.timestamp == o.timestamp and self.key == o.key
                and self.value == o.value and self.headers == o.headers)

    def __repr__(self):
        return (f"Record(offset={self.offset!r}, timestamp={self.timestamp!r}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")

    def __reduce__(self):
        return (Record, (self.offset, self.timestamp, self.key, self.value, self.headers))


cdef object _raise_record(int status, Py_ssize_t err_pos, str where):
    cls = VarintError if status == REC_BAD_VARINT else CorruptRecordError
    raise cls(f"{where}: {record_error_text(status, err_pos)}")


def decode_records(const unsigned char[::1] stream, int64_t base_offset, int64_t base_timestamp,
                   int32_t count, *, int timestamp_type=0, int64_t max_timestamp=-1):
    """Decode an uncompressed record stream of ``count`` records into :class:`Record` objects.

    Raises CorruptRecordError (VarintError for overlong varints) when the stream does not hold
    exactly ``count`` well-framed records. ``timestamp_type=1`` (LogAppendTime) gives every
    record ``max_timestamp``.

    Example::

        >>> from fastkafka.records import build_batch
        >>> from fastkafka._core.records import read_header
        >>> b = build_batch([(b"k", b"v", [("h", None)], 1000)], base_offset=9)
        >>> h = read_header(b)
        >>> decode_records(b[61:], h.base_offset, h.base_timestamp, h.record_count)
        [Record(offset=9, timestamp=1000, key=b'k', value=b'v', headers=[('h', None)])]
    """
    cdef Py_ssize_t end = stream.shape[0]
    cdef const unsigned char* s = &stream[0] if end else NULL
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t p
    cdef RecordSpan r
    cdef int32_t i, h
    cdef int32_t hk_len = 0, hv_len = 0
    cdef Py_ssize_t hk_pos, hv_pos
    cdef Record rec
    cdef bint log_append = timestamp_type == 1
    if count < 0:
        raise CorruptRecordError(f"negative record count {count}")
    out = []
    for i in range(count):
        if pos >= end:
            raise CorruptRecordError(f"record stream holds {i} records, recordCount says {count}")
        p = scan_record(s, pos, end, &r)
        if p < 0:
            _raise_record(<int>p, r.err_pos, f"record {i}")
        rec = Record.__new__(Record)
        rec.offset = base_offset + r.offset_delta
        rec.timestamp = max_timestamp if log_append else base_timestamp + r.timestamp_delta
        rec.key = bytes_or_none(s, r.key_pos, r.key_len)
        rec.value = bytes_or_none(s, r.value_pos, r.value_len)
        headers = []
        pos = r.headers_pos
        for h in range(r.header_count):
            # already framed by scan_record: these reads stay inside the record
            pos = read_varint(s, pos, r.end, &hk_len)
            hk_pos = pos
            pos += hk_len
            pos = read_varint(s, pos, r.end, &hv_len)
            hv_pos = pos
            if hv_len > 0:
                pos += hv_len
            try:
                hkey = PyUnicode_DecodeUTF8(<const char*>s + hk_pos, hk_len, NULL)
            except UnicodeDecodeError as exc:
                raise CorruptRecordError(f"record {i}: header key is not UTF-8: {exc}") from None
            headers.append((hkey, bytes_or_none(s, hv_pos, hv_len)))
        rec.headers = headers
        out.append(rec)
        pos = p
    if pos != end:
        raise CorruptRecordError(
            f"{end - pos} bytes left in the record stream after recordCount={count} records")
    return out


cdef class Columns:
    """Records of many batches as Arrow-layout columns (see module comment). Read-only.

    ``offsets``/``timestamps`` are ``array('q')``, ``timestamp_types`` and every ``*_offsets``
    ``array('i')``, ``*_data`` bytes, ``*_validity`` LSB-first bitmaps (bytes) or None.
    ``valid_bytes`` is how much of the input framed as whole batches (a partial trailing batch,
    normal in a fetch response, is left out).
    """

    def __len__(self):
        return self.count

    def __repr__(self):
        return f"Columns(count={self.count}, batch_count={self.batch_count}, valid_bytes={self.valid_bytes})"


cdef struct Plan:
    const unsigned char* stream
    Py_ssize_t stream_len
    Py_ssize_t position         # of the batch in the input
    int64_t batch_size          # its whole size (for its CRC)
    int64_t base_offset
    int64_t base_timestamp
    int64_t max_timestamp
    int32_t timestamp_type
    int32_t count


cdef struct Totals:
    int64_t records
    int64_t key_bytes
    int64_t value_bytes
    int64_t key_nulls
    int64_t value_nulls
    int64_t headers
    int64_t header_key_bytes
    int64_t header_value_bytes
    int64_t header_value_nulls
    # first problem found
    Py_ssize_t bad_plan
    int status
    Py_ssize_t err_pos


cdef struct Out:
    int64_t* offsets
    int64_t* timestamps
    int32_t* ts_types
    int32_t* key_off
    uint8_t* key_valid
    unsigned char* key_data
    int32_t* value_off
    uint8_t* value_valid
    unsigned char* value_data
    int32_t* header_off
    # pass 1 -> pass 2: where each record's key and value are in its stream; ~position (< 0)
    # for a null one (the position after its length varint: a null value's headers start there)
    int32_t* key_pos
    int32_t* value_pos
    int32_t* hk_off
    unsigned char* hk_data
    int32_t* hv_off
    uint8_t* hv_valid
    unsigned char* hv_data


cdef enum:
    CRC_MISMATCH = 1            # Totals.status of a batch whose CRC does not match (REC_* are < 0)


cdef void frame_records(const unsigned char* buf, Plan* plans, Py_ssize_t nplans, bint check_crc, Out* o,
                        Totals* t) noexcept nogil:
    """Pass 1: with ``check_crc`` check the batch's CRC, then frame every record of it (its
    plan's count at most), write its offset, timestamp and the ends of its key, value and
    headers, note where its key and value are, and sum the sizes. Stops at the first bad batch
    or record (``t.status``)."""
    cdef Py_ssize_t i, pos
    cdef int64_t k = 0
    cdef int32_t n, h, hk_len = 0, hv_len = 0
    cdef Py_ssize_t q
    cdef RecordSpan r
    cdef Plan* pl
    memset(t, 0, sizeof(Totals))
    o.key_off[0] = 0
    o.value_off[0] = 0
    o.header_off[0] = 0
    for i in range(nplans):
        pl = &plans[i]
        if check_crc and not batch_crc_ok(buf + pl.position, pl.batch_size):
            t.bad_plan = i
            t.status = CRC_MISMATCH
            return
        pos = 0
        n = 0
        while pos < pl.stream_len:
            if n == pl.count:
                t.bad_plan = i
                t.status = REC_COUNT_MISMATCH
                t.err_pos = pos
                return
            pos = scan_record(pl.stream, pos, pl.stream_len, &r)
            if pos < 0:
                t.bad_plan = i
                t.status = <int>pos
                t.err_pos = r.err_pos
                return
            n += 1
            o.offsets[k] = pl.base_offset + r.offset_delta
            o.timestamps[k] = pl.max_timestamp if pl.timestamp_type else pl.base_timestamp + r.timestamp_delta
            o.ts_types[k] = pl.timestamp_type
            if r.key_len < 0:
                t.key_nulls += 1
                o.key_pos[k] = ~<int32_t>r.key_pos
            else:
                t.key_bytes += r.key_len
                o.key_pos[k] = <int32_t>r.key_pos
            if r.value_len < 0:
                t.value_nulls += 1
                o.value_pos[k] = ~<int32_t>r.value_pos
            else:
                t.value_bytes += r.value_len
                o.value_pos[k] = <int32_t>r.value_pos
            # (past 2 GiB these wrap: the caller refuses the totals before pass 2 reads them)
            o.key_off[k + 1] = <int32_t>t.key_bytes
            o.value_off[k + 1] = <int32_t>t.value_bytes
            if r.header_count:
                t.headers += r.header_count
                t.header_key_bytes += r.header_key_bytes
                t.header_value_bytes += r.header_value_bytes
                q = r.headers_pos
                for h in range(r.header_count):
                    q = read_varint(pl.stream, q, r.end, &hk_len) + hk_len
                    q = read_varint(pl.stream, q, r.end, &hv_len)
                    if hv_len < 0:
                        t.header_value_nulls += 1
                    else:
                        q += hv_len
            o.header_off[k + 1] = <int32_t>t.headers
            k += 1
        if n != pl.count:
            t.bad_plan = i
            t.status = REC_COUNT_MISMATCH
            t.err_pos = pos
            return
    t.records = k


cdef inline void _set_bit(uint8_t* bitmap, int64_t i) noexcept nogil:
    bitmap[i >> 3] |= <uint8_t>(1 << (i & 7))


cdef inline int32_t _append_value(unsigned char* data, int32_t end, const unsigned char* src,
                                  int32_t n, uint8_t* validity, int64_t i) noexcept nogil:
    """Append value ``i`` (``n`` bytes at ``src``, n < 0 = null) to a binary column whose data
    ends at ``end``; returns the new end. ``validity`` is NULL for a column without nulls."""
    if n < 0:
        return end
    memcpy(data + end, src, n)
    if validity != NULL:
        _set_bit(validity, i)
    return end + n


cdef void fill(Plan* plans, Py_ssize_t nplans, Out* o) noexcept nogil:
    """Pass 2: copy every key, value and header where pass 1 said; framed there, so no checks."""
    cdef Py_ssize_t i
    cdef int64_t k = 0, hidx = 0
    cdef int32_t hko = 0, hvo = 0
    cdef int32_t j, h, n, hk_len = 0, hv_len = 0
    cdef Py_ssize_t q
    cdef Plan* pl
    cdef const unsigned char* s
    o.hk_off[0] = 0
    o.hv_off[0] = 0
    for i in range(nplans):
        pl = &plans[i]
        s = pl.stream
        for j in range(pl.count):
            q = o.key_pos[k]
            if q >= 0:
                memcpy(o.key_data + o.key_off[k], s + q, <size_t>(o.key_off[k + 1] - o.key_off[k]))
                if o.key_valid != NULL:
                    _set_bit(o.key_valid, k)
            q = o.value_pos[k]
            if q >= 0:
                memcpy(o.value_data + o.value_off[k], s + q, <size_t>(o.value_off[k + 1] - o.value_off[k]))
                if o.value_valid != NULL:
                    _set_bit(o.value_valid, k)
                q += o.value_off[k + 1] - o.value_off[k]
            else:
                q = ~q
            # after the value: headerCount, then the headers
            n = o.header_off[k + 1] - o.header_off[k]
            if n:
                q = read_varint(s, q, pl.stream_len, &hk_len)
            for h in range(n):
                q = read_varint(s, q, pl.stream_len, &hk_len)
                hko = _append_value(o.hk_data, hko, s + q, hk_len, NULL, hidx)
                q += hk_len
                o.hk_off[hidx + 1] = hko
                q = read_varint(s, q, pl.stream_len, &hv_len)
                hvo = _append_value(o.hv_data, hvo, s + q, hv_len, o.hv_valid, hidx)
                if hv_len > 0:
                    q += hv_len
                o.hv_off[hidx + 1] = hvo
                hidx += 1
            k += 1


cdef inline array.array _int_array(array.array template, int64_t n):
    return array.clone(template, <Py_ssize_t>n, False)


cdef inline object _data(int64_t n):
    return PyBytes_FromStringAndSize(NULL, <Py_ssize_t>n)


cdef inline object _bitmap(int64_t n, int64_t nulls):
    if nulls == 0:
        return None
    b = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>((n + 7) >> 3))
    memset(PyBytes_AS_STRING(b), 0, <size_t>((n + 7) >> 3))
    return b


cdef inline uint8_t* _bits(object bitmap):
    return NULL if bitmap is None else <uint8_t*>PyBytes_AS_STRING(bitmap)


cdef Py_ssize_t _frame_batches(const unsigned char* p, Py_ssize_t n, bint check_crc, int* status,
                               int64_t* size, Py_ssize_t* count) noexcept nogil:
    """Walk the whole batches at the start of ``p[:n]``: returns where the walk stopped, with the
    status there (BATCH_OK at the end), the size last read and the number of whole batches."""
    cdef BatchCursor c
    cursor_init(&c, p, n)
    count[0] = 0
    while cursor_next(&c, check_crc):
        count[0] += 1
    status[0] = BATCH_OK if c.status == BATCH_END else c.status
    size[0] = c.size
    return c.pos


cdef int _raise_bad_crc(const unsigned char* p, Py_ssize_t valid) except -1:
    # The error path: the first CRC mismatch among the framed batches, if any, raised as the
    # framing walk with CRC reports it (pass 1 stops at the first problem, of either kind).
    cdef int status = BATCH_OK
    cdef int64_t size = 0
    cdef Py_ssize_t count = 0
    cdef Py_ssize_t pos = _frame_batches(p, valid, True, &status, &size, &count)
    if status != BATCH_OK:
        raise CorruptRecordError(batch_error_text(status, p, pos, valid, size))
    return 0


def decode_columns(const unsigned char[::1] buf, decompressed=None, *, bint check_crc=True,
                   bint include_control=False):
    """Decode every whole batch in ``buf`` into one :class:`Columns`.

    ``decompressed``: for compressed batches, a sequence indexed by batch ordinal (position
    among the whole batches of ``buf``) holding that batch's decompressed record stream as
    bytes (entries for uncompressed batches are ignored). Control batches are skipped unless
    ``include_control``. A partial trailing batch ends the input quietly (see ``valid_bytes``);
    any other framing, CRC or record problem raises CorruptRecordError.

    Example::

        >>> from fastkafka.records import build_batch
        >>> c = decode_columns(build_batch([(b"k", b"v1", [], 5), (None, b"v2", [], 6)]))
        >>> list(c.offsets), c.value_data, list(c.value_offsets), c.key_null_count
        ([0, 1], b'v1v2', [0, 2, 4], 1)
    """
    cdef Py_ssize_t n = buf.shape[0]
    cdef const unsigned char* p = &buf[0] if n else NULL
    cdef Py_ssize_t pos = 0, nbatches = 0, i = -1, stream_index = 0
    cdef BatchCursor c
    cdef int64_t size = 0
    cdef int status = BATCH_OK
    cdef const unsigned char* b
    cdef Plan* plans = NULL
    cdef Py_ssize_t nplans = 0
    cdef Totals t
    cdef Out o
    cdef bint big = n >= NOGIL_THRESHOLD
    cdef Plan* pl
    cdef uint16_t attrs
    cdef Columns cols
    cdef int64_t records = 0
    cdef int32_t* positions = NULL

    # Frame the batches: a header hop each (their CRCs are checked in pass 1, batch by batch)
    pos = _frame_batches(p, n, False, &status, &size, &nbatches)
    if status != BATCH_OK and status != BATCH_TRUNCATED and status != BATCH_SHORT_HEADER:
        if check_crc:       # a CRC mismatch before it (or in it) is what the walk reports first
            pos = _frame_batches(p, n, True, &status, &size, &nbatches)
        raise CorruptRecordError(batch_error_text(status, p, pos, n, size))
    cdef Py_ssize_t valid = pos

    keep = []  # decompressed streams stay referenced while plans point into them
    plans = <Plan*>PyMem_Malloc(sizeof(Plan) * (nbatches if nbatches else 1))
    if plans == NULL:
        raise MemoryError()
    try:
        cursor_init(&c, p, valid)
        while cursor_next(&c, False):     # framed above: a header hop per batch
            i += 1
            b = cursor_batch(&c)
            pos, size = c.pos, c.size
            attrs = batch_attributes(b)
            pl = &plans[nplans]
            pl.position = pos
            pl.batch_size = size
            if (attrs & CONTROL_MASK) and not include_control:
                if check_crc:       # no records taken, but its CRC is checked in order
                    pl.stream_len = pl.count = 0
                    nplans += 1
                continue
            if attrs & COMPRESSION_MASK:
                # PyObject_GetItem: with boundscheck off, decompressed[i] on a list skips the bounds check
                try:
                    stream = PyObject_GetItem(decompressed, i) if decompressed is not None else None
                except (IndexError, KeyError):
                    stream = None
                if stream is None:
                    if check_crc:
                        _raise_bad_crc(p, valid)
                    raise CorruptRecordError(
                        f"batch {i} at position {pos} is compressed (codec {attrs & COMPRESSION_MASK}):"
                        f" pass its decompressed record stream")
                if not isinstance(stream, bytes):
                    stream = bytes(stream)
                keep.append(stream)
                pl.stream = <const unsigned char*>PyBytes_AS_STRING(stream)
                pl.stream_len = len(<bytes>stream)
            else:
                pl.stream = b + RECORDS_OFFSET
                pl.stream_len = <Py_ssize_t>(size - RECORDS_OFFSET)
            pl.base_offset = batch_base_offset(b)
            pl.base_timestamp = batch_base_timestamp(b)
            pl.max_timestamp = batch_max_timestamp(b)
            pl.timestamp_type = 1 if attrs & TIMESTAMP_TYPE_MASK else 0
            pl.count = batch_record_count(b)
            nplans += 1

        # the fixed-size columns from the batch headers, each count capped by what its stream
        # can hold (a compressed batch's count is not checked against it before pass 1)
        for i in range(nplans):
            pl = &plans[i]
            if pl.stream_len > 0x7FFFFFFF:
                raise OverflowError("decode_columns: a column exceeds 2 GiB; decode fewer batches at a time")
            records += max(0, min(pl.count, pl.stream_len // MIN_RECORD_SIZE))
        cols = Columns.__new__(Columns)
        cols.batch_count = nbatches
        cols.valid_bytes = valid
        cols.offsets = _int_array(_INT64, records)
        cols.timestamps = _int_array(_INT64, records)
        cols.timestamp_types = _int_array(_INT32, records)
        cols.key_offsets = _int_array(_INT32, records + 1)
        cols.value_offsets = _int_array(_INT32, records + 1)
        cols.header_offsets = _int_array(_INT32, records + 1)
        o.offsets = <int64_t*>(<array.array>cols.offsets).data.as_voidptr
        o.timestamps = <int64_t*>(<array.array>cols.timestamps).data.as_voidptr
        o.ts_types = <int32_t*>(<array.array>cols.timestamp_types).data.as_voidptr
        o.key_off = <int32_t*>(<array.array>cols.key_offsets).data.as_voidptr
        o.value_off = <int32_t*>(<array.array>cols.value_offsets).data.as_voidptr
        o.header_off = <int32_t*>(<array.array>cols.header_offsets).data.as_voidptr
        positions = <int32_t*>PyMem_Malloc(<size_t>(2 * records + 1) * sizeof(int32_t))
        if positions == NULL:
            raise MemoryError()
        o.key_pos = positions
        o.value_pos = positions + records

        if big:
            with nogil:
                frame_records(p, plans, nplans, check_crc, &o, &t)
        else:
            frame_records(p, plans, nplans, check_crc, &o, &t)
        if t.status != 0:
            if check_crc:           # every batch's CRC is reported before any record's problem
                _raise_bad_crc(p, valid)
            pl = &plans[t.bad_plan]
            cls = VarintError if t.status == REC_BAD_VARINT else CorruptRecordError
            raise cls(f"batch at position {pl.position}: {record_error_text(t.status, t.err_pos)}")
        if max(t.key_bytes, t.value_bytes, t.header_key_bytes, t.header_value_bytes,
               t.records, t.headers) > 0x7FFFFFFF:
            raise OverflowError("decode_columns: a column exceeds 2 GiB; decode fewer batches at a time")

        cols.count = t.records
        cols.key_validity = _bitmap(t.records, t.key_nulls)
        cols.key_null_count = t.key_nulls
        cols.key_data = _data(t.key_bytes)
        cols.value_validity = _bitmap(t.records, t.value_nulls)
        cols.value_null_count = t.value_nulls
        cols.value_data = _data(t.value_bytes)
        cols.header_key_offsets = _int_array(_INT32, t.headers + 1)
        cols.header_key_data = _data(t.header_key_bytes)
        cols.header_value_offsets = _int_array(_INT32, t.headers + 1)
        cols.header_value_validity = _bitmap(t.headers, t.header_value_nulls)
        cols.header_value_null_count = t.header_value_nulls
        cols.header_value_data = _data(t.header_value_bytes)

        o.key_valid = _bits(cols.key_validity)
        o.key_data = <unsigned char*>PyBytes_AS_STRING(cols.key_data)
        o.value_valid = _bits(cols.value_validity)
        o.value_data = <unsigned char*>PyBytes_AS_STRING(cols.value_data)
        o.hk_off = <int32_t*>(<array.array>cols.header_key_offsets).data.as_voidptr
        o.hk_data = <unsigned char*>PyBytes_AS_STRING(cols.header_key_data)
        o.hv_off = <int32_t*>(<array.array>cols.header_value_offsets).data.as_voidptr
        o.hv_valid = _bits(cols.header_value_validity)
        o.hv_data = <unsigned char*>PyBytes_AS_STRING(cols.header_value_data)
        if big:
            with nogil:
                fill(plans, nplans, &o)
        else:
            fill(plans, nplans, &o)
        return cols
    finally:
        PyMem_Free(plans)
        PyMem_Free(positions)
