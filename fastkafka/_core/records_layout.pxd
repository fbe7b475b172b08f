# Record batch v2 (magic 2) byte layout, shared by records.pyx, records_build.pyx,
# records_read.pyx and anything else that must poke at a batch header (legacy conversion).
# Inline helpers only: cimporting this file adds no import-time dependency between modules.
#
# Batch header, 61 bytes, big-endian:
#   off  size field                   notes
#     0     8 baseOffset              written by the broker on append (outside the CRC)
#     8     4 batchLength             bytes after this field, so batch size = batchLength + 12
#    12     4 partitionLeaderEpoch    written by the broker on append (outside the CRC)
#    16     1 magic                   2
#    17     4 crc                     CRC-32C of bytes 21 .. end of batch
#    21     2 attributes              bits 0-2 codec, 3 timestampType (1 = LogAppendTime),
#                                     4 isTransactional, 5 isControl, 6 hasDeleteHorizon
#    23     4 lastOffsetDelta
#    27     8 baseTimestamp           timestamp of the first record
#    35     8 maxTimestamp            rewritten by the broker for LogAppendTime topics
#    43     8 producerId
#    51     2 producerEpoch
#    53     4 baseSequence
#    57     4 recordCount
#    61     . records                 compressed as one stream when bits 0-2 != 0
#
# Record (inside the record stream), all varints zigzag:
#   length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
#   keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value |
#   headerCount varint | headers: keyLength varint, key (utf-8), valueLength varint (-1 = null), value
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from fastkafka._core.byteorder cimport load_be16, load_be32, load_be64, store_be16, store_be32, store_be64
from fastkafka._core.crc32c cimport crc32c_update
from fastkafka._core.varint cimport read_varint, read_varlong, VARINT_TRUNCATED, VARINT_OVERLONG

cdef enum:
    BASE_OFFSET_OFFSET = 0
    LENGTH_OFFSET = 8
    PARTITION_LEADER_EPOCH_OFFSET = 12
    MAGIC_OFFSET = 16
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    LAST_OFFSET_DELTA_OFFSET = 23
    BASE_TIMESTAMP_OFFSET = 27
    MAX_TIMESTAMP_OFFSET = 35
    PRODUCER_ID_OFFSET = 43
    PRODUCER_EPOCH_OFFSET = 51
    BASE_SEQUENCE_OFFSET = 53
    RECORD_COUNT_OFFSET = 57
    RECORDS_OFFSET = 61
    # batch size = batchLength + LOG_OVERHEAD; the smallest legal batchLength is 49 (no records)
    LOG_OVERHEAD = 12
    BATCH_OVERHEAD = 61
    MIN_BATCH_LENGTH = 49
    MAGIC_V2 = 2

    COMPRESSION_MASK = 0x07
    TIMESTAMP_TYPE_MASK = 0x08
    TRANSACTIONAL_MASK = 0x10
    CONTROL_MASK = 0x20

    # The smallest record: length, attributes, timestampDelta, offsetDelta, keyLength,
    # valueLength, headerCount -- one byte each. Bounds recordCount against the bytes present
    # so a lying count can never size an allocation.
    MIN_RECORD_SIZE = 7
    # Release the GIL only when the work is worth the two atomic handoffs.
    NOGIL_THRESHOLD = 4096


cdef inline int64_t batch_size_at(const unsigned char* buf, Py_ssize_t pos) noexcept nogil:
    """Whole-batch size from the header at ``pos`` (caller checked 12 bytes are there)."""
    return <int64_t><int32_t>load_be32(buf + pos + LENGTH_OFFSET) + LOG_OVERHEAD


cdef inline int64_t batch_last_offset(const unsigned char* b) noexcept nogil:
    return <int64_t>load_be64(b) + <int32_t>load_be32(b + LAST_OFFSET_DELTA_OFFSET)


# --- batch framing checks, shared by validate / batch_index / decode_columns -------------------

