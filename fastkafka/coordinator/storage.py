"""Where ``__consumer_offsets`` (and ``__transaction_state``) records go: the store interface
and its two implementations.

An offsets store has ``num_partitions``, ``append(partition, [(key, value | None)], timestamp_ms,
producer=None, on_replicated=None)`` and ``read(partition)``. ``append`` writes to the partition's
log (raises a KafkaError when that fails; ``producer`` = ``(producer_id, epoch)`` writes the
records as part of that producer's transaction); with ``on_replicated``, that callback then gets
0 once the write is replicated as the broker requires (``offsets.commit.required.acks``: on a
cluster, when the partition's high watermark passes it) or the error code that ended the wait
(REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER, ...), exactly once, possibly before ``append``
returns and possibly on another thread. ``read`` yields every :class:`StoredRecord` in offset
order: a record with its transaction's producer id (-1 outside transactions), or a transaction
marker (``control`` = ``records.CONTROL_COMMIT`` / ``CONTROL_ABORT``, no key).

:class:`LogOffsetsStore` keeps them as record batches in the partitions of the compacted topic,
through the broker's logs (markers are written there by the transaction coordinator);
:class:`MemoryOffsetsStore` keeps them in lists for unit tests (``write_marker`` stands in for
the coordinator, ``hold`` for replication that has not happened yet).

Example::

    >>> s = MemoryOffsetsStore(num_partitions=2)
    >>> s.append(1, [(b"k", b"v"), (b"k", None)], 0)
    >>> [(r.key, r.value) for r in s.read(1)]
    [(b'k', b'v'), (b'k', None)]
    >>> s.hold = True; s.append(0, [(b"k", b"v")], 0, on_replicated=print)
    >>> s.release(0)            # the held write's callback gets 0; one write was held
    0
    1
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple

from .. import errors, records

if TYPE_CHECKING:
    from ..log import Log

__all__ = ["OFFSETS_TOPIC", "StoredRecord", "MemoryOffsetsStore", "LogOffsetsStore"]

OFFSETS_TOPIC = "__consumer_offsets"


class StoredRecord(NamedTuple):
    key: bytes | None
    value: bytes | None
    producer_id: int = -1          # the transaction it belongs to (-1: none)
    control: int | None = None     # a marker: records.CONTROL_COMMIT or CONTROL_ABORT


class MemoryOffsetsStore:
    """Lists of records per partition; ``fail`` makes the next appends raise (for error paths);
    with ``hold`` set, writes wait for :meth:`release` instead of being replicated at once."""

    def __init__(self, num_partitions: int = 50):
        self.num_partitions = num_partitions
        self.partitions: dict[int, list[StoredRecord]] = {}
        self.fail: errors.KafkaError | None = None
        self.hold = False
        self.held: list[Callable[[int], None]] = []

    def append(self, partition: int, recs: list[tuple[bytes, bytes | None]], timestamp_ms: int,
               producer: tuple[int, int] | None = None,
               on_replicated: Callable[[int], None] | None = None) -> None:
        if self.fail is not None:
            raise self.fail
        pid = -1 if producer is None else producer[0]
        self.partitions.setdefault(partition, []).extend(StoredRecord(k, v, pid) for k, v in recs)
        if on_replicated is not None:
            if self.hold:
                self.held.append(on_replicated)
            else:
                on_replicated(0)

    def release(self, code: int = 0) -> int:
        """End the wait of every held write with ``code``; how many there were."""
        held, self.held = self.held, []
        for on_replicated in held:
            on_replicated(code)
        return len(held)

    def write_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        control = records.CONTROL_COMMIT if commit else records.CONTROL_ABORT
        self.partitions.setdefault(partition, []).append(StoredRecord(None, None, producer_id, control))

    def read(self, partition: int) -> Iterator[StoredRecord]:
        return iter(list(self.partitions.get(partition, ())))


class LogOffsetsStore:
    """Records in the logs of ``__consumer_offsets``; ``get_log(partition)`` yields a partition's Log.

    The Log is the log layer's: ``append(buf)`` takes whole record batches (offsets stamped in
    place), ``read(offset, max_bytes)`` a region whose ``read_bytes()`` gives the bytes, and
    ``log_start_offset`` / ``log_end_offset``. ``writer(partition, batch, on_replicated)``, when
    given, puts a built batch into the partition instead (cluster mode: as its leader, stamped
    with the leader epoch, ``on_replicated`` called once the in-sync replicas have it); without
    one the batch goes to ``get_log(partition)`` and counts as replicated at once (one broker).
    Thread-safe (the Log serializes appends).
    """

    def __init__(self, num_partitions: int, get_log: Callable[[int], Log], *,
                 compression: int = 0, read_chunk: int = 5 << 20,
                 writer: Callable[[int, bytearray, Callable[[int], None] | None], None] | None = None):
        self.num_partitions = num_partitions
        self._get_log = get_log
        self._compression = compression
        self._read_chunk = read_chunk
        self._write = writer or self._write_local

    def append(self, partition: int, recs: list[tuple[bytes, bytes | None]], timestamp_ms: int,
               producer: tuple[int, int] | None = None,
               on_replicated: Callable[[int], None] | None = None) -> None:
        # a transaction's records carry its producer id and epoch (the log fences an older
        # epoch) and no sequence: the coordinator, not a client, writes them (Kafka does too)
        pid, epoch = (-1, -1) if producer is None else producer
        batch = records.build_batch([(k, v, [], timestamp_ms) for k, v in recs],
                                    compression=self._compression, producer_id=pid,
                                    producer_epoch=epoch, is_transactional=producer is not None)
        self._write(partition, bytearray(batch), on_replicated)

    def _write_local(self, partition: int, batch: bytearray,
                     on_replicated: Callable[[int], None] | None) -> None:
        self._get_log(partition).append(batch)
        if on_replicated is not None:
            on_replicated(0)

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
                    for rec in batch.records():    # decoded: every record has its offset
                        if rec.offset is not None and rec.offset >= offset and rec.key is not None:
                            yield StoredRecord(bytes(rec.key), None if rec.value is None
                                               else bytes(rec.value), pid)
                offset = h.next_offset
            if offset == before:
                raise errors.CorruptRecordError(
                    f"{OFFSETS_TOPIC}-{partition}: no whole batch at offset {offset}")
