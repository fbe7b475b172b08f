# Contract of one producer's remembered state (producer_entry.pyx): what the Log's producer state
# (fastkafka.log.producer_state, Python) keeps per producer id, in C fields so the append path
# (appender.pyx) can take a producer's next batch without a round trip through Python.
from libc.stdint cimport int16_t, int32_t, int64_t

# Kafka's NUM_BATCHES_TO_RETAIN: a producer has at most five requests in flight per partition
cdef enum:
    RETAINED = 5

cdef struct BatchMeta:
    int32_t first_seq
    int32_t last_seq
    int64_t first_offset
    int64_t last_offset
    int64_t timestamp


cdef class ProducerStateEntry:
    cdef readonly int64_t producer_id
    cdef public int32_t epoch
    cdef public int64_t last_timestamp
    cdef public int32_t coordinator_epoch
    cdef public int64_t current_txn_first_offset
    cdef BatchMeta _ring[RETAINED]     # the last batches, oldest at _head
    cdef int _head, _count

    cdef bint takes_next(self, int16_t epoch, int32_t first_seq) noexcept
    cdef void remember(self, int32_t first_seq, int32_t last_offset_delta, int64_t first_offset,
                       int64_t last_offset, int64_t timestamp) noexcept
    cdef void push(self, int32_t first_seq, int32_t last_seq, int64_t first_offset, int64_t last_offset,
                   int64_t timestamp) noexcept
