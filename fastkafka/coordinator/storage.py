"""Where ``__consumer_offsets`` records go: the store interface and its two implementations.

An offsets store has ``num_partitions``, ``append(partition, [(key, value | None)], timestamp_ms)``
(durable when it returns; raises a KafkaError otherwise) and ``read(partition)`` yielding every
``(key, value)`` in offset order. :class:`LogOffsetsStore` keeps them as record batches in the
partitions of the compacted topic, through the broker's logs; :class:`MemoryOffsetsStore` keeps
them in lists for unit tests.

Example::

    >>> s = MemoryOffsetsStore(num_partitions=2)
    >>> s.append(1, [(b"k", b"v"), (b"k", None)], 0)
    >>> list(s.read(1))
    [(b'k', b'v'), (b'k', None)]
"""
from __future__ import annotations

from typing import Callable, Iterator

from .. import errors, records

__all__ = ["OFFSETS_TOPIC", "MemoryOffsetsStore", "LogOffsetsStore"]

OFFSETS_TOPIC = "__consumer_offsets"


class MemoryOffsetsStore:
    """Lists of records per partition; ``fail`` makes the next appends raise (for error paths)."""

    def __init__(self, num_partitions: int = 50):
        self.num_partitions = num_partitions
        self.partitions: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.fail: errors.KafkaError | None = None

    def append(self, partition: int, recs: list[tuple[bytes, bytes | None]], timestamp_ms: int) -> None:
        if self.fail is not None:
            raise self.fail
        self.partitions.setdefault(partition, []).extend(recs)

    def read(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
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

    def append(self, partition: int, recs: list[tuple[bytes, bytes | None]], timestamp_ms: int) -> None:
        batch = records.build_batch([(k, v, [], timestamp_ms) for k, v in recs],
                                    compression=self._compression)
        self._get_log(partition).append(bytearray(batch))

    def read(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        log = self._get_log(partition)
        offset, end = log.log_start_offset, log.log_end_offset
        chunk = self._read_chunk
        while offset < end:
            data = log.read(offset, chunk).read_bytes()
            if not data:
                return
            before = offset
            for batch in records.iter_batches(data):
                if not batch.header.is_control:
                    for rec in batch.records():
                        if rec.offset >= offset and rec.key is not None:
                            yield bytes(rec.key), None if rec.value is None else bytes(rec.value)
                offset = batch.header.next_offset
            if offset == before:
                raise errors.CorruptRecordError(
                    f"{OFFSETS_TOPIC}-{partition}: no whole batch at offset {offset}")
