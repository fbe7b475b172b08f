# Arrow columns -> record batch v2 record stream, with no Python object per row.
#
# Writes records (all varints zigzag; batch header in records_layout.pxd):
#   length varint | attributes i8 (0) | timestampDelta varlong | offsetDelta varint |
#   keyLength varint (-1 null) | key | valueLength varint (-1 null) | value |
#   headerCount varint | [hKeyLength varint | hKey utf-8 | hValueLength varint (-1 null) | hValue]*
# into a bytearray that starts with ``reserve`` zero bytes (61: room for the batch header, which
# records_build.finish_batch writes once compression is decided), exactly the shape
# records_build.encode_records returns, so the same finishing code serves both encoders.
#
# Inputs are the buffers of one Arrow record batch (layout in arrow_layout.pxd): key and value
# binary/utf8 columns, and optionally headers as list<struct<key utf8, value binary>> given as the
# list column plus its two (struct-offset-adjusted) children. ``rows`` (int64 row numbers) picks
# and orders the rows, so a caller groups a batch by partition with one sort and no copy of data.
#
# Each append is two passes without the GIL: size the rows that fit ``max_bytes``, grow the
# buffer once, write. Every offset was bounds-checked when the columns were taken, so the write
# pass has no checks left to make.
from libc.stdint cimport int32_t, int64_t, uint8_t

from fastkafka._core.arrow_layout cimport (BinaryColumn, column_valid, column_value,
                                           fill_binary_column)
from fastkafka._core.records_build cimport RecordsOutput
from fastkafka._core.records_layout cimport RECORDS_OFFSET
from fastkafka._core.varint cimport blob_size, varlong_size, write_blob, write_varlong

__all__ = ["ArrowColumns", "ArrowRecordsBuilder"]


cdef struct Cols:
    BinaryColumn key, value, hlist, hkey, hvalue
    bint has_key, has_headers
    Py_ssize_t num_rows


cdef class ArrowColumns:
    """The key/value/header buffers of one Arrow record batch, checked once, pinned while used.

    ``key`` and ``headers`` may be None. Each column is ``(validity, offsets, data, offset,
    length)``; ``headers`` is ``(list_column, header_key_column, header_value_column)`` where the
    list column's data is None and its offsets index the header children.

    Example::

        >>> import pyarrow as pa
        >>> v = pa.array([b"a", None])
        >>> cols = ArrowColumns(None, (*v.buffers(), v.offset, len(v)))
        >>> cols.num_rows
        2
    """
    cdef Cols c
    cdef list keep

    def __cinit__(self, key, tuple value, headers=None):
        self.keep = []
        fill_binary_column(&self.c.value, value, self.keep, -1)
        self.c.num_rows = self.c.value.length
        self.c.has_key = key is not None
        if self.c.has_key:
            fill_binary_column(&self.c.key, key, self.keep, -1)
            if self.c.key.length != self.c.num_rows:
                raise ValueError("key and value columns differ in length")
        self.c.has_headers = headers is not None
        if self.c.has_headers:
            lst, hk, hv = headers
            fill_binary_column(&self.c.hkey, hk, self.keep, -1)
            fill_binary_column(&self.c.hvalue, hv, self.keep, -1)
            if self.c.hkey.length != self.c.hvalue.length:
                raise ValueError("header key and value columns differ in length")
            fill_binary_column(&self.c.hlist, lst, self.keep, self.c.hkey.length)
            if self.c.hlist.length != self.c.num_rows:
                raise ValueError("headers and value columns differ in length")

    @property
    def num_rows(self) -> int:
        return self.c.num_rows


# Status of the sizing pass (it runs without the GIL; the caller raises).
cdef enum:
    OK = 0
    BAD_ROW = 1
    NULL_HEADER_KEY = 2
    TOO_LARGE = 3


