# Down-conversion: record batches v2 (as stored in the log) -> legacy message sets (magic 0/1)
# for Fetch v0-v3, whose clients cannot read v2.
#
# In: v2 batches back to back (layout in records_layout.pxd), possibly ending in a partial
# batch (a fetch reads up to a byte limit). Out, per batch:
#   uncompressed batch -> one legacy entry per record, absolute offsets kept:
#       offset = baseOffset + offsetDelta
#       timestamp (magic 1) = baseTimestamp + timestampDelta, or maxTimestamp for a
#       LogAppendTime batch (bit 3 of the attributes, copied to each message)
#   compressed batch   -> the same conversion of its decompressed records into an inner set
#       (magic 1: relative offsets = offsetDelta; magic 0: absolute), which the caller
#       compresses and wraps in ONE wrapper message at the absolute offset of the last record
#   control batch      -> nothing (legacy clients have no transaction markers)
# Record headers are dropped: legacy messages have nowhere to put them.
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint16_t

from fastkafka._core.legacy cimport ENTRY_OVERHEAD, message_size, write_message
from fastkafka._core.records_layout cimport *

from fastkafka.errors import CorruptRecordError

__all__ = ["down_convert_parts", "v2_to_legacy"]


cdef int _walk(const unsigned char* s, Py_ssize_t end, int magic, int64_t base_offset,
               int64_t base_ts, int64_t max_ts, bint log_append_time, bint inner,
               unsigned char* out, Py_ssize_t* out_size, int32_t* n, int64_t* last_offset,
               int64_t* max_seen, RecordSpan* r) noexcept nogil:
    """Pass 1 (out == NULL): frame every record, size the output. Pass 2: write the messages.

    Returns 0 or a negative REC_* status (``r.err_pos`` says where).
    """
    cdef Py_ssize_t pos = 0, at = 0
    cdef Py_ssize_t rc
    cdef int64_t ts, absolute
    cdef int attributes = TIMESTAMP_TYPE_MASK if (magic == 1 and log_append_time) else 0
    n[0] = 0
    max_seen[0] = -1
    while pos < end:
        rc = scan_record(s, pos, end, r)
        if rc < 0:
            return <int>rc
        ts = max_ts if log_append_time else base_ts + r.timestamp_delta
        absolute = base_offset + r.offset_delta
        if out != NULL:
            at += write_message(out + at, r.offset_delta if (inner and magic == 1) else absolute,
                                magic, attributes, ts, s + r.key_pos, r.key_len,
                                s + r.value_pos, r.value_len)
        else:
            at += ENTRY_OVERHEAD + message_size(magic, r.key_len, r.value_len)
        if ts > max_seen[0]:
            max_seen[0] = ts
        last_offset[0] = absolute
        n[0] += 1
        pos = rc
    out_size[0] = at
    return 0


def v2_to_legacy(const unsigned char[::1] stream, int magic, int64_t base_offset,
                 int64_t base_timestamp, int64_t max_timestamp, int attributes,
                 int32_t record_count, bint inner):
    """Legacy messages from one batch's uncompressed record stream.

    Returns ``(message_set, last_offset, wrapper_timestamp)``; ``wrapper_timestamp`` is the
    batch's maxTimestamp for LogAppendTime, else the largest record timestamp (what a magic-1
    producer puts on its wrapper). Raises CorruptRecordError when a record does not frame or
    the records do not number ``record_count``.
    """
    cdef RecordSpan r
    cdef Py_ssize_t end = stream.shape[0], size = 0
    cdef const unsigned char* s = &stream[0] if end else NULL
    cdef int32_t n = 0
    cdef int64_t last_offset = -1, max_seen = -1
    cdef bint log_append_time = (attributes & TIMESTAMP_TYPE_MASK) != 0
    cdef int rc
    if magic != 0 and magic != 1:
        raise ValueError(f"down-conversion targets magic 0 or 1, not {magic}")
    if end > NOGIL_THRESHOLD:
        with nogil:
            rc = _walk(s, end, magic, base_offset, base_timestamp, max_timestamp, log_append_time,
                       inner, NULL, &size, &n, &last_offset, &max_seen, &r)
    else:
        rc = _walk(s, end, magic, base_offset, base_timestamp, max_timestamp, log_append_time,
                   inner, NULL, &size, &n, &last_offset, &max_seen, &r)
    if rc < 0:
        raise CorruptRecordError(f"batch at offset {base_offset}: {record_error_text(rc, r.err_pos)}")
    if n != record_count:
        raise CorruptRecordError(f"batch at offset {base_offset} holds {n} records, recordCount says {record_count}")
    result = PyBytes_FromStringAndSize(NULL, size)
    cdef unsigned char* out = <unsigned char*>PyBytes_AS_STRING(result)
    if end > NOGIL_THRESHOLD:
        with nogil:
            _walk(s, end, magic, base_offset, base_timestamp, max_timestamp, log_append_time,
                  inner, out, &size, &n, &last_offset, &max_seen, &r)
    else:
        _walk(s, end, magic, base_offset, base_timestamp, max_timestamp, log_append_time,
              inner, out, &size, &n, &last_offset, &max_seen, &r)
    return result, last_offset, (max_timestamp if log_append_time else max_seen)


def down_convert_parts(buf, int magic):
    """Walk v2 batches; convert uncompressed ones, hand compressed ones back for their codec.

    Returns a list whose items are either ``bytes`` (a converted legacy run) or
    ``(codec, base_offset, base_timestamp, max_timestamp, attributes, record_count, payload)``
    for a compressed batch (payload: a memoryview of its compressed records). Control batches
    are skipped; a partial last batch ends the walk; any other damage (bad CRC-32C, bad
    lengths) raises CorruptRecordError.
    """
    cdef const unsigned char[::1] view = buf
    cdef Py_ssize_t end = view.shape[0]
    cdef BatchCursor c
    cdef const unsigned char* h
    cdef bint found
    cdef int attributes
    cursor_init(&c, &view[0] if end else NULL, end)
    mv = memoryview(buf).cast("B")
    parts = []
    while True:
        if c.end - (c.pos + c.size) > NOGIL_THRESHOLD:
            with nogil:
                found = cursor_next(&c, True)
        else:
            found = cursor_next(&c, True)
        if not found:
            break
        h = cursor_batch(&c)
        attributes = batch_attributes(h)
        if not attributes & CONTROL_MASK:
            header = (batch_base_offset(h), batch_base_timestamp(h), batch_max_timestamp(h), attributes,
                      batch_record_count(h))
            payload = mv[c.pos + RECORDS_OFFSET:c.pos + c.size]
            if attributes & COMPRESSION_MASK:
                parts.append((attributes & COMPRESSION_MASK,) + header + (payload,))
            else:
                converted = v2_to_legacy(payload, magic, *header, False)[0]
                if converted:
                    parts.append(converted)
    if c.status not in (BATCH_END, BATCH_TRUNCATED, BATCH_SHORT_HEADER):
        raise CorruptRecordError(batch_error_text(c.status, c.buf, c.pos, end, c.size))
    return parts
