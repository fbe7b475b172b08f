# Record batch v2 builders: Python records -> record stream, record stream -> whole batch.
#
# Record (all varints zigzag):
#   length varint | attributes i8 (0) | timestampDelta varlong | offsetDelta varint |
#   keyLength varint (-1 null) | key | valueLength varint (-1 null) | value |
#   headerCount varint | [hKeyLength varint | hKey utf-8 | hValueLength varint (-1 null) | hValue]*
# Header (61 bytes, see records_layout.pxd) is written last by finish_batch, because
# batchLength, the counts and the CRC-32C over attributes..end depend on the records.
#
# encode_records leaves ``reserve`` bytes in front of the stream so an uncompressed batch is built
# in one buffer with no copy: encode_records(..., reserve=61) then finish_batch on the same buffer.
# The per-record loop reads each Python object once and writes straight into the output.
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize, PyByteArray_Resize
from cpython.memoryview cimport PyMemoryView_GET_BUFFER
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
cimport cython
from libc.string cimport memset

from fastkafka._core.crc32c cimport crc32c_update
from fastkafka._core.records_layout cimport *
from fastkafka._core.records_read cimport Record
from fastkafka._core.varint cimport blob_size, varlong_size, write_blob, write_varlong


cdef struct Blob:
    const char* data
    Py_ssize_t size      # -1 = null


cdef inline int _blob(object obj, Blob* out, list keep) except -1:
    """Borrow the bytes of a key/value without copying.

    Anything but bytes is held through a memoryview kept in ``keep`` until the record is
    written: the export pins the memory (a bytearray cannot be resized under it).
    """
    cdef Py_buffer* view
    if obj is None:
        out.data = NULL
        out.size = -1
    elif type(obj) is bytes:
        out.data = PyBytes_AS_STRING(obj)
        out.size = PyBytes_GET_SIZE(obj)
    else:
        try:
            mv = memoryview(obj)
        except TypeError:
            raise TypeError(f"key, value and header values must be bytes-like or None, "
                            f"not {type(obj).__name__}") from None
        if not mv.c_contiguous:
            mv = memoryview(mv.tobytes())
        keep.append(mv)
        view = PyMemoryView_GET_BUFFER(mv)
        out.data = <const char*>view.buf
        out.size = view.len
    return 0


cdef inline int _header_key(object key, Blob* out) except -1:
    cdef Py_ssize_t n
    if type(key) is str:
        out.data = PyUnicode_AsUTF8AndSize(key, &n)
        out.size = n
    elif type(key) is bytes:
        out.data = PyBytes_AS_STRING(key)
        out.size = PyBytes_GET_SIZE(key)
    else:
        raise TypeError(f"header keys must be str, not {type(key).__name__}")
    return 0


@cython.final
cdef class RecordsOutput:
    def __cinit__(self, Py_ssize_t reserve, Py_ssize_t hint):
        self.cap = reserve + (hint if hint > 256 else 256)
        self.buf = PyByteArray_FromStringAndSize(NULL, self.cap)
        self.ptr = <unsigned char*>PyByteArray_AS_STRING(self.buf)
        memset(self.ptr, 0, reserve)
        self.used = reserve

    cdef unsigned char* room(self, Py_ssize_t n) except NULL:
        cdef Py_ssize_t want
        if self.used + n > self.cap:
            want = self.cap * 2
            if want < self.used + n:
                want = self.used + n
            PyByteArray_Resize(self.buf, want)
            self.cap = want
            self.ptr = <unsigned char*>PyByteArray_AS_STRING(self.buf)
        return self.ptr + self.used

    cdef bytearray finish(self):
        PyByteArray_Resize(self.buf, self.used)
        return self.buf


