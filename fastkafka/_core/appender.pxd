# Contract of the append path (appender.pyx): one call per Log.append, a status and a summary
# back. The Log (fastkafka.log, Python) sets the limits from its config and decides what each
# status means; this side only walks, stamps, writes and indexes.
from libc.stdint cimport int16_t, int32_t, int64_t

from fastkafka._core.index cimport OffsetIndex, TimeIndex
from fastkafka._core.segment cimport IndexCursor, SegmentFile

cdef enum AppendStatus:
    APPEND_OK = 0                  # written; the summary says what was appended
    APPEND_ROLL = 1                # the active segment cannot take the set (bytes, age, index, offsets)
    APPEND_INVALID = 2             # the bytes are not valid batches (records.validate says why)
    APPEND_BATCH_TOO_LARGE = 3     # a batch is over max_batch_bytes (max.message.bytes)
    APPEND_SET_TOO_LARGE = 4       # the set is over segment_bytes: no segment can take it
    APPEND_NEEDS_PRODUCER_CHECK = 5  # a batch carries a producer id: the producer state decides
    APPEND_NEEDS_KEY_CHECK = 6     # compact, with compressed batches: keys are inside the codec
    APPEND_NULL_KEY = 7            # compact, and an uncompressed record has no key
    APPEND_CLOSED = 8              # no active segment attached (the log is closed or deleted)
    APPEND_OFFSETS_BEHIND = 9      # FOLLOWER: a batch's offset is below the log end or the batches'
                                   # offsets do not increase (the follower's log diverged)
    APPEND_CONTROL_BATCH = 10      # control batches without CONTROL_ALLOWED: only the broker writes
                                   # transaction markers, a client's produce must not carry them

# What the caller has already settled for this buffer (flags of Appender.append): the retry after
# a status passes what that status asked for, so no check and no walk runs twice.
cdef enum:
    CHECKED_BYTES = 1              # the buffer's batches validated (CRC, records) on a previous call
    CHECKED_PRODUCER = 2           # the producer state accepted its idempotent batch(es)
    CHECKED_KEYS = 4               # every record of the compressed batches has a key
    FOLLOWER = 8                   # a replica's append: keep the leader's offsets, epochs and
                                   # timestamps; the leader checked keys and producers already
                                   # (a leader's markers are copied as they are)
    CONTROL_ALLOWED = 16           # the broker writes its own transaction markers (control batches)


cdef struct AppendLimits:
    int64_t segment_bytes          # segment.bytes
    int64_t segment_ms             # segment.ms: an older non-empty active segment rolls
    int64_t max_batch_bytes        # max.message.bytes
    int64_t flush_messages         # flush.messages: flush once this many are unflushed
    int64_t flush_ms               # flush.ms: ... or the oldest unflushed is this old
    bint log_append_time           # message.timestamp.type=LogAppendTime: stamp maxTimestamp
    bint compact                   # cleanup.policy has compact: every record needs a key


cdef struct AppendSummary:
    int status                     # AppendStatus
    int64_t bytes
    int32_t batch_count
    int64_t record_count
    int64_t offsets                # offsets the set takes (sum of lastOffsetDelta + 1)
    int64_t largest_batch
    int64_t first_offset           # after a write: the offsets given
    int64_t last_offset
    int64_t max_timestamp
    int64_t log_append_time        # -1 unless stamped
    int32_t compressed_batches
    int64_t null_keys              # in uncompressed batches (compact only)
    bint transactional
    int32_t control_batches        # batches with the isControl bit (transaction markers)
    # idempotence: the set's data batches with a producer id (Kafka's produce v3+ sends one;
    # control batches are counted apart, in control_batches)
    int32_t producer_batches
    bint mixed_producers           # more than one producer id, or plain (or control) and
                                   # idempotent batches mixed
    int64_t producer_id
    int16_t producer_epoch
    int32_t base_sequence          # of the first producer batch
    int32_t last_sequence_delta    # last sequence - base_sequence over the producer batches
    int64_t producer_first_offset  # after a write: the producer batches' offsets and timestamp
    int64_t producer_last_offset
    int64_t producer_max_timestamp
    int64_t set_first_offset       # the batches' own offsets (what a FOLLOWER append keeps)
    int64_t set_last_offset
    bint offsets_increase          # each batch starts after the previous one ends
    int32_t first_epoch            # partitionLeaderEpoch of the first and the last batch
    int32_t last_epoch
    int32_t flags                  # CHECKED_* settled by this call (pass back on the retry)
    bint producer_recorded         # the producer's next batch, taken and remembered in its entry
                                   # (the producers lane: see Appender.set_producers)


cdef class Appender:
    cdef public int64_t next_offset
    cdef public int64_t high_watermark
    cdef public int64_t log_start_offset
    cdef public int64_t unflushed_messages
    cdef public int64_t first_unflushed_ms
    cdef public bint deleted
    cdef public bint high_watermark_follows_end   # one in-sync replica: an append commits itself
    cdef AppendLimits limits
    # the active segment, attached by the Log
    cdef SegmentFile _file
    cdef object _open_file, _open_indexes
    cdef IndexCursor _cursor
    cdef OffsetIndex _oi
    cdef TimeIndex _ti
    cdef readonly int64_t base_offset
    cdef readonly int64_t size           # published: readers of the active segment stop here
    cdef readonly int64_t created_ms
    cdef readonly bint attached
    cdef object _acquire, _release, _clock, _flush, _info_type
    cdef dict _producers                 # producer id -> ProducerStateEntry (the Log's producer state)
    cdef bint _c_clock

    cdef bint _appended(self, int64_t next_offset, int64_t records, int64_t now)
    cdef int _append(self, unsigned char* p, Py_ssize_t n, int32_t leader_epoch, int flags,
                     AppendSummary* s, bint* flush_due) except -1
