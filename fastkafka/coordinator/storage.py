"""Where ``__consumer_offsets`` (and ``__transaction_state``) records go: the store interface
and its two implementations.

An offsets store has ``num_partitions``, ``append(partition, [(key, value | None)], timestamp_ms,
producer=None)`` (durable when it returns; raises a KafkaError otherwise; ``producer`` =
``(producer_id, epoch)`` writes the records as part of that producer's transaction) and
``read(partition)`` yielding every :class:`StoredRecord` in offset order: a record with its
transaction's producer id (-1 outside transactions), or a transaction marker (``control`` =
``records.CONTROL_COMMIT`` / ``CONTROL_ABORT``, no key). :class:`LogOffsetsStore` keeps them as
record batches in the partitions of the compacted topic, through the broker's logs (markers are
written there by the transaction coordinator); :class:`MemoryOffsetsStore` keeps them in lists
for unit tests (``write_marker`` stands in for the coordinator).

Example::

    >>> s = MemoryOffsetsStore(num_partitions=2)
    >>> s.append(1, [(b"k", b"v"), (b"k", None)], 0)
    >>> [(r.key, r.value) for r in s.read(1)]
    [(b'k', b'v'), (b'k', None)]
"""
from __future__ import annotations

from typing import Callable, Iterator, NamedTuple

from .. import errors, records

__all__ = ["OFFSETS_TOPIC", "StoredRecord", "MemoryOffsetsStore", "LogOffsetsStore"]

OFFSETS_TOPIC = "__consumer_offsets"


class StoredRecord(NamedTuple):
    key: bytes | None
    value: bytes | None
    producer_id: int = -1          # the transaction it belongs to (-1: none)
    control: int | None = None     # a marker: records.CONTROL_COMMIT or CONTROL_ABORT


class MemoryOffsetsStore:
    """Lists of records per partition; ``fail`` makes the next appends raise (for error paths)."""

    def __init__(self, num_partitions: int = 50):
        self.num_partitions = num_partitions
        self.partitions: dict[int, list[StoredRecord]] = {}
        self.fail: errors.KafkaError | None = None

    def append(self, partition: int, recs: list[tuple[bytes, bytes | None]], timestamp_ms: int,
               producer: tuple[int, int] | None = None) -> None:
        if self.fail is not None:
            raise self.fail
        pid = -1 if producer is None else producer[0]
        self.partitions.setdefault(partition, []).extend(StoredRecord(k, v, pid) for k, v in recs)

    def write_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        control = records.CONTROL_COMMIT if commit else records.CONTROL_ABORT
        self.partitions.setdefault(partition, []).append(StoredRecord(None, None, producer_id, control))

    def read(self, partition: int) -> Iterator[StoredRecord]:
        return iter(list(self.partitions.get(partition, ())))


class LogOffsetsStore:
    """Records in the logs of ``__consumer_offsets``; ``get_log(partition)`` yields a partition's Log.

    The Log is the log layer's: ``append(buf)`` takes whole record batches (offsets stamped in
    place), ``read(offset, max_bytes)`` a region whose ``read_bytes()`` gives the bytes, and
    ``log_start_offset`` / ``log_end_offset``. Thread-safe (the Log serializes appends).
    """

    def __init__(self, num_partitions: int, get_log: Callable[[int], object], *,
                 compression: int = 0, read_chunk: int = 5 << 20):
        self.num_partitions = num_partitions
        self._get_log = get_log
        self._compression = compression
        self._read_chunk = read_chunk

    def append(self, partition: int, recs: list[tuple[bytes, bytes | None]], timestamp_ms: int,
               producer: tuple[int, int] | None = None) -> None:
        # a transaction's records carry its producer id and epoch (the log fences an older
        # epoch) and no sequence: the coordinator, not a client, writes them (Kafka does too)
        pid, epoch = (-1, -1) if producer is None else producer
        batch = records.build_batch([(k, v, [], timestamp_ms) for k, v in recs],
                                    compression=self._compression, producer_id=pid,
                                    producer_epoch=epoch, is_transactional=producer is not None)
        self._get_log(partition).append(bytearray(batch))

    def read(self, partition: int) -> Iterator[StoredRecord]:
        log = self._get_log(partition)
        offset, end = log.log_start_offset, log.log_end_offset
        chunk = self._read_chunk
        while offset < end:
            data = log.read(offset, chunk).read_bytes()
            if not data:
                return
            before = offset
            for batch in records.iter_batches(data):
                h = batch.header
                if h.next_offset <= offset:
                    continue
                if h.is_control:
                    marker = records.control_record(batch)
                    if marker is not None:
                        yield StoredRecord(None, None, h.producer_id, marker[1])
                else:
                    pid = h.producer_id if h.is_transactional else -1
                    for rec in batch.records():
                        if rec.offset >= offset and rec.key is not None:
                            yield StoredRecord(bytes(rec.key), None if rec.value is None
                                               else bytes(rec.value), pid)
                offset = h.next_offset
            if offset == before:
                raise errors.CorruptRecordError(
                    f"{OFFSETS_TOPIC}-{partition}: no whole batch at offset {offset}")
