# Record batch v2 (magic 2): walk, validate, index and stamp offsets on buffers of many batches.
#
# Byte layout (big-endian; full table in records_layout.pxd):
#   baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 = 2 | crc u32 |
#   attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
#   producerId i64 | producerEpoch i16 | baseSequence i32 | recordCount i32 | records
# The CRC-32C covers attributes .. end, so baseOffset and partitionLeaderEpoch -- the two fields
# the broker stamps on append -- can be rewritten without touching it.
#
# Mechanism only: this module reports what it finds (Validation) and never decides what a
# produce request or a recovering log should do about it. Every walk checks each length against
# the bytes present before using it, so no input, however hostile, reads out of bounds.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t

from fastkafka._core.crc32c cimport crc32c_update
from fastkafka._core.records_layout cimport (
    ATTRIBUTES_OFFSET, BASE_OFFSET_OFFSET, BASE_SEQUENCE_OFFSET, BASE_TIMESTAMP_OFFSET, BATCH_END,
    BATCH_OK, BATCH_SHORT_HEADER, BATCH_TRUNCATED, BatchCursor, COMPRESSION_MASK, CONTROL_MASK,
    CRC_OFFSET, LAST_OFFSET_DELTA_OFFSET, LENGTH_OFFSET, MAGIC_OFFSET, MAX_TIMESTAMP_OFFSET,
    NOGIL_THRESHOLD, PARTITION_LEADER_EPOCH_OFFSET, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET,
    RECORDS_OFFSET, RECORD_COUNT_OFFSET, RecordSpan, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK,
    batch_attributes, batch_base_offset, batch_error_text, batch_is_compressed, batch_last_offset,
    batch_last_offset_delta, batch_max_timestamp, batch_partition_leader_epoch, batch_record_count, cursor_batch, cursor_init,
    cursor_next, load_be16, load_be32, load_be64, record_error_text, scan_record, stamp_batch,
    walk_records)

from fastkafka.errors import CorruptRecordError
from fastkafka._core.records_build import encode_records, finish_batch
from fastkafka._core.records_read import Columns, Record, decode_columns, decode_records

__all__ = ["Validation", "BatchHeader", "validate", "validate_records", "batch_index",
           "assign_offsets", "read_header", "magic_of", "compressed_batches", "count_null_keys",
           "encode_records", "finish_batch",
           "Record", "decode_records", "decode_columns", "Columns",
           "BATCH_OVERHEAD", "LOG_OVERHEAD", "HeaderOffsets"]

BATCH_OVERHEAD = RECORDS_OFFSET       # header bytes before the records
LOG_OVERHEAD = LENGTH_OFFSET + 4      # baseOffset + batchLength: batch size = batchLength + this


class HeaderOffsets:
    """Where each field of a v2 batch header starts, in bytes from the batch's start: the one
    layout (records_layout.pxd) for Python code that patches a header (the log cleaner).

    Example::

        >>> HeaderOffsets.CRC, HeaderOffsets.ATTRIBUTES, HeaderOffsets.RECORDS
        (17, 21, 61)
    """
    BASE_OFFSET = BASE_OFFSET_OFFSET
    LENGTH = LENGTH_OFFSET
    PARTITION_LEADER_EPOCH = PARTITION_LEADER_EPOCH_OFFSET
    MAGIC = MAGIC_OFFSET
    CRC = CRC_OFFSET
    ATTRIBUTES = ATTRIBUTES_OFFSET          # the CRC-32C covers the batch from here to its end
    LAST_OFFSET_DELTA = LAST_OFFSET_DELTA_OFFSET
    BASE_TIMESTAMP = BASE_TIMESTAMP_OFFSET
    MAX_TIMESTAMP = MAX_TIMESTAMP_OFFSET
    PRODUCER_ID = PRODUCER_ID_OFFSET
    PRODUCER_EPOCH = PRODUCER_EPOCH_OFFSET
    BASE_SEQUENCE = BASE_SEQUENCE_OFFSET
    RECORD_COUNT = RECORD_COUNT_OFFSET
    RECORDS = RECORDS_OFFSET

# Record-framing problems are Kafka's INVALID_RECORD; header/CRC problems CORRUPT_MESSAGE.
cdef int CORRUPT_MESSAGE = 2
cdef int INVALID_RECORD = 87


