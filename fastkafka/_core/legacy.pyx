# Legacy message sets (magic 0 and 1, Kafka < 0.11) and their conversion to and from record
# batch v2.
#
# Message set: entries back to back, big-endian, no count and no set-level header:
#   offset int64 | messageSize int32 | message (messageSize bytes)
# Message:
#   off  size field
#     0     4 crc          CRC-32 (IEEE, zlib's crc32) of bytes 4 .. end of message
#     4     1 magic        0 or 1
#     5     1 attributes   bits 0-2 codec; bit 3 timestamp type (magic 1 only, 1 = LogAppendTime)
#     6     8 timestamp    magic 1 only
#     .     4 keyLength    -1 = null, then the key
#     .     4 valueLength  -1 = null, then the value
# A compressed set is one *wrapper* message with a null key whose value is the codec applied to
# an inner message set of uncompressed messages of the same magic. Magic 1 inner offsets are
# relative (0..n-1 when nothing was compacted) and the wrapper carries the absolute offset of
# the LAST inner message, so inner absolute = wrapper - last relative + relative; magic 0 inner
# offsets are absolute.
#
# Conversions (the broker stores only v2, record batch layout in records_layout.pxd):
#   legacy_units + to_v2_records (+ records_build.finish_batch) - Produce v0-v2: one v2 batch
#                                              per run of uncompressed messages and per wrapper
#   legacy_down.down_convert_parts + v2_to_legacy - Fetch v0-v3 (module legacy_down)
# The Python side (fastkafka.legacy) only loops over wrappers / batches and applies codecs;
# every per-message step is here. Like records.pyx, nothing here reads past a length it has not
# checked against the bytes present.
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from fastkafka._core.records_layout cimport *
from fastkafka._core.varint cimport varlong_size, write_varlong

from fastkafka.errors import CorruptRecordError

cdef extern from "zlib.h":
    unsigned long crc32(unsigned long crc, const unsigned char* buf, unsigned int len) nogil

__all__ = ["MessageSetInfo", "validate", "decode", "encode", "legacy_units", "to_v2_records",
           "lz4_header_checksum", "lz4_set_header_checksum", "xxh32_digest"]

cdef int64_t NO_TIMESTAMP = -1

_STATUS_TEXT = {
    MSG_TRUNCATED: "message set ends inside a message",
    MSG_BAD_SIZE: "messageSize below the smallest message",
    MSG_BAD_MAGIC: "magic is not 0 or 1",
    MSG_BAD_CRC: "CRC-32 mismatch",
    MSG_BAD_FIELD: "key/value lengths do not fill messageSize",
}




cdef inline uint32_t _message_crc(const unsigned char* message, int32_t size) noexcept nogil:
    return <uint32_t>crc32(0, message + 4, <unsigned int>(size - 4))


cdef int scan_message(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end, bint check_crc,
                      LegacyMessage* m) noexcept nogil:
    """Frame (and checksum) the entry at ``pos``; MSG_* status, ``m`` filled on MSG_OK."""
    cdef Py_ssize_t avail = end - pos
    cdef const unsigned char* b = buf + pos
    cdef const unsigned char* msg
    cdef Py_ssize_t p
    m.pos = pos
    if avail < ENTRY_OVERHEAD:
        return MSG_TRUNCATED
    m.offset = <int64_t>load_be64(b)
    m.size = <int32_t>load_be32(b + 8)
    if m.size < MESSAGE_V0_MIN:
        return MSG_BAD_SIZE
    # Magic before truncation: a v2 batch in a legacy set is reported as such, not as "short".
    if avail > ENTRY_OVERHEAD + 4 and b[ENTRY_OVERHEAD + 4] > 1:
        return MSG_BAD_MAGIC
    if m.size > avail - ENTRY_OVERHEAD:
        return MSG_TRUNCATED
    msg = b + ENTRY_OVERHEAD
    m.end = pos + ENTRY_OVERHEAD + m.size
    m.crc = load_be32(msg)
    m.magic = msg[4]
    m.attributes = msg[5]
    if m.magic == 1:
        if m.size < MESSAGE_V1_MIN:
            return MSG_BAD_SIZE
        m.timestamp = <int64_t>load_be64(msg + 6)
        p = 14
    else:
        m.timestamp = NO_TIMESTAMP
        p = 6
    if check_crc and _message_crc(msg, m.size) != m.crc:
        return MSG_BAD_CRC
    m.key_len = <int32_t>load_be32(msg + p)
    p += 4
    if m.key_len < -1 or m.key_len > m.size - p - 4:
        return MSG_BAD_FIELD
    m.key_pos = pos + ENTRY_OVERHEAD + p
    if m.key_len > 0:
        p += m.key_len
    m.value_len = <int32_t>load_be32(msg + p)
    p += 4
    m.value_pos = pos + ENTRY_OVERHEAD + p
    if m.value_len < -1 or (m.value_len if m.value_len > 0 else 0) != m.size - p:
        return MSG_BAD_FIELD
    return MSG_OK


