"""The cleaner's segment groups: which consecutive segments merge into one cleaned segment, and
the crash-safe swap that puts the cleaned segment in place of the group.

Grouping (Kafka's ``groupSegmentsBySize``): from the first cleanable segment on, a group takes
the next segment while the group's log bytes stay <= ``segment.bytes``, each of its offset and
time index sizes stays <= ``segment.index.bytes``, and the next segment's last offset stays within
32-bit relative range of the group's base offset (the index stores ``offset - base`` in 4 bytes).
Sizes are the segments' sizes before cleaning, so a group always fits once cleaned.

The swap of a group ``[F, S1 .. Sn]`` whose cleaned bytes are in ``F.log.cleaned`` (fsync'ed):

1. each ``Si.log`` is renamed ``Si.log.replaced``; the group's aborted transactions (their
   ``.txnindex`` entries, in order, but those whose marker compaction removed) are written to
   ``F.txnindex.cleaned``, fsync'ed and renamed ``F.txnindex.swap``; the directory is fsync'ed;
2. ``F.log.cleaned`` is renamed ``F.log.swap`` and the directory fsync'ed -- the commit point;
3. the ``.replaced`` files and the group's index files are deleted (the ``Si.txnindex`` too);
4. ``F.txnindex.swap`` replaces ``F.txnindex``, then ``F.log.swap`` replaces ``F.log`` (offset
   and time indexes are rebuilt from it), and the new segment replaces the group in the
   copy-on-write list.

Recovery (recovery.py) after a crash at any point: no ``.log.swap`` -> the ``.cleaned`` and
``.txnindex.swap`` files are deleted and every ``.replaced`` file renamed back to ``.log`` (the
log before cleaning); a ``.log.swap`` -> the ``.replaced`` files are deleted, the
``.txnindex.swap`` and the ``.log.swap`` are put in place (the log after cleaning) and the
``Si.txnindex`` files, whose logs are gone, are removed. So a group is replaced entirely or not
at all, never half. Unlike Kafka (which names
the old files ``.deleted`` and, after a crash, infers the group from the swap file's offsets),
the group's members are named on disk, so a group whose last segments were emptied entirely
is still recognised.

Readers are unaffected: the old segments pin their open file and index mappings before any
rename, so a reader of an old snapshot keeps reading the old inodes.

Thread-safety: ``replace_group`` takes the Log's lock; the rest is pure or file-local.

Example::

    >>> group_segments([SegmentInfo(0, 10, 100, 8, 12), SegmentInfo(10, 20, 100, 8, 12)],
    ...                max_bytes=150, max_index_bytes=1024)
    [[0], [1]]
"""
from __future__ import annotations

import os
from typing import NamedTuple, Sequence

from .._core.segment import SegmentFile
from .files import REPLACED_SUFFIX, fsync_dir
from .segment import CLEANED_SUFFIX, SWAP_SUFFIX, LogSegment
from .txn_index import AbortedTxn, write_entries

MAX_RELATIVE_OFFSET = (1 << 31) - 1
_OFFSET_ENTRY_BYTES = 8
_TIME_ENTRY_BYTES = 12


class SegmentInfo(NamedTuple):
    base_offset: int
    end_offset: int            # first offset after the segment (the next segment's base)
    log_bytes: int
    offset_index_bytes: int
    time_index_bytes: int


def group_segments(segs: Sequence[SegmentInfo], max_bytes: int, max_index_bytes: int) -> list[list[int]]:
    """Split ``segs`` (consecutive, oldest first) into runs of indexes that merge into one segment.

    A segment alone is always a group, even when it is larger than the limits."""
    groups: list[list[int]] = []
    i = 0
    while i < len(segs):
        first = segs[i]
        group, size, oi, ti = [i], first.log_bytes, first.offset_index_bytes, first.time_index_bytes
        i += 1
        while i < len(segs):
            s = segs[i]
            if (size + s.log_bytes > max_bytes or oi + s.offset_index_bytes > max_index_bytes
                    or ti + s.time_index_bytes > max_index_bytes
                    or s.end_offset - 1 - first.base_offset > MAX_RELATIVE_OFFSET):
                break
            group.append(i)
            size, oi, ti = size + s.log_bytes, oi + s.offset_index_bytes, ti + s.time_index_bytes
            i += 1
        groups.append(group)
    return groups