cdef enum:
    BATCH_OK = 0
    BATCH_SHORT_HEADER = 1       # fewer than 12 bytes left: batchLength unreadable
    BATCH_BAD_MAGIC = 2
    BATCH_BAD_LENGTH = 3         # batchLength < 49 (includes negative)
    BATCH_TRUNCATED = 4          # batch runs past the end of the buffer
    BATCH_BAD_CRC = 5
    BATCH_BAD_COUNT = 6          # recordCount < 0, or more records than bytes can hold
    BATCH_BAD_OFFSET_DELTA = 7   # lastOffsetDelta < 0


cdef inline bint batch_crc_ok(const unsigned char* b, int64_t size) noexcept nogil:
    """Whether the batch's CRC-32C (attributes to the end) matches its crc field."""
    return crc32c_update(0, b + ATTRIBUTES_OFFSET, <size_t>(size - ATTRIBUTES_OFFSET)) == load_be32(b + CRC_OFFSET)


cdef inline int check_batch(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                            bint check_crc, int64_t* size_out) noexcept nogil:
    """Frame and (optionally) checksum the batch at ``pos``; never reads past ``end``.

    Magic is looked at before the length so that a legacy (magic 0/1) message, whose magic
    byte sits at the same position, is reported as such rather than as "too short".
    """
    cdef Py_ssize_t avail = end - pos
    cdef int64_t size
    cdef const unsigned char* b = buf + pos
    cdef int32_t count
    if avail < LOG_OVERHEAD:
        return BATCH_SHORT_HEADER
    size = batch_size_at(buf, pos)
    size_out[0] = size
    if avail > MAGIC_OFFSET and b[MAGIC_OFFSET] != MAGIC_V2:
        return BATCH_BAD_MAGIC
    if size < MIN_BATCH_LENGTH + LOG_OVERHEAD:
        return BATCH_BAD_LENGTH
    if size > avail:
        return BATCH_TRUNCATED
    if check_crc and not batch_crc_ok(b, size):
        return BATCH_BAD_CRC
    count = <int32_t>load_be32(b + RECORD_COUNT_OFFSET)
    if count < 0 or ((b[ATTRIBUTES_OFFSET + 1] & COMPRESSION_MASK) == 0
                     and <int64_t>count * MIN_RECORD_SIZE > size - RECORDS_OFFSET):
        return BATCH_BAD_COUNT
    if <int32_t>load_be32(b + LAST_OFFSET_DELTA_OFFSET) < 0:
        return BATCH_BAD_OFFSET_DELTA
    return BATCH_OK


cdef inline str batch_error_text(int status, const unsigned char* buf, Py_ssize_t pos,
                                 Py_ssize_t end, int64_t size):
    """The message for a non-OK ``check_batch`` status (called with the GIL, error path only)."""
    cdef Py_ssize_t avail = end - pos
    if status == BATCH_SHORT_HEADER:
        return f"truncated batch header at position {pos}: {avail} of {LOG_OVERHEAD} bytes"
    if status == BATCH_BAD_MAGIC:
        return f"unsupported magic {<int8_t>buf[pos + MAGIC_OFFSET]} at position {pos} (expected 2)"
    if status == BATCH_BAD_LENGTH:
        return f"batchLength {size - LOG_OVERHEAD} at position {pos} is below the minimum {MIN_BATCH_LENGTH}"
    if status == BATCH_TRUNCATED:
        return f"truncated batch at position {pos}: batch needs {size} bytes, {avail} available"
    if status == BATCH_BAD_CRC:
        return (f"CRC-32C mismatch in batch at position {pos}: stored "
                f"{load_be32(buf + pos + CRC_OFFSET):#010x}, computed "
                f"{crc32c_update(0, buf + pos + ATTRIBUTES_OFFSET, <size_t>(size - ATTRIBUTES_OFFSET)):#010x}")
    if status == BATCH_BAD_COUNT:
        return (f"recordCount {<int32_t>load_be32(buf + pos + RECORD_COUNT_OFFSET)} at position {pos} "
                f"does not fit the batch's {size - RECORDS_OFFSET} record bytes")
    if status == BATCH_BAD_OFFSET_DELTA:
        return (f"negative lastOffsetDelta {<int32_t>load_be32(buf + pos + LAST_OFFSET_DELTA_OFFSET)} "
                f"in batch at position {pos}")
    return f"invalid batch at position {pos}"


