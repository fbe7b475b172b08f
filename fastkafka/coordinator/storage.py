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

import threading
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

    The Log is the log layer's: ``append(buf)`` takes whole record batches, ``read(offset,
    max_bytes)`` returns something ``read_bytes`` can turn into bytes (the broker adapts it).
    Thread-safe (each append is one batch; the Log serializes appends).
    """

    READ_CHUNK = 1 << 20

    def __init__(self, num_partitions: int, get_log: Callable[[int], object],
                 read_bytes: Callable[[object, int, int], tuple[bytes, int]]):
        """``read_bytes(log, offset, max_bytes) -> (bytes, log_end_offset)``."""
        self.num_partitions = num_partitions
        self._get_log = get_log
        self._read_bytes = read_bytes
        self._lock = threading.Lock()

    def append(self, partition: int, recs: list[tuple[bytes, bytes | None]], timestamp_ms: int) -> None:
        batch = records.build_batch([(k, v, [], timestamp_ms) for k, v in recs])
        log = self._get_log(partition)
        log.append(batch)

    def read(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        log = self._get_log(partition)
        offset = 0
        while True:
            data, end = self._read_bytes(log, offset, self.READ_CHUNK)
            if not data:
                return
            progressed = False
            for batch in records.iter_batches(data):
                if batch.header.is_control:
                    offset = batch.header.next_offset
                    continue
                for rec in batch.records():
                    if rec.offset >= offset and rec.key is not None:
                        yield bytes(rec.key), None if rec.value is None else bytes(rec.value)
                offset = batch.header.next_offset
                progressed = True
            if offset >= end:
                return
            if not progressed:
                # a single batch larger than the chunk: read it whole
                data, end = self._read_bytes(log, offset, self.READ_CHUNK * 64)
                if not data:
                    return
                first = next(records.iter_batches(data), None)
                if first is None:
                    return
                for rec in first.records():
                    if rec.key is not None:
                        yield bytes(rec.key), None if rec.value is None else bytes(rec.value)
                offset = first.header.next_offset
