"""The descriptor budget: an LRU of open segment files shared by every partition of a LogManager.

Budget: at most ``log.max.open.files`` segment files are held open by the cache (active segments
included: they are reopened on the next append). Index files are mmap'd and closed right after
mapping, so they cost no descriptor. A file evicted while a fetch still holds its FetchRegion stays
open until that region is dropped (the SegmentFile closes when collected), so a reader never sees
a descriptor reused under it; the true count is the budget plus in-flight fetch regions.

Example::

    >>> cache = FileCache(max_open=2)
    >>> cache.open_count
    0
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from .._core.segment import SegmentFile


class FileCache:
    """LRU of SegmentFile objects keyed by their owner. Thread-safe."""

    def __init__(self, max_open: int = 1000):
        self.max_open = max_open
        self._lru: OrderedDict[object, SegmentFile] = OrderedDict()
        self._lock = threading.Lock()
        self.opens = 0

    @property
    def open_count(self) -> int:
        return len(self._lru)

    def get(self, owner: object, opener: Callable[[], SegmentFile]) -> SegmentFile:
        with self._lock:
            f = self._lru.get(owner)
            if f is not None:
                self._lru.move_to_end(owner)
                return f
        f = opener()
        with self._lock:
            other = self._lru.get(owner)
            if other is not None:        # lost a race: keep the first, ours closes when dropped
                self._lru.move_to_end(owner)
                return other
            self._lru[owner] = f
            self.opens += 1
            while len(self._lru) > self.max_open:
                self._lru.popitem(last=False)  # dropped, not closed: see the module docstring
        return f

    def peek(self, owner: object) -> SegmentFile | None:
        with self._lock:
            return self._lru.get(owner)

    def forget(self, owner: object) -> SegmentFile | None:
        with self._lock:
            return self._lru.pop(owner, None)