# --- the batch cursor: every walk over a run of batches steps through this ---------------------

cdef struct BatchCursor:
    const unsigned char* buf
    Py_ssize_t end
    Py_ssize_t pos               # the current batch (valid after cursor_next returned True)
    int64_t size                 # its whole size (12 + batchLength)
    int status                   # BATCH_* of the last step; BATCH_END once the run is used up


cdef enum:
    BATCH_END = -1               # (cursor only) no bytes left after the last batch


cdef inline void cursor_init(BatchCursor* c, const unsigned char* buf, Py_ssize_t n) noexcept nogil:
    c.buf = buf
    c.end = n
    c.pos = 0
    c.size = 0
    c.status = BATCH_OK


cdef inline bint cursor_next(BatchCursor* c, bint check_crc) noexcept nogil:
    """Step to the next batch and frame it (check_batch, the CRC too when asked): True when one
    is there; False at the end (status BATCH_END) or at a bad batch (its BATCH_* status, pos at
    it). Never reads past ``end``."""
    if c.status != BATCH_OK:
        return False
    c.pos += c.size
    c.size = 0
    if c.pos >= c.end:
        c.status = BATCH_END
        return False
    c.status = check_batch(c.buf, c.pos, c.end, check_crc, &c.size)
    return c.status == BATCH_OK


cdef inline const unsigned char* cursor_batch(BatchCursor* c) noexcept nogil:
    return c.buf + c.pos


# header fields of the batch at b (framed by check_batch first)
cdef inline int64_t batch_base_offset(const unsigned char* b) noexcept nogil:
    return <int64_t>load_be64(b + BASE_OFFSET_OFFSET)

cdef inline int32_t batch_partition_leader_epoch(const unsigned char* b) noexcept nogil:
    return <int32_t>load_be32(b + PARTITION_LEADER_EPOCH_OFFSET)

cdef inline int64_t batch_base_timestamp(const unsigned char* b) noexcept nogil:
    return <int64_t>load_be64(b + BASE_TIMESTAMP_OFFSET)

cdef inline int64_t batch_max_timestamp(const unsigned char* b) noexcept nogil:
    return <int64_t>load_be64(b + MAX_TIMESTAMP_OFFSET)

cdef inline int32_t batch_record_count(const unsigned char* b) noexcept nogil:
    return <int32_t>load_be32(b + RECORD_COUNT_OFFSET)

cdef inline int32_t batch_last_offset_delta(const unsigned char* b) noexcept nogil:
    return <int32_t>load_be32(b + LAST_OFFSET_DELTA_OFFSET)

cdef inline int64_t batch_producer_id(const unsigned char* b) noexcept nogil:
    return <int64_t>load_be64(b + PRODUCER_ID_OFFSET)

cdef inline int16_t batch_producer_epoch(const unsigned char* b) noexcept nogil:
    return <int16_t>load_be16(b + PRODUCER_EPOCH_OFFSET)

cdef inline int32_t batch_base_sequence(const unsigned char* b) noexcept nogil:
    return <int32_t>load_be32(b + BASE_SEQUENCE_OFFSET)

cdef inline uint16_t batch_attributes(const unsigned char* b) noexcept nogil:
    return load_be16(b + ATTRIBUTES_OFFSET)

cdef inline bint batch_is_compressed(const unsigned char* b) noexcept nogil:
    return (b[ATTRIBUTES_OFFSET + 1] & COMPRESSION_MASK) != 0


cdef inline void stamp_batch(unsigned char* b, int64_t size, int64_t base_offset, int32_t leader_epoch,
                             int64_t log_append_time) noexcept nogil:
    """The broker's writes into a batch on append: baseOffset and partitionLeaderEpoch (outside
    the CRC), and for a LogAppendTime topic (``log_append_time`` >= 0) the timestamp type bit,
    maxTimestamp and so the CRC."""
    store_be64(b + BASE_OFFSET_OFFSET, <uint64_t>base_offset)
    store_be32(b + PARTITION_LEADER_EPOCH_OFFSET, <uint32_t>leader_epoch)
    if log_append_time >= 0:
        store_be16(b + ATTRIBUTES_OFFSET, load_be16(b + ATTRIBUTES_OFFSET) | TIMESTAMP_TYPE_MASK)
        store_be64(b + MAX_TIMESTAMP_OFFSET, <uint64_t>log_append_time)
        store_be32(b + CRC_OFFSET, crc32c_update(0, b + ATTRIBUTES_OFFSET, <size_t>(size - ATTRIBUTES_OFFSET)))