cdef Py_ssize_t write_message(unsigned char* out, int64_t offset, int magic, int attributes,
                              int64_t timestamp, const unsigned char* key, int32_t key_len,
                              const unsigned char* value, int32_t value_len) noexcept nogil:
    """One whole entry at ``out`` (room for ENTRY_OVERHEAD + _message_size); returns its size."""
    cdef Py_ssize_t size = message_size(magic, key_len, value_len)
    cdef unsigned char* msg = out + ENTRY_OVERHEAD
    cdef Py_ssize_t p = 6
    store_be64(out, <uint64_t>offset)
    store_be32(out + 8, <uint32_t>size)
    msg[4] = <unsigned char>magic
    msg[5] = <unsigned char>attributes
    if magic == 1:
        store_be64(msg + 6, <uint64_t>timestamp)
        p = 14
    store_be32(msg + p, <uint32_t>key_len)
    p += 4
    if key_len > 0:
        memcpy(msg + p, key, key_len)
        p += key_len
    store_be32(msg + p, <uint32_t>value_len)
    p += 4
    if value_len > 0:
        memcpy(msg + p, value, value_len)
    store_be32(msg, _message_crc(msg, <int32_t>size))
    return ENTRY_OVERHEAD + size


cdef _corrupt(int status, Py_ssize_t pos, const unsigned char* buf, LegacyMessage* m, str where):
    text = f"{_STATUS_TEXT.get(status, 'invalid message')} at {where}position {pos}"
    if status == MSG_BAD_CRC:
        text += f" (stored {m.crc:#010x}, computed {_message_crc(buf + pos + ENTRY_OVERHEAD, m.size):#010x})"
    elif status == MSG_BAD_SIZE:
        text += f" (messageSize {m.size})"
    elif status == MSG_BAD_MAGIC:
        text += f" (magic {buf[pos + ENTRY_OVERHEAD + 4]})"
    return CorruptRecordError(text)


# ----------------------------------------------------------------------------- read

cdef class MessageSetInfo:
    """What :func:`validate` found in a message set (top level; wrappers are not opened).

    ``valid_bytes`` is the prefix of whole, valid entries; ``truncated`` is True when the only
    problem is a partial last entry (normal at the end of a fetch response); ``error`` is None or
    an unraised :class:`~fastkafka.errors.CorruptRecordError` naming the problem and
    ``error_position``. ``magic`` is that of the first message (-1 when there is none).
    """
    cdef readonly Py_ssize_t valid_bytes
    cdef readonly Py_ssize_t message_count
    cdef readonly Py_ssize_t wrapper_count
    cdef readonly int64_t first_offset
    cdef readonly int64_t last_offset
    cdef readonly int64_t max_timestamp
    cdef readonly int magic
    cdef readonly bint mixed_magic
    cdef readonly bint truncated
    cdef readonly object error
    cdef readonly Py_ssize_t error_position

    def __repr__(self):
        return (f"MessageSetInfo(valid_bytes={self.valid_bytes}, message_count={self.message_count}, "
                f"wrapper_count={self.wrapper_count}, magic={self.magic}, truncated={self.truncated}, "
                f"error={self.error!r})")


