"""LogSegments: the copy-on-write list of a log's segments.

Readers take ``snapshot()`` — an immutable (segments, base_offsets) pair — and binary-search it
without a lock; the writer (holding the Log's lock) publishes a new pair by one attribute store,
so a reader keeps its old snapshot (and its segments' open files) while segments are deleted.

Example::

    >>> segs = LogSegments()
    >>> segs.snapshot()
    ((), ())
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Iterable

from .segment import LogSegment

Snapshot = tuple[tuple[LogSegment, ...], tuple[int, ...]]


class LogSegments:
    """Copy-on-write segment list. Reads are lock-free; mutators are writer-only."""

    __slots__ = ("_snap",)

    def __init__(self, segments: Iterable[LogSegment] = ()):
        self._set(tuple(sorted(segments, key=lambda s: s.base_offset)))

    def _set(self, segs: tuple[LogSegment, ...]) -> None:
        self._snap = (segs, tuple(s.base_offset for s in segs))

    def snapshot(self) -> Snapshot:
        return self._snap

    def __len__(self) -> int:
        return len(self._snap[0])

    def __iter__(self):
        return iter(self._snap[0])

    @property
    def active(self) -> LogSegment:
        return self._snap[0][-1]

    @property
    def first(self) -> LogSegment:
        return self._snap[0][0]

    @staticmethod
    def floor_index(snap: Snapshot, offset: int) -> int:
        """Index of the segment whose base offset is the largest <= ``offset`` (-1 if none)."""
        return bisect_right(snap[1], offset) - 1

    # --- writer side: each publishes a new snapshot ---
    def add(self, segment: LogSegment) -> None:
        segs = self._snap[0]
        if segs and segment.base_offset <= segs[-1].base_offset:
            raise ValueError(f"segment {segment.base_offset} does not come after {segs[-1].base_offset}")
        self._set(segs + (segment,))

    def remove(self, gone: Iterable[LogSegment]) -> None:
        gone_ids = {id(s) for s in gone}
        self._set(tuple(s for s in self._snap[0] if id(s) not in gone_ids))

    def replace(self, old: Iterable[LogSegment], new: Iterable[LogSegment]) -> None:
        """Swap ``old`` segments for ``new`` ones (the cleaner), keeping the list sorted."""
        old_ids = {id(s) for s in old}
        kept = [s for s in self._snap[0] if id(s) not in old_ids]
        self._set(tuple(sorted(kept + list(new), key=lambda s: s.base_offset)))