# --- one record, fully framed -------------------------------------------------------------------

cdef enum:
    REC_TRUNCATED = -1           # the stream ends inside the record
    REC_BAD_VARINT = -2          # an overlong varint
    REC_BAD_LENGTH = -3          # negative record length
    REC_FIELD_OVERRUN = -4       # a field runs past the record's own length
    REC_SIZE_MISMATCH = -5       # the fields end before the record's length does
    REC_BAD_HEADER_COUNT = -6    # negative or impossibly large header count
    REC_NULL_HEADER_KEY = -7
    # batch-level record checks (validate_records)
    REC_COUNT_MISMATCH = -8      # records in the stream != recordCount
    REC_BAD_OFFSET_DELTA = -9    # offsetDelta not increasing, or past lastOffsetDelta


cdef struct RecordSpan:
    Py_ssize_t start             # position of the length varint
    Py_ssize_t end               # position after the record
    int64_t timestamp_delta
    int32_t offset_delta
    int8_t attributes
    Py_ssize_t fields_pos        # the key's length varint: what follows the three varints above
    Py_ssize_t key_pos
    int32_t key_len              # -1 = null
    Py_ssize_t value_pos
    int32_t value_len            # -1 = null
    int32_t header_count
    Py_ssize_t headers_pos       # first header's keyLength varint
    int64_t header_key_bytes     # sum over headers, to size column buffers
    int64_t header_value_bytes
    Py_ssize_t err_pos           # where a problem was found


cdef inline object bytes_or_none(const unsigned char* s, Py_ssize_t pos, int32_t n):
    """A nullable field's value (n < 0 = null) as bytes: v2 record keys/values/header values and
    legacy message keys/values alike."""
    if n < 0:
        return None
    return PyBytes_FromStringAndSize(<const char*>s + pos, n)


cdef inline Py_ssize_t _field(const unsigned char* s, Py_ssize_t pos, Py_ssize_t rend,
                              int32_t* len_out, Py_ssize_t* data_out, RecordSpan* r) noexcept nogil:
    """A length-prefixed (-1 = null) field inside a record ending at ``rend``."""
    cdef int32_t n = 0
    cdef Py_ssize_t p = read_varint(s, pos, rend, &n)
    if p < 0:
        r.err_pos = pos
        return REC_FIELD_OVERRUN if p == VARINT_TRUNCATED else REC_BAD_VARINT
    # Like Java's DefaultRecord, any negative length means null (writers use -1).
    if n < 0:
        n = -1
    data_out[0] = p
    len_out[0] = n
    if n > 0:
        if n > rend - p:
            r.err_pos = pos
            return REC_FIELD_OVERRUN
        p += n
    return p