cdef struct SetStats:
    Py_ssize_t pos
    Py_ssize_t count
    Py_ssize_t wrappers
    int64_t first_offset
    int64_t last_offset
    int64_t max_timestamp
    int magic
    bint mixed_magic


cdef int _validate_walk(const unsigned char* b, Py_ssize_t end, bint check_crc, SetStats* st,
                        LegacyMessage* m) noexcept nogil:
    cdef int status = MSG_OK
    while st.pos < end:
        status = scan_message(b, st.pos, end, check_crc, m)
        if status != MSG_OK:
            return status
        if st.count == 0:
            st.first_offset = m.offset
            st.magic = m.magic
        elif m.magic != st.magic:
            st.mixed_magic = True
        st.last_offset = m.offset
        if m.timestamp > st.max_timestamp:
            st.max_timestamp = m.timestamp
        if m.attributes & COMPRESSION_MASK:
            st.wrappers += 1
        st.count += 1
        st.pos = m.end
    return MSG_OK


def validate(const unsigned char[::1] buf, bint check_crc=True):
    """Walk a message set checking sizes, magic and (by default) every CRC-32.

    >>> from fastkafka._core import legacy
    >>> info = legacy.validate(legacy.encode([(b"k", b"v", 0)], 1, 0, 0) + b"\\0\\0")
    >>> (info.message_count, info.truncated, info.error)
    (1, True, None)
    """
    cdef MessageSetInfo info = MessageSetInfo.__new__(MessageSetInfo)
    cdef LegacyMessage m
    cdef SetStats st
    cdef Py_ssize_t end = buf.shape[0]
    cdef const unsigned char* b = &buf[0] if end else NULL
    cdef int status
    st.pos = st.count = st.wrappers = 0
    st.first_offset = st.last_offset = st.max_timestamp = -1
    st.magic = -1
    st.mixed_magic = False
    if end > NOGIL_THRESHOLD:
        with nogil:
            status = _validate_walk(b, end, check_crc, &st, &m)
    else:
        status = _validate_walk(b, end, check_crc, &st, &m)
    info.valid_bytes = st.pos
    info.message_count = st.count
    info.wrapper_count = st.wrappers
    info.first_offset = st.first_offset
    info.last_offset = st.last_offset
    info.max_timestamp = st.max_timestamp
    info.magic = st.magic
    info.mixed_magic = st.mixed_magic
    info.error_position = -1
    if status == MSG_TRUNCATED:
        info.truncated = True
    elif status != MSG_OK:
        info.error = _corrupt(status, st.pos, b, &m, "")
        info.error_position = st.pos
    return info


def decode(const unsigned char[::1] buf, bint check_crc=True):
    """Top-level messages as ``(offset, magic, attributes, timestamp, key, value)`` tuples.

    Wrappers are returned as they are (value = compressed inner set). A partial last entry is
    skipped; anything else wrong raises :class:`~fastkafka.errors.CorruptRecordError`.
    """
    cdef LegacyMessage m
    cdef Py_ssize_t pos = 0, end = buf.shape[0]
    cdef const unsigned char* b = &buf[0] if end else NULL
    cdef int status
    out = []
    while pos < end:
        status = scan_message(b, pos, end, check_crc, &m)
        if status == MSG_TRUNCATED:
            break
        if status != MSG_OK:
            raise _corrupt(status, pos, b, &m, "")
        out.append((m.offset, m.magic, m.attributes, m.timestamp,
                    bytes_or_none(b, m.key_pos, m.key_len), bytes_or_none(b, m.value_pos, m.value_len)))
        pos = m.end
    return out


# ----------------------------------------------------------------------------- build