def segment_info(seg: LogSegment, end_offset: int) -> SegmentInfo:
    """What grouping needs of ``seg``: a rolled segment's indexes are trimmed, so their file sizes
    are their entries; a missing index (rebuilt lazily) is bounded by one entry per
    ``index.interval.bytes`` and one for the first batch."""
    sizes = []
    for path, entry in ((seg.index_path, _OFFSET_ENTRY_BYTES), (seg.time_index_path, _TIME_ENTRY_BYTES)):
        try:
            sizes.append(os.path.getsize(path))
        except FileNotFoundError:
            sizes.append((seg.size // max(seg.config.index_interval_bytes, 1) + 1) * entry)
    return SegmentInfo(seg.base_offset, end_offset, seg.size, sizes[0], sizes[1])


class CleanedFile:
    """``<first base>.log.cleaned``, written a segment's worth at a time (never the whole group
    in memory). Not thread-safe: one cleaner pass writes it."""

    def __init__(self, first: LogSegment):
        self.path = first.log_path + CLEANED_SUFFIX
        self._file = SegmentFile(self.path, create=True)
        self._file.truncate(0)

    def append(self, data) -> None:
        if len(data):
            self._file.append(data)

    def finish(self) -> str:
        """fsync and close; the path, ready for ``replace_group``."""
        self._file.flush()
        self._file.close()
        return self.path

    def discard(self) -> None:
        self._file.close()
        _unlink(self.path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _step(name: str) -> None:
    """Called after each file operation of the swap; crash tests replace it to stop there."""


def replace_group(log, old: list[LogSegment], cleaned: str,
                  aborted: list[AbortedTxn] | None = None) -> LogSegment | None:
    """Swap the consecutive segments ``old`` of ``log`` for the finished cleaned file ``cleaned``
    (see the module docstring for the order) whose aborted transactions are ``aborted`` (default:
    all of ``old``'s); returns the new segment, or None when retention or truncation changed the
    group meanwhile (the cleaned file is dropped). Takes the Log's lock."""
    first, rest = old[0], old[1:]
    _step("cleaned")
    with log.lock:
        current = log.segments
        ids = {id(s) for s in current}
        if any(id(s) not in ids or s.active for s in old):
            _unlink(cleaned)
            return None
        for s in old:
            s.pin()
        if aborted is None:
            aborted = [e for s in old for e in s.txn_index.entries()]
        txn_swap = first.txn_index.path + SWAP_SUFFIX
        renamed = []
        try:
            for s in rest:
                os.rename(s.log_path, s.log_path + REPLACED_SUFFIX)
                renamed.append(s)
                _step("replaced")
            if aborted:
                write_entries(first.txn_index.path + CLEANED_SUFFIX, aborted)
                os.rename(first.txn_index.path + CLEANED_SUFFIX, txn_swap)
                _step("txnindex")
            if rest or aborted:
                fsync_dir(log.dir)
            swap = first.log_path + SWAP_SUFFIX
            os.rename(cleaned, swap)
        except OSError:                 # not committed: put the group back as it was
            for s in renamed:
                os.rename(s.log_path + REPLACED_SUFFIX, s.log_path)
            for p in (cleaned, first.txn_index.path + CLEANED_SUFFIX, txn_swap):
                _unlink(p)
            raise
        fsync_dir(log.dir)
        _step("committed")
        for s in rest:
            for p in (s.log_path + REPLACED_SUFFIX, s.index_path, s.time_index_path, s.txn_index.path):
                _unlink(p)
            _step("retired")
        for p in (first.index_path, first.time_index_path):   # they describe the old file
            _unlink(p)
        _step("indexes")
        if aborted:
            os.replace(txn_swap, first.txn_index.path)
            _step("txnindex-renamed")
        else:
            _unlink(first.txn_index.path)
        os.replace(swap, first.log_path)
        _step("renamed")
        new = first.reopened(log.config)
        log.replace_segments(old, [new])
    return new