cdef inline Py_ssize_t scan_record(const unsigned char* s, Py_ssize_t pos, Py_ssize_t end,
                                   RecordSpan* r) noexcept nogil:
    """Frame the record at ``pos`` of a record stream ending at ``end``.

    Returns the position after it, or a negative REC_* status with ``r.err_pos`` set. Every
    length is checked against the record's own length before use, so no input reads out of
    bounds and the record's declared length must match its fields exactly.
    """
    cdef int32_t length = 0
    cdef int32_t n = 0
    cdef int32_t hk_len, hv_len
    cdef Py_ssize_t hk_pos, hv_pos
    cdef Py_ssize_t p, rend
    cdef int32_t i
    r.start = pos
    r.err_pos = pos
    p = read_varint(s, pos, end, &length)
    if p < 0:
        return REC_TRUNCATED if p == VARINT_TRUNCATED else REC_BAD_VARINT
    if length < 0:
        return REC_BAD_LENGTH
    if length > end - p:
        return REC_TRUNCATED
    rend = p + length
    if p >= rend:
        return REC_FIELD_OVERRUN
    r.attributes = <int8_t>s[p]
    p += 1
    r.err_pos = p
    p = read_varlong(s, p, rend, &r.timestamp_delta)
    if p < 0:
        return REC_FIELD_OVERRUN if p == VARINT_TRUNCATED else REC_BAD_VARINT
    r.err_pos = p
    p = read_varint(s, p, rend, &r.offset_delta)
    if p < 0:
        return REC_FIELD_OVERRUN if p == VARINT_TRUNCATED else REC_BAD_VARINT
    r.fields_pos = p
    p = _field(s, p, rend, &r.key_len, &r.key_pos, r)
    if p < 0:
        return p
    p = _field(s, p, rend, &r.value_len, &r.value_pos, r)
    if p < 0:
        return p
    r.err_pos = p
    p = read_varint(s, p, rend, &r.header_count)
    if p < 0:
        return REC_FIELD_OVERRUN if p == VARINT_TRUNCATED else REC_BAD_VARINT
    # each header takes at least 2 bytes: this bounds the loop by the bytes present
    if r.header_count < 0 or r.header_count > (rend - p) // 2:
        return REC_BAD_HEADER_COUNT
    r.headers_pos = p
    r.header_key_bytes = 0
    r.header_value_bytes = 0
    for i in range(r.header_count):
        p = _field(s, p, rend, &hk_len, &hk_pos, r)
        if p < 0:
            return p
        if hk_len < 0:
            r.err_pos = hk_pos
            return REC_NULL_HEADER_KEY
        p = _field(s, p, rend, &hv_len, &hv_pos, r)
        if p < 0:
            return p
        r.header_key_bytes += hk_len
        if hv_len > 0:
            r.header_value_bytes += hv_len
    if p != rend:
        r.err_pos = p
        return REC_SIZE_MISMATCH
    r.end = rend
    return rend


cdef inline str record_error_text(int status, Py_ssize_t err_pos):
    """The message for a negative ``scan_record`` status (GIL held, error path only)."""
    what = {
        REC_TRUNCATED: "record stream ends inside a record",
        REC_BAD_VARINT: "overlong varint",
        REC_BAD_LENGTH: "negative record length",
        REC_FIELD_OVERRUN: "field runs past the record's length",
        REC_SIZE_MISMATCH: "record length does not match its fields",
        REC_BAD_HEADER_COUNT: "invalid header count",
        REC_NULL_HEADER_KEY: "null header key",
        REC_COUNT_MISMATCH: "record count does not match recordCount",
        REC_BAD_OFFSET_DELTA: "offsetDelta out of order or past lastOffsetDelta",
    }.get(status, "invalid record")
    return f"{what} at stream position {err_pos}"


cdef inline int walk_records(const unsigned char* b, Py_ssize_t size, Py_ssize_t* err_pos,
                             int64_t* null_keys) noexcept nogil:
    """Frame every record of the uncompressed batch ``b``; 0 or a REC_* status. Records without
    a key are added to ``null_keys`` when it is not NULL (compacted topics refuse them)."""
    cdef RecordSpan r
    cdef Py_ssize_t p = RECORDS_OFFSET
    cdef int32_t expected = <int32_t>load_be32(b + RECORD_COUNT_OFFSET)
    cdef int32_t last_delta = <int32_t>load_be32(b + LAST_OFFSET_DELTA_OFFSET)
    cdef int64_t prev_delta = -1
    cdef int32_t n = 0
    while p < size:
        if n == expected:
            err_pos[0] = p
            return REC_COUNT_MISMATCH
        p = scan_record(b, p, size, &r)
        if p < 0:
            err_pos[0] = r.err_pos
            return <int>p
        if r.offset_delta <= prev_delta or r.offset_delta > last_delta:
            err_pos[0] = r.start
            return REC_BAD_OFFSET_DELTA
        prev_delta = r.offset_delta
        if null_keys != NULL and r.key_len < 0:
            null_keys[0] += 1
        n += 1
    if n != expected:
        err_pos[0] = p
        return REC_COUNT_MISMATCH
    return 0