def encode(messages, int magic, int64_t first_offset, int attributes, int64_t offset_step=1):
    """A flat message set from ``(key, value, timestamp)`` tuples, offsets first_offset + i*step.

    Keys and values are bytes-like or None; timestamps are ints (ignored for magic 0). This is
    the mechanism under :func:`fastkafka.legacy.build_message_set`, which owns the policy
    (default timestamps, compression, wrapper offsets).
    """
    if magic != 0 and magic != 1:
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    cdef list views = []
    cdef Py_ssize_t total = 0
    cdef const unsigned char[::1] kv, vv
    cdef int32_t klen, vlen
    for key, value, timestamp in messages:
        kv = key if key is not None else None
        vv = value if value is not None else None
        klen = <int32_t>kv.shape[0] if key is not None else -1
        vlen = <int32_t>vv.shape[0] if value is not None else -1
        views.append((kv, klen, vv, vlen, <int64_t>(timestamp if timestamp is not None and magic == 1 else NO_TIMESTAMP)))
        total += ENTRY_OVERHEAD + message_size(magic, klen, vlen)
    result = PyBytes_FromStringAndSize(NULL, total)
    cdef unsigned char* out = <unsigned char*>PyBytes_AS_STRING(result)
    cdef Py_ssize_t at = 0
    cdef int64_t offset = first_offset
    cdef int64_t ts
    for kv, klen, vv, vlen, ts in views:
        at += write_message(out + at, offset, magic, attributes, ts,
                            &kv[0] if klen > 0 else NULL, klen, &vv[0] if vlen > 0 else NULL, vlen)
        offset += offset_step
    return result


# ----------------------------------------------------------------------------- legacy -> v2

def legacy_units(buf):
    """Split a produced message set into conversion units (the partial last entry is dropped).

    Returns ``[(codec, magic, attributes, offset, timestamp, payload), ...]``: for codec 0 a run
    of consecutive uncompressed messages (payload = that slice of ``buf``), otherwise one wrapper
    (payload = its compressed value). Payloads are memoryviews of ``buf``: no copies.
    """
    cdef const unsigned char[::1] view = buf
    cdef LegacyMessage m
    cdef Py_ssize_t pos = 0, end = view.shape[0], run_start = -1
    cdef const unsigned char* b = &view[0] if end else NULL
    cdef int status
    cdef int run_magic = 0, run_attributes = 0
    cdef int64_t run_offset = 0, run_timestamp = 0
    mv = memoryview(buf).cast("B")
    units = []
    while pos < end:
        status = scan_message(b, pos, end, True, &m)
        if status == MSG_TRUNCATED:
            break
        if status != MSG_OK:
            raise _corrupt(status, pos, b, &m, "")
        if m.attributes & COMPRESSION_MASK:
            if run_start >= 0:
                units.append((0, run_magic, run_attributes, run_offset, run_timestamp, mv[run_start:pos]))
                run_start = -1
            if m.key_len > 0:
                pass  # Kafka ignores a wrapper key; so do we
            if m.value_len < 0:
                raise CorruptRecordError(f"compressed wrapper message at position {pos} has a null value")
            units.append((m.attributes & COMPRESSION_MASK, m.magic, m.attributes, m.offset, m.timestamp,
                          mv[m.value_pos:m.value_pos + m.value_len]))
        elif run_start < 0:
            run_start = pos
            run_magic, run_attributes, run_offset, run_timestamp = m.magic, m.attributes, m.offset, m.timestamp
        pos = m.end
    if run_start >= 0:
        units.append((0, run_magic, run_attributes, run_offset, run_timestamp, mv[run_start:pos]))
    return units


cdef inline Py_ssize_t _record_body_size(int64_t ts_delta, int32_t offset_delta,
                                         int32_t key_len, int32_t value_len) noexcept nogil:
    # attributes + timestampDelta + offsetDelta + key + value + headerCount (0)
    return (1 + varlong_size(ts_delta) + varlong_size(offset_delta)
            + varlong_size(key_len) + (key_len if key_len > 0 else 0)
            + varlong_size(value_len) + (value_len if value_len > 0 else 0) + 1)


