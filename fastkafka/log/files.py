"""The descriptor budget: the open segment files of every partition of a LogManager, bounded.

Budget: at most ``log.max.open.files`` segment files are held open by the cache (active segments
included: they are reopened on the next append). Index files are mmap'd and closed right after
mapping, so they cost no descriptor. A file evicted while a fetch still holds its FetchRegion stays
open until that region is dropped (the SegmentFile closes when collected), so a reader never sees
a descriptor reused under it; the true count is the budget plus in-flight fetch regions.

Eviction is CLOCK (second chance), not strict LRU: a hit costs the reader one attribute store
(``owner.referenced = True``) instead of a locked reorder — the fetch path does one per lookup.

Owners (LogSegments) keep the protocol: ``owner.file_opened(f)`` when the cache hands them a file,
``owner.file_dropped()`` when it lets theirs go, and the CLOCK bit ``owner.referenced``.

Example::

    >>> cache = FileCache(max_open=2)
    >>> cache.open_count
    0
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

from .._core.segment import SegmentFile

# A segment merged away by the cleaner, renamed while its group's cleaned file is not yet
# committed (``<base>.log.swap``): recovery puts it back as ``.log`` when no ``.swap`` exists (the
# cleaning never happened) and deletes it when one does (the merged segment replaces it). It can
# not be ``.deleted``, which recovery always removes. See cleaner_swap.py for the whole sequence.
REPLACED_SUFFIX = ".replaced"


class FileCache:
    """Bounded set of open SegmentFiles. Thread-safe."""

    def __init__(self, max_open: int = 1000):
        self.max_open = max_open
        self._entries: dict[Any, SegmentFile] = {}   # insertion order = the clock hand's order
        self._lock = threading.Lock()
        self.opens = 0

    @property
    def open_count(self) -> int:
        return len(self._entries)

    def get(self, owner: Any, opener: Callable[[], SegmentFile]) -> SegmentFile:
        """The owner's open file, opening it (and evicting another) if needed."""
        with self._lock:
            f = self._entries.get(owner)
            if f is not None:
                owner.file_opened(f)
                return f
        f = opener()
        with self._lock:
            other = self._entries.get(owner)
            if other is not None:        # lost a race: keep the first, ours closes when dropped
                owner.file_opened(other)
                return other
            self._entries[owner] = f
            owner.file_opened(f)
            owner.referenced = True
            self.opens += 1
            while len(self._entries) > self.max_open:
                victim = next(iter(self._entries))
                vf = self._entries.pop(victim)
                if victim is owner:              # the file being handed out stays
                    self._entries[victim] = vf
                elif victim.referenced:
                    victim.referenced = False    # second chance: to the back of the clock
                    self._entries[victim] = vf
                else:
                    victim.file_dropped()        # dropped, not closed: see the module docstring
        return f

    def forget(self, owner: Any) -> SegmentFile | None:
        """Drop the owner's file from the cache (it closes once nobody holds it)."""
        with self._lock:
            owner.file_dropped()
            return self._entries.pop(owner, None)


def fsync_dir(path: str) -> None:
    """fsync a directory, so the renames and unlinks done in it are durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
