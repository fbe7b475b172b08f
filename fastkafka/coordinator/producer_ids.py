"""ProducerIdManager: hands out producer ids for InitProducerId, unique across broker restarts.

Ids are reserved in blocks (``producer.id.block.size``) and the end of the last reserved block
is persisted *before* any id of the block is handed out, so a restart — clean or kill -9 —
continues after it and never repeats an id. A block store is anything with
``reserve(block_size) -> first_id`` that reserves ``[first_id, first_id + block_size - 1]`` for
this broker alone: the embedded broker's :class:`FileBlockStore` keeps the last reserved id in a
small JSON file replaced atomically; in cluster mode ``fastkafka.cluster.producer_ids`` keeps
Kafka's ``/latest_producer_id_block`` znode, shared by every broker.

Thread-safe.

Example::

    >>> import tempfile, os
    >>> tmpdir = tempfile.TemporaryDirectory(); path = os.path.join(tmpdir.name, "producer_id_block")
    >>> m = ProducerIdManager(FileBlockStore(path), block_size=10)
    >>> m.next_id(), m.next_id()
    (0, 1)
    >>> ProducerIdManager(FileBlockStore(path), block_size=10).next_id()   # after a restart
    10
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

import json
import os
import threading

from .. import errors

__all__ = ["ProducerIdManager", "FileBlockStore"]

MAX_PRODUCER_ID = (1 << 63) - 1


class FileBlockStore:
    """The last reserved producer id in ``path`` as ``{"version": 1, "block_end": N}``."""

    def __init__(self, path: str):
        self.path = path

    def read(self) -> int | None:
        try:
            with open(self.path) as f:
                return int(json.load(f)["block_end"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as e:
            # never guess: handing out ids again could merge two producers' sequences
            raise errors.KafkaStorageError(f"{self.path} is unreadable ({e}); refusing to reuse ids")

    def reserve(self, block_size: int) -> int:
        last = self.read()
        start = 0 if last is None else last + 1
        self.write(_block_end(start, block_size))
        return start

    def write(self, block_end: int) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"version": 1, "block_end": block_end}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(os.path.dirname(self.path) or ".", os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _block_end(start: int, block_size: int) -> int:
    """The last id of the block ``start`` begins; KafkaStorageError once ids run out."""
    end = start + block_size - 1
    if end > MAX_PRODUCER_ID:
        raise errors.KafkaStorageError("producer ids exhausted")
    return end


class ProducerIdManager:
    def __init__(self, store, block_size: int = 1000):
        self._store = store
        self._block_size = block_size
        self._lock = threading.Lock()
        self._next = 0
        self._block_end = -1          # nothing reserved yet in this process

    def next_id(self) -> int:
        with self._lock:
            if self._next > self._block_end:
                self._reserve_block()
            pid = self._next
            self._next += 1
            return pid

    def _reserve_block(self) -> None:
        start = self._store.reserve(self._block_size)
        self._next, self._block_end = start, start + self._block_size - 1