cdef int _legacy_walk(const unsigned char* b, Py_ssize_t end, bint check_crc, bint inner, int wrapper_magic,
                      bint use_wrapper_ts, int64_t wrapper_ts, unsigned char* out,
                      Py_ssize_t* out_size, int32_t* count, int64_t* base_ts, int64_t* max_ts,
                      Py_ssize_t* err_pos, LegacyMessage* m) noexcept nogil:
    """Pass 1 (out == NULL): check every message, size the v2 record stream. Pass 2: write it.

    Returns MSG_OK, a MSG_* status, or -1 (nested compression / magic differing from wrapper).
    """
    cdef Py_ssize_t pos = 0, at = 0, body
    cdef int status
    cdef int32_t i = 0
    cdef int64_t ts
    while pos < end:
        err_pos[0] = pos
        status = scan_message(b, pos, end, check_crc and out == NULL, m)
        if status != MSG_OK:
            return status
        if inner and ((m.attributes & COMPRESSION_MASK) or m.magic != wrapper_magic):
            return -1
        ts = wrapper_ts if use_wrapper_ts else m.timestamp
        if i == 0:
            base_ts[0] = ts
            max_ts[0] = ts
        elif ts > max_ts[0]:
            max_ts[0] = ts
        body = _record_body_size(ts - base_ts[0], i, m.key_len, m.value_len)
        if out != NULL:
            at += write_varlong(out + at, body)
            out[at] = 0
            at += 1
            at += write_varlong(out + at, ts - base_ts[0])
            at += write_varlong(out + at, i)
            at += write_varlong(out + at, m.key_len)
            if m.key_len > 0:
                memcpy(out + at, b + m.key_pos, m.key_len)
                at += m.key_len
            at += write_varlong(out + at, m.value_len)
            if m.value_len > 0:
                memcpy(out + at, b + m.value_pos, m.value_len)
                at += m.value_len
            out[at] = 0
            at += 1
        else:
            at += varlong_size(body) + body
        i += 1
        pos = m.end
    out_size[0] = at
    count[0] = i
    return MSG_OK


def to_v2_records(const unsigned char[::1] buf, bint inner, int wrapper_magic=0,
                  int wrapper_attributes=0, int64_t wrapper_timestamp=-1, Py_ssize_t reserve=0,
                  bint check_crc=True):
    """An uncompressed v2 record stream from a flat set of uncompressed legacy messages.

    ``inner``: ``buf`` is a decompressed wrapper's set, so every message must be uncompressed
    and of ``wrapper_magic``, and a magic-1 LogAppendTime wrapper's timestamp replaces theirs.
    Offset deltas are 0..n-1; magic-0 messages get timestamp -1. Returns
    ``(stream, count, base_timestamp, max_timestamp)``, ``stream`` a bytearray that starts with
    ``reserve`` zero bytes (room for records_build.finish_batch's header: no copy).
    ``check_crc=False`` skips the CRC-32 check for a run :func:`legacy_units` already checked. Raises CorruptRecordError for any bad
    message, including a partial one (a set that is converted must be whole).
    """
    cdef LegacyMessage m
    cdef Py_ssize_t end = buf.shape[0], size = 0, err_pos = 0
    cdef const unsigned char* b = &buf[0] if end else NULL
    cdef int32_t count = 0
    cdef int64_t base_ts = NO_TIMESTAMP, max_ts = NO_TIMESTAMP
    cdef bint use_wrapper_ts = inner and wrapper_magic == 1 and (wrapper_attributes & TIMESTAMP_TYPE_MASK)
    cdef int status
    if end > NOGIL_THRESHOLD:
        with nogil:
            status = _legacy_walk(b, end, check_crc, inner, wrapper_magic, use_wrapper_ts, wrapper_timestamp,
                                  NULL, &size, &count, &base_ts, &max_ts, &err_pos, &m)
    else:
        status = _legacy_walk(b, end, check_crc, inner, wrapper_magic, use_wrapper_ts, wrapper_timestamp,
                              NULL, &size, &count, &base_ts, &max_ts, &err_pos, &m)
    where = "inner " if inner else ""
    if status == -1:
        raise CorruptRecordError(
            f"inner message at position {err_pos} is compressed or has magic {m.magic} "
            f"inside a magic {wrapper_magic} wrapper")
    if status != MSG_OK:
        raise _corrupt(status, err_pos, b, &m, where)
    result = bytearray(reserve + size)
    cdef unsigned char[::1] result_view = result
    cdef unsigned char* out = &result_view[0] + reserve if reserve + size else NULL
    if end > NOGIL_THRESHOLD:
        with nogil:
            _legacy_walk(b, end, check_crc, inner, wrapper_magic, use_wrapper_ts, wrapper_timestamp, out,
                         &size, &count, &base_ts, &max_ts, &err_pos, &m)
    else:
        _legacy_walk(b, end, check_crc, inner, wrapper_magic, use_wrapper_ts, wrapper_timestamp, out,
                     &size, &count, &base_ts, &max_ts, &err_pos, &m)
    return result, count, base_ts, max_ts