cdef class ArrowRecordsBuilder:
    """One record stream under construction for one topic-partition; rows are appended from
    any number of Arrow batches, then :meth:`finish` hands the buffer over.

    Not thread-safe; one writer task owns it.

    Example::

        >>> import numpy as np, pyarrow as pa
        >>> v = pa.array([b"x", b"yy"])
        >>> cols = ArrowColumns(None, (*v.buffers(), v.offset, len(v)))
        >>> b = ArrowRecordsBuilder(reserve=0)
        >>> b.append(cols, np.array([1, 0]), 0, 2, 7, 1 << 20)
        2
        >>> buf, n, last, base_ts, max_ts = b.finish()
        >>> bytes(buf[:10]), n, last, base_ts, max_ts
        (b'\\x10\\x00\\x00\\x00\\x01\\x04yy\\x00\\x0e', 2, 1, 7, 7)
    """
    cdef RecordsOutput out
    cdef Py_ssize_t reserve
    cdef readonly int32_t count
    cdef int64_t base_ts, max_ts

    def __cinit__(self, Py_ssize_t reserve=RECORDS_OFFSET, Py_ssize_t hint=0):
        if reserve < 0:
            raise ValueError("reserve must be >= 0")
        self.reserve = reserve
        self.out = RecordsOutput(reserve, hint)
        self.count = 0

    @property
    def size(self) -> int:
        """Bytes of record stream so far (without the reserve)."""
        return self.out.used - self.reserve

    def append(self, ArrowColumns cols, const int64_t[::1] rows, Py_ssize_t start,
               Py_ssize_t stop, int64_t timestamp, Py_ssize_t max_bytes) -> int:
        """Append ``rows[start:stop]`` (row numbers of ``cols``) stamped ``timestamp`` while the
        stream stays within ``max_bytes`` (an empty builder always takes one row). Returns
        where it stopped: ``stop`` when every row fit, otherwise the first row left over."""
        if start < 0 or stop > rows.shape[0] or start > stop:
            raise IndexError(f"rows[{start}:{stop}] out of range for {rows.shape[0]} rows")
        if self.count == 0:
            self.base_ts = self.max_ts = timestamp
        if timestamp > self.max_ts:
            self.max_ts = timestamp
        cdef int64_t ts_delta = timestamp - self.base_ts
        cdef Py_ssize_t k, end = start, total = 0, body, limit = max_bytes - self.size
        cdef int status = OK
        cdef int32_t count = self.count
        with nogil:
            for k in range(start, stop):
                body = _record_body(&cols.c, rows[k], ts_delta, count + (k - start), &status)
                if status != OK:
                    break
                body += varlong_size(body)
                if total + body > limit and (count > 0 or k > start):
                    break
                total += body
                end = k + 1
                if count + (end - start) >= 0x7FFFFFFF:
                    break
        if status == BAD_ROW:
            raise IndexError(f"row {rows[k]} out of range for {cols.num_rows} rows")
        if status == NULL_HEADER_KEY:
            raise ValueError(f"header key is null in row {rows[k]}; Kafka header keys are strings")
        if status == TOO_LARGE:
            raise OverflowError("record larger than 2 GiB")
        cdef uint8_t* w = self.out.room(total)
        with nogil:
            for k in range(start, end):
                w = _write_record(w, &cols.c, rows[k], ts_delta, count + (k - start))
        self.out.used += total
        self.count = count + <int32_t>(end - start)
        return end

    def finish(self):
        """``(buf, record_count, last_offset_delta, base_timestamp, max_timestamp)`` like
        ``records_build.encode_records``; the builder is empty afterwards."""
        out = (self.out.finish(), self.count, self.count - 1 if self.count else -1,
               self.base_ts if self.count else -1, self.max_ts if self.count else -1)
        self.out = RecordsOutput(self.reserve, 0)
        self.count = 0
        return out


cdef Py_ssize_t _record_body(const Cols* c, int64_t row, int64_t ts_delta, int64_t delta,
                             int* status) noexcept nogil:
    """Bytes of one record after its length varint; sets ``status`` on a bad row."""
    cdef const uint8_t* p
    cdef Py_ssize_t n, e, body
    if row < 0 or row >= c.num_rows:
        status[0] = BAD_ROW
        return 0
    body = 1 + varlong_size(ts_delta) + varlong_size(delta)
    body += blob_size(column_value(&c.key, row, &p) if c.has_key else -1)
    body += blob_size(column_value(&c.value, row, &p))
    if c.has_headers and column_valid(&c.hlist, row):
        body += varlong_size(c.hlist.offsets[row + 1] - c.hlist.offsets[row])
        for e in range(c.hlist.offsets[row], c.hlist.offsets[row + 1]):
            n = column_value(&c.hkey, e, &p)
            if n < 0:
                status[0] = NULL_HEADER_KEY
                return 0
            body += blob_size(n) + blob_size(column_value(&c.hvalue, e, &p))
    else:
        body += 1
    if body > 0x7FFFFFFF:
        status[0] = TOO_LARGE
    return body


cdef uint8_t* _write_record(uint8_t* w, const Cols* c, int64_t row, int64_t ts_delta,
                            int64_t delta) noexcept nogil:
    """Write one record (row already checked by _record_body); returns the end."""
    cdef int status = OK
    cdef const uint8_t* p
    cdef Py_ssize_t n, e
    w += write_varlong(w, _record_body(c, row, ts_delta, delta, &status))
    w[0] = 0   # record attributes: unused, always 0
    w += 1
    w += write_varlong(w, ts_delta)
    w += write_varlong(w, delta)
    if c.has_key:
        n = column_value(&c.key, row, &p)
        w = write_blob(w, p, n)
    else:
        w = write_blob(w, NULL, -1)
    n = column_value(&c.value, row, &p)
    w = write_blob(w, p, n)
    if c.has_headers and column_valid(&c.hlist, row):
        w += write_varlong(w, c.hlist.offsets[row + 1] - c.hlist.offsets[row])
        for e in range(c.hlist.offsets[row], c.hlist.offsets[row + 1]):
            n = column_value(&c.hkey, e, &p)
            w = write_blob(w, p, n)
            n = column_value(&c.hvalue, e, &p)
            w = write_blob(w, p, n)
    else:
        w += write_varlong(w, 0)
    return w