cdef class Validation:
    """What :func:`validate` found. Read-only.

    ``valid_bytes`` is the length of the prefix made of whole, valid batches; ``error`` is
    ``None`` or a :class:`fastkafka.errors.CorruptRecordError` instance (not raised) naming the
    problem and its byte position, ``error_code`` its Kafka code (2 CORRUPT_MESSAGE for
    framing/CRC, 87 INVALID_RECORD for record framing). ``truncated`` is True when the only
    problem is that the buffer ends inside the last batch (normal for fetch responses, a torn
    write for a log). Offsets and timestamps are -1 when there is no valid batch.
    """

    def __repr__(self):
        return (f"Validation(valid_bytes={self.valid_bytes}, batch_count={self.batch_count}, "
                f"record_count={self.record_count}, first_offset={self.first_offset}, "
                f"last_offset={self.last_offset}, max_timestamp={self.max_timestamp}, "
                f"error={self.error!r})")


cdef class BatchHeader:
    """The 61-byte header of one batch, decoded (see :func:`read_header`)."""

    @property
    def compression(self):
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self):
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self):
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self):
        return bool(self.attributes & CONTROL_MASK)

    @property
    def size(self):
        """Bytes of the whole batch: batchLength + 12."""
        return <int64_t>self.batch_length + LENGTH_OFFSET + 4

    @property
    def last_offset(self):
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self):
        return self.base_offset + self.last_offset_delta + 1

    def __repr__(self):
        return (f"BatchHeader(position={self.position}, base_offset={self.base_offset}, "
                f"last_offset_delta={self.last_offset_delta}, record_count={self.record_count}, "
                f"size={self.size}, compression={self.compression}, "
                f"timestamp_type={self.timestamp_type}, max_timestamp={self.max_timestamp})")


cdef struct Walk:
    Py_ssize_t valid_bytes
    Py_ssize_t batch_count
    int64_t record_count
    int64_t first_offset
    int64_t last_offset
    int64_t max_timestamp
    int status          # BATCH_* (> 0) for header problems, REC_* (< 0) for record problems
    Py_ssize_t err_pos  # absolute position of the problem
    int64_t size        # size of the failing batch, for the message


cdef void walk(const unsigned char* buf, Py_ssize_t n, bint check_crc, bint check_records,
               Walk* w) noexcept nogil:
    cdef BatchCursor c
    cdef int status
    cdef Py_ssize_t rec_pos = 0
    cdef const unsigned char* b
    cdef int64_t ts
    w.valid_bytes = 0
    w.batch_count = 0
    w.record_count = 0
    w.first_offset = -1
    w.last_offset = -1
    w.max_timestamp = -1
    w.status = BATCH_OK
    w.err_pos = 0
    w.size = 0
    cursor_init(&c, buf, n)
    while cursor_next(&c, check_crc):
        b = cursor_batch(&c)
        if check_records and not batch_is_compressed(b):
            status = walk_records(b, <Py_ssize_t>c.size, &rec_pos, NULL)
            if status != 0:
                w.status = status
                w.err_pos = c.pos + rec_pos
                w.size = c.size
                return
        if w.batch_count == 0:
            w.first_offset = batch_base_offset(b)
        w.last_offset = batch_last_offset(b)
        ts = batch_max_timestamp(b)
        if ts > w.max_timestamp:
            w.max_timestamp = ts
        w.record_count += batch_record_count(b)
        w.batch_count += 1
        w.valid_bytes = c.pos + c.size
    if c.status != BATCH_END:
        w.status = c.status
        w.err_pos = c.pos
        w.size = c.size


cdef inline const unsigned char* _ptr(const unsigned char[::1] buf) noexcept:
    return &buf[0] if buf.shape[0] else NULL


cdef Validation _validate(const unsigned char[::1] buf, bint check_crc, bint check_records):
    cdef Walk w
    cdef const unsigned char* p = _ptr(buf)
    cdef Py_ssize_t n = buf.shape[0]
    if n >= NOGIL_THRESHOLD:
        with nogil:
            walk(p, n, check_crc, check_records, &w)
    else:
        walk(p, n, check_crc, check_records, &w)
    cdef Validation v = Validation.__new__(Validation)
    v.valid_bytes = w.valid_bytes
    v.batch_count = w.batch_count
    v.record_count = w.record_count
    v.first_offset = w.first_offset
    v.last_offset = w.last_offset
    v.max_timestamp = w.max_timestamp
    v.error = None
    v.error_code = 0
    v.error_position = -1
    v.truncated = False
    if w.status > 0:
        v.error = CorruptRecordError(batch_error_text(w.status, p, w.err_pos, n, w.size))
        v.error_code = CORRUPT_MESSAGE
        v.error_position = w.err_pos
        v.truncated = w.status == BATCH_TRUNCATED or w.status == BATCH_SHORT_HEADER
    elif w.status < 0:
        v.error = CorruptRecordError(
            f"invalid record in batch at position {w.valid_bytes}: "
            f"{record_error_text(w.status, w.err_pos)}")
        # An INVALID_RECORD is still a CorruptRecordError (the contract), answering with 87.
        v.error.code = INVALID_RECORD
        v.error_code = INVALID_RECORD
        v.error_position = w.err_pos
    return v