# ----------------------------------------------------------------------------- lz4 on magic 0

# xxHash32 primes. LZ4 frames carry HC = second byte of xxh32(frame descriptor); Kafka before
# 0.10 (KAFKA-3160) hashed the 4 magic bytes too, and magic-0 messages keep that quirk.
cdef enum:
    _P1 = 2654435761U
    _P2 = 2246822519U
    _P3 = 3266489917U
    _P4 = 668265263U
    _P5 = 374761393U


cdef inline uint32_t _rotl(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef inline uint32_t _le32(const unsigned char* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint32_t _round(uint32_t acc, uint32_t lane) noexcept nogil:
    return _rotl(acc + lane * <uint32_t>_P2, 13) * <uint32_t>_P1


cdef uint32_t xxh32(const unsigned char* p, size_t n, uint32_t seed) noexcept nogil:
    cdef const unsigned char* end = p + n
    cdef uint32_t h, v1, v2, v3, v4
    if n >= 16:
        v1 = seed + <uint32_t>_P1 + <uint32_t>_P2
        v2 = seed + <uint32_t>_P2
        v3 = seed
        v4 = seed - <uint32_t>_P1
        while p + 16 <= end:
            v1 = _round(v1, _le32(p))
            v2 = _round(v2, _le32(p + 4))
            v3 = _round(v3, _le32(p + 8))
            v4 = _round(v4, _le32(p + 12))
            p += 16
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
    else:
        h = seed + <uint32_t>_P5
    h += <uint32_t>n
    while p + 4 <= end:
        h = _rotl(h + _le32(p) * <uint32_t>_P3, 17) * <uint32_t>_P4
        p += 4
    while p < end:
        h = _rotl(h + p[0] * <uint32_t>_P5, 11) * <uint32_t>_P1
        p += 1
    h ^= h >> 15
    h *= <uint32_t>_P2
    h ^= h >> 13
    h *= <uint32_t>_P3
    h ^= h >> 16
    return h


def xxh32_digest(const unsigned char[::1] data, uint32_t seed=0):
    """xxHash32 of ``data`` (exposed for tests: ``xxh32_digest(b"") == 0x02CC5D05``)."""
    return xxh32(&data[0] if data.shape[0] else NULL, data.shape[0], seed)


cdef Py_ssize_t _lz4_hc_position(const unsigned char[::1] frame) except -1:
    if frame.shape[0] < 7 or _le32(&frame[0]) != 0x184D2204:
        raise CorruptRecordError("not an LZ4 frame (bad magic or shorter than a frame header)")
    cdef Py_ssize_t hc = 6 + (8 if frame[4] & 0x08 else 0) + (4 if frame[4] & 0x01 else 0)
    if frame.shape[0] <= hc:
        raise CorruptRecordError("truncated LZ4 frame header")
    return hc


def lz4_header_checksum(const unsigned char[::1] frame, bint broken):
    """The HC byte an LZ4 frame header should carry: standard, or Kafka's broken (magic 0) one.

    Returns ``(expected, stored)``.
    """
    cdef Py_ssize_t hc = _lz4_hc_position(frame)
    cdef Py_ssize_t start = 0 if broken else 4
    return (xxh32(&frame[start], hc - start, 0) >> 8) & 0xFF, frame[hc]


def lz4_set_header_checksum(frame, bint broken):
    """``frame`` with its HC byte recomputed the standard way, or Kafka's broken way."""
    expected, stored = lz4_header_checksum(frame, broken)
    if expected == stored:
        return frame
    out = bytearray(frame)
    out[_lz4_hc_position(out)] = expected
    return bytes(out)