def encode_records(records, int64_t default_timestamp, base_timestamp=None, *,
                   int64_t base_offset=0, Py_ssize_t reserve=RECORDS_OFFSET):
    """Encode records into an uncompressed v2 record stream.

    ``records``: iterable of ``(key, value, headers, timestamp)`` tuples or :class:`Record`
    objects; key/value bytes-like or None; headers ``[(str, bytes | None), ...]`` or None;
    timestamp None means ``default_timestamp``. Tuples get consecutive offset deltas; a Record
    with an offset gets ``offset - base_offset`` (strictly increasing -- compacted batches keep
    their gaps). ``base_timestamp`` defaults to the first record's timestamp.

    Returns ``(buf, record_count, last_offset_delta, base_timestamp, max_timestamp)`` where
    ``buf`` is a bytearray holding ``reserve`` zero bytes (room for the header) then the stream.

    Example::

        >>> buf, n, last, base_ts, max_ts = encode_records([(None, b"v", [], 7)], 0, reserve=0)
        >>> bytes(buf), n, last, base_ts, max_ts
        (b'\\x0e\\x00\\x00\\x00\\x01\\x02v\\x00', 1, 0, 7, 7)
    """
    cdef Py_ssize_t hint = 0
    try:
        hint = len(records) * 64
    except TypeError:
        pass
    cdef RecordsOutput out = RecordsOutput(reserve, hint)
    cdef Blob key, value, hkey, hval
    cdef int64_t ts, base_ts = 0, max_ts = -1
    cdef bint have_base = base_timestamp is not None
    cdef int64_t delta = -1, want
    cdef Py_ssize_t count = 0, body, i, nh
    cdef unsigned char* w
    cdef Record rec
    cdef list keep = []
    if have_base:
        base_ts = base_timestamp
    for item in records:
        offset = None
        if type(item) is tuple and PyTuple_GET_SIZE(item) == 4:
            k = <object>PyTuple_GET_ITEM(item, 0)
            v = <object>PyTuple_GET_ITEM(item, 1)
            headers = <object>PyTuple_GET_ITEM(item, 2)
            t = <object>PyTuple_GET_ITEM(item, 3)
        elif isinstance(item, Record):
            rec = item
            k, v, headers, t, offset = rec.key, rec.value, rec.headers, rec.timestamp, rec.offset
        else:
            k, v, headers, t = item
        ts = default_timestamp if t is None else t
        if not have_base:
            base_ts = ts
            have_base = True
        if ts > max_ts or count == 0:
            max_ts = ts
        if offset is None:
            delta += 1
        else:
            want = <int64_t>offset - base_offset
            if want <= delta:
                raise ValueError(f"record offsets must increase: {offset} after {base_offset + delta}")
            delta = want
        if delta > 0x7FFFFFFF:
            raise OverflowError(f"offset delta {delta} does not fit a batch")
        _blob(k, &key, keep)
        _blob(v, &value, keep)
        # A tuple: the sizing pass and the writing pass below must see the same headers.
        if headers is None or (type(headers) is list and not headers):
            headers = ()
        elif type(headers) is not tuple:
            headers = tuple(headers)
        nh = len(headers)
        body = (1 + varlong_size(ts - base_ts) + varlong_size(delta) + blob_size(key.size)
                + blob_size(value.size) + varlong_size(nh))
        for i in range(nh):
            hk, hv = headers[i]
            _header_key(hk, &hkey)
            _blob(hv, &hval, keep)
            body += varlong_size(hkey.size) + hkey.size + blob_size(hval.size)
        if body > 0x7FFFFFFF:
            raise OverflowError("record larger than 2 GiB")
        w = out.room(varlong_size(body) + body)
        w += write_varlong(w, body)
        w[0] = 0  # record attributes: unused, always 0
        w += 1
        w += write_varlong(w, ts - base_ts)
        w += write_varlong(w, delta)
        w = write_blob(w, key.data, key.size)
        w = write_blob(w, value.data, value.size)
        w += write_varlong(w, nh)
        for i in range(nh):
            hk, hv = headers[i]
            _header_key(hk, &hkey)
            _blob(hv, &hval, keep)
            w = write_blob(w, hkey.data, hkey.size)
            w = write_blob(w, hval.data, hval.size)
        out.used = w - out.ptr
        count += 1
        if len(keep) > 64:
            del keep[:]  # the record is written: release the pinned buffers
    if count > 0x7FFFFFFF:
        raise OverflowError("too many records for one batch")
    return (out.finish(), count, delta if count else -1, base_ts if count or base_timestamp is not None
            else -1, max_ts)


def finish_batch(buf, *, int32_t record_count, int32_t last_offset_delta, int64_t base_timestamp,
                 int64_t max_timestamp, int64_t base_offset=0, int32_t partition_leader_epoch=-1,
                 int compression=0, int timestamp_type=0, bint is_transactional=False,
                 bint is_control=False, int64_t producer_id=-1, int16_t producer_epoch=-1,
                 int32_t base_sequence=-1):
    """Write the 61-byte header and CRC-32C into ``buf[:61]``; ``buf[61:]`` is the record stream
    (compressed with ``compression`` or not). Returns ``buf``, a writable buffer.

    Example::

        >>> buf, n, last, bts, mts = encode_records([(b"k", b"v", [], 1000)], 0)
        >>> b = finish_batch(buf, record_count=n, last_offset_delta=last, base_timestamp=bts,
        ...                  max_timestamp=mts)
        >>> len(b), b[16]
        (70, 2)
    """
    cdef unsigned char[::1] view = buf
    cdef Py_ssize_t n = view.shape[0]
    cdef unsigned char* b
    cdef uint32_t crc
    if n < RECORDS_OFFSET:
        raise ValueError(f"finish_batch needs at least {RECORDS_OFFSET} bytes, got {n}")
    if n - LOG_OVERHEAD > 0x7FFFFFFF:
        raise OverflowError("batch larger than 2 GiB")
    if not 0 <= compression <= COMPRESSION_MASK:
        raise ValueError(f"compression codec {compression} out of range")
    b = &view[0]
    cdef uint16_t attrs = compression
    if timestamp_type:
        attrs |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attrs |= TRANSACTIONAL_MASK
    if is_control:
        attrs |= CONTROL_MASK
    store_be64(b, <uint64_t>base_offset)
    store_be32(b + LENGTH_OFFSET, <uint32_t>(n - LOG_OVERHEAD))
    store_be32(b + PARTITION_LEADER_EPOCH_OFFSET, <uint32_t>partition_leader_epoch)
    b[MAGIC_OFFSET] = MAGIC_V2
    store_be16(b + ATTRIBUTES_OFFSET, attrs)
    store_be32(b + LAST_OFFSET_DELTA_OFFSET, <uint32_t>last_offset_delta)
    store_be64(b + BASE_TIMESTAMP_OFFSET, <uint64_t>base_timestamp)
    store_be64(b + MAX_TIMESTAMP_OFFSET, <uint64_t>max_timestamp)
    store_be64(b + PRODUCER_ID_OFFSET, <uint64_t>producer_id)
    store_be16(b + PRODUCER_EPOCH_OFFSET, <uint16_t>producer_epoch)
    store_be32(b + BASE_SEQUENCE_OFFSET, <uint32_t>base_sequence)
    store_be32(b + RECORD_COUNT_OFFSET, <uint32_t>record_count)
    if n >= NOGIL_THRESHOLD:
        with nogil:
            crc = crc32c_update(0, b + ATTRIBUTES_OFFSET, <size_t>(n - ATTRIBUTES_OFFSET))
    else:
        crc = crc32c_update(0, b + ATTRIBUTES_OFFSET, <size_t>(n - ATTRIBUTES_OFFSET))
    store_be32(b + CRC_OFFSET, crc)
    return buf