def validate(const unsigned char[::1] buf, *, bint check_crc=True, bint records=False):
    """Walk the batches in ``buf``: length bounds, magic 2, CRC-32C; stop at the first problem.

    ``records=True`` also frames every record of each *uncompressed* batch (lengths add up to
    the batch, recordCount matches, offsetDelta increasing within lastOffsetDelta): the
    produce-path INVALID_RECORD check. Compressed batches are checked at the header level only.
    Releases the GIL for buffers of 4 KiB and more. Never raises on bad bytes.

    Example::

        >>> from fastkafka.records import build_batch
        >>> v = validate(build_batch([(b"k", b"v", [], 1000)]) * 2)
        >>> v.batch_count, v.record_count, v.error is None
        (2, 2, True)
    """
    return _validate(buf, check_crc, records)


def validate_records(const unsigned char[::1] buf):
    """:func:`validate` with ``records=True``."""
    return _validate(buf, True, True)


def batch_index(const unsigned char[::1] buf, *, bint check_crc=True):
    """``[(position, base_offset, last_offset, max_timestamp, size), ...]`` for the valid prefix.

    What a log needs to rebuild its offset and time indexes. Example::

        >>> from fastkafka.records import build_batch
        >>> batch_index(build_batch([(None, b"v", [], 5)], base_offset=7))
        [(0, 7, 7, 5, 69)]
    """
    cdef BatchCursor c
    cdef const unsigned char* b
    cdef bint found
    cursor_init(&c, _ptr(buf), buf.shape[0])
    out = []
    while True:
        if check_crc and c.end - (c.pos + c.size) >= NOGIL_THRESHOLD:
            with nogil:
                found = cursor_next(&c, True)
        else:
            found = cursor_next(&c, check_crc)
        if not found:
            return out
        b = cursor_batch(&c)
        out.append((c.pos, batch_base_offset(b), batch_last_offset(b), batch_max_timestamp(b), c.size))


def batch_epochs(const unsigned char[::1] buf):
    """``[(base_offset, last_offset, partition_leader_epoch), ...]`` of the batches of ``buf``
    (framed, CRC not checked): where each leader epoch's batches begin (a follower's epoch cache).

    Example::

        >>> from fastkafka.records import build_batch
        >>> batch_epochs(build_batch([(None, b"v", [], 5)], base_offset=7))
        [(7, 7, -1)]
    """
    cdef BatchCursor c
    cdef const unsigned char* b
    cursor_init(&c, _ptr(buf), buf.shape[0])
    out = []
    while cursor_next(&c, False):
        b = cursor_batch(&c)
        out.append((batch_base_offset(b), batch_last_offset(b), batch_partition_leader_epoch(b)))
    return out


cdef Py_ssize_t stamp(unsigned char* buf, Py_ssize_t n, int64_t* next_offset, int32_t epoch,
                      int64_t log_append_time) noexcept nogil:
    """Stamp offsets (and LogAppendTime) on every batch; returns bytes stamped."""
    cdef BatchCursor c
    cdef unsigned char* b
    cursor_init(&c, buf, n)
    while cursor_next(&c, False):
        b = <unsigned char*>cursor_batch(&c)
        stamp_batch(b, c.size, next_offset[0], epoch, log_append_time)
        next_offset[0] += <int64_t>batch_last_offset_delta(b) + 1
    return c.pos if c.status != BATCH_END else n


def assign_offsets(unsigned char[::1] buf, int64_t base_offset, int32_t partition_leader_epoch=-1,
                   int64_t log_append_time=-1):
    """Stamp consecutive offsets on the batches of a writable ``buf``; return the next offset.

    Batch *i+1* gets baseOffset = base of batch *i* + lastOffsetDelta + 1. Sets
    partitionLeaderEpoch; both fields are outside the CRC, which stays as it is unless
    ``log_append_time >= 0``: then each batch becomes LogAppendTime (attributes bit 3) with
    maxTimestamp = ``log_append_time`` and a recomputed CRC. Run :func:`validate` first; a buffer
    that does not frame as whole batches raises CorruptRecordError (batches before the bad one
    are already stamped). Not thread-safe against other writers of ``buf``.

    Example::

        >>> from fastkafka.records import build_batch
        >>> buf = bytearray(build_batch([(None, b"a", [], 1), (None, b"b", [], 2)]))
        >>> assign_offsets(buf, 100, partition_leader_epoch=3)
        102
    """
    cdef Py_ssize_t n = buf.shape[0]
    cdef int64_t next_offset = base_offset
    cdef Py_ssize_t done
    if n == 0:
        return base_offset
    if n >= NOGIL_THRESHOLD and log_append_time >= 0:
        with nogil:
            done = stamp(&buf[0], n, &next_offset, partition_leader_epoch, log_append_time)
    else:
        done = stamp(&buf[0], n, &next_offset, partition_leader_epoch, log_append_time)
    if done != n:
        raise CorruptRecordError(f"assign_offsets: bytes from position {done} do not frame as a batch")
    return next_offset


