# One producer's remembered state on one partition (contract: producer_entry.pxd): its epoch,
# its last five data batches (sequence range, offsets, timestamp) in a ring, the time of its
# last batch, the coordinator epoch of its last marker and its ongoing transaction's first offset.
#
# Storage and sequence arithmetic only: which batch is a duplicate, out of order or fenced, and
# what a transaction allows, is fastkafka.log.producer_state's (Python). The one rule written
# here is ``takes_next``: the append path's lane for the common idempotent batch, the next
# sequence of the current epoch outside a transaction -- the case that policy accepts without
# a question -- so it can be checked and remembered under the Log's lock in C.
from collections import namedtuple

from libc.stdint cimport int16_t, int32_t, int64_t

cdef int64_t SEQUENCE_MODULUS = 2147483648    # sequences wrap at 2^31

BatchMetadata = namedtuple("BatchMetadata", "first_seq last_seq first_offset last_offset timestamp")
BatchMetadata.__module__ = "fastkafka.log.producer_state"
BatchMetadata.__doc__ = "A remembered data batch: its sequence range, offsets and max timestamp."
_new = tuple.__new__


cdef class ProducerStateEntry:
    """One producer's epoch, its last data batches on this partition (oldest first) and its
    transaction: ``current_txn_first_offset`` (-1: none ongoing) and the ``coordinator_epoch``
    of its last marker (-1: none yet). What DescribeProducers reports. Not thread-safe (the
    Log's lock).

    Example::

        >>> e = ProducerStateEntry(7, 0)
        >>> e.add(BatchMetadata(0, 4, 100, 104, 1)); e.add(BatchMetadata(5, 9, 105, 109, 2))
        >>> e.last_seq, e.last_timestamp, e.find_duplicate(0, 4).first_offset
        (9, 2, 100)
        >>> e.set_epoch(1); e.batches, e.last_seq
        ((), -1)
    """

    def __init__(self, int64_t producer_id, int32_t epoch):
        self.producer_id = producer_id
        self.epoch = epoch
        self.last_timestamp = -1
        self.coordinator_epoch = -1
        self.current_txn_first_offset = -1

    @property
    def batches(self) -> tuple:
        """The remembered batches, oldest first (BatchMetadata tuples)."""
        cdef int i
        cdef BatchMeta* b
        out = []
        for i in range(self._count):
            b = &self._ring[(self._head + i) % RETAINED]
            out.append(_new(BatchMetadata, (b.first_seq, b.last_seq, b.first_offset, b.last_offset,
                                            b.timestamp)))
        return tuple(out)

    @batches.setter
    def batches(self, metas):
        """Keep the newest five of ``metas`` (oldest first); the last timestamp stays."""
        self._head = self._count = 0
        for m in metas:
            self.push(m[0], m[1], m[2], m[3], m[4])

    @property
    def last_seq(self) -> int:
        if self._count == 0:
            return -1
        return self._ring[(self._head + self._count - 1) % RETAINED].last_seq

    def find_duplicate(self, int32_t first_seq, int32_t last_seq):
        """The remembered batch with this sequence range (a retried one), else None."""
        cdef int i
        cdef BatchMeta* b
        for i in range(self._count):
            b = &self._ring[(self._head + i) % RETAINED]
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return _new(BatchMetadata, (b.first_seq, b.last_seq, b.first_offset, b.last_offset,
                                            b.timestamp))
        return None

    def add(self, meta) -> None:
        """Remember a batch (a BatchMetadata); its timestamp becomes the last one."""
        self.push(meta[0], meta[1], meta[2], meta[3], meta[4])
        self.last_timestamp = meta[4]

    def record(self, int32_t first_seq, int32_t last_offset_delta, int64_t first_offset,
               int64_t last_offset, int64_t timestamp) -> None:
        """Remember a data batch that begins at ``first_seq`` and holds ``last_offset_delta + 1``
        records; its timestamp becomes the last one."""
        self.remember(first_seq, last_offset_delta, first_offset, last_offset, timestamp)

    def set_epoch(self, int32_t epoch) -> None:
        """A batch or marker of another epoch: its sequences start over (the transaction and the
        coordinator epoch carry on, as in Kafka)."""
        if epoch != self.epoch:
            self.epoch = epoch
            self._head = self._count = 0

    cdef bint takes_next(self, int16_t epoch, int32_t first_seq) noexcept:
        # the batch that continues this epoch's sequence, outside a transaction: never a
        # duplicate (the remembered ranges end at last_seq), never out of order
        if epoch != self.epoch or self._count == 0 or self.current_txn_first_offset >= 0:
            return False
        return first_seq == (<int64_t>self._ring[(self._head + self._count - 1) % RETAINED].last_seq + 1) \
            % SEQUENCE_MODULUS

    cdef void remember(self, int32_t first_seq, int32_t last_offset_delta, int64_t first_offset,
                       int64_t last_offset, int64_t timestamp) noexcept:
        self.push(first_seq, <int32_t>((<int64_t>first_seq + last_offset_delta) % SEQUENCE_MODULUS),
                  first_offset, last_offset, timestamp)
        self.last_timestamp = timestamp

    cdef void push(self, int32_t first_seq, int32_t last_seq, int64_t first_offset, int64_t last_offset,
                   int64_t timestamp) noexcept:
        cdef BatchMeta* b
        if self._count == RETAINED:        # the oldest goes
            b = &self._ring[self._head]
            self._head = (self._head + 1) % RETAINED
        else:
            b = &self._ring[(self._head + self._count) % RETAINED]
            self._count += 1
        b.first_seq = first_seq
        b.last_seq = last_seq
        b.first_offset = first_offset
        b.last_offset = last_offset
        b.timestamp = timestamp

    def __repr__(self):
        return (f"ProducerStateEntry(producer_id={self.producer_id}, epoch={self.epoch}, "
                f"last_seq={self.last_seq}, txn_first_offset={self.current_txn_first_offset})")