def read_header(const unsigned char[::1] buf, Py_ssize_t pos=0):
    """Decode the 61-byte batch header at ``pos`` (no CRC or magic check; see ``.magic``).

    Example::

        >>> from fastkafka.records import build_batch
        >>> h = read_header(build_batch([(b"k", b"v", [], 1000)], compression=0))
        >>> h.magic, h.record_count, h.base_timestamp, h.compression
        (2, 1, 1000, 0)
    """
    cdef Py_ssize_t n = buf.shape[0]
    if pos < 0 or n - pos < RECORDS_OFFSET:
        raise CorruptRecordError(
            f"truncated batch header at position {pos}: {max(n - pos, 0)} of {RECORDS_OFFSET} bytes")
    cdef const unsigned char* b = &buf[pos]
    cdef BatchHeader h = BatchHeader.__new__(BatchHeader)
    h.position = pos
    h.base_offset = <int64_t>load_be64(b)
    h.batch_length = <int32_t>load_be32(b + LENGTH_OFFSET)
    h.partition_leader_epoch = <int32_t>load_be32(b + PARTITION_LEADER_EPOCH_OFFSET)
    h.magic = <int8_t>b[MAGIC_OFFSET]
    h.crc = load_be32(b + CRC_OFFSET)
    h.attributes = <int16_t>load_be16(b + ATTRIBUTES_OFFSET)
    h.last_offset_delta = <int32_t>load_be32(b + LAST_OFFSET_DELTA_OFFSET)
    h.base_timestamp = <int64_t>load_be64(b + BASE_TIMESTAMP_OFFSET)
    h.max_timestamp = <int64_t>load_be64(b + MAX_TIMESTAMP_OFFSET)
    h.producer_id = <int64_t>load_be64(b + PRODUCER_ID_OFFSET)
    h.producer_epoch = <int16_t>load_be16(b + PRODUCER_EPOCH_OFFSET)
    h.base_sequence = <int32_t>load_be32(b + BASE_SEQUENCE_OFFSET)
    h.record_count = <int32_t>load_be32(b + RECORD_COUNT_OFFSET)
    return h


def magic_of(const unsigned char[::1] buf, Py_ssize_t pos=0):
    """The magic byte of the batch or legacy message at ``pos`` (it sits at +16 in all
    formats), or -1 when the buffer is too short to tell. Lets callers dispatch v2 vs legacy."""
    if pos < 0 or buf.shape[0] - pos <= MAGIC_OFFSET:
        return -1
    return <int8_t>buf[pos + MAGIC_OFFSET]


def compressed_batches(const unsigned char[::1] buf):
    """``[(ordinal, position, size, codec), ...]`` for the compressed batches among the whole
    batches of ``buf`` (no CRC check): what decode_columns' caller must decompress."""
    cdef BatchCursor c
    cdef Py_ssize_t ordinal = 0
    cursor_init(&c, _ptr(buf), buf.shape[0])
    out = []
    while cursor_next(&c, False):
        if batch_is_compressed(cursor_batch(&c)):
            out.append((ordinal, c.pos, c.size, batch_attributes(cursor_batch(&c)) & COMPRESSION_MASK))
        ordinal += 1
    return out


def count_null_keys(const unsigned char[::1] stream):
    """Records without a key in an (uncompressed) record stream -- a compressed batch's, once
    decompressed: what a compacted topic refuses. Stops at the first record that does not frame
    (the batch's own validation reports that).

    Example::

        >>> from fastkafka.records import build_batch
        >>> count_null_keys(build_batch([(None, b"v", [], 1), (b"k", b"w", [], 2)])[BATCH_OVERHEAD:])
        1
    """
    cdef const unsigned char* s = _ptr(stream)
    cdef Py_ssize_t pos = 0, n = stream.shape[0]
    cdef RecordSpan r
    cdef int64_t nulls = 0
    while pos < n:
        pos = scan_record(s, pos, n, &r)
        if pos < 0:
            break
        if r.key_len < 0:
            nulls += 1
    return nulls
