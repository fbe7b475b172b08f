"""Loading a partition directory at startup, and crash recovery.

On every open the active segment's tail -- from its last offset-index entry to the end of the
file -- is revalidated and truncated at the first invalid byte: a clean-shutdown marker does not
stop anyone from damaging a file while the broker is down, and an unchecked tail would be served
to consumers or hide the log end. After a clean shutdown (marker present) the older segments are
trusted and opened lazily. Otherwise every segment from the one holding the recovery point on is
revalidated batch by batch (size within
the file, CRC-32C) and truncated at the first invalid byte — a torn write, garbage appended, or a
zero-filled tail — segments after a truncated one are deleted, and indexes are rebuilt. Nothing
before the first invalid byte is lost. Leftovers of interrupted deletes (``.deleted``) and
cleanings (``.cleaned``) are removed; completed cleanings (``.swap``) are put in place. Segments
a cleaning was merging away (``.replaced``) are deleted when its ``.swap`` exists (committed) and
restored otherwise, so a merge of several segments is undone or completed whole (cleaner_swap.py).
Transaction indexes (``.txnindex``) are derived data too: the Log drops the entries its
producer-state replay covers and the replay writes them again (transactions.py).

Example::

    >>> import os, tempfile
    >>> from fastkafka.log import Log
    >>> from fastkafka.records import build_batch
    >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(os.path.join(tmpdir.name, "orders-0"))
    >>> for ts in (1, 2, 3):
    ...     _ = log.append(bytearray(build_batch([(b"k", b"v", [], ts)])))
    >>> log.close()
    >>> with open(log.active_segment.log_path, "ab") as f:   # a crash left 17 zero bytes
    ...     _ = f.write(bytes(17))
    >>> loaded = load_segments(log.dir, LogConfig(), FileCache(), recovery_point=0,
    ...                        clean_shutdown=False, now_ms=0)
    >>> loaded.next_offset, loaded.bytes_dropped, os.path.getsize(log.active_segment.log_path)
    (3, 17, 210)
    >>> for seg in loaded.segments:
    ...     seg.close()
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

import logging
import os
from typing import NamedTuple

from ..config import LogConfig
from .files import REPLACED_SUFFIX, FileCache
from .segment import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX, LogSegment
from .txn_index import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)

_SEGMENT_INDEXES = (".index", ".timeindex", TXN_INDEX_SUFFIX)


class Loaded(NamedTuple):
    segments: list[LogSegment]
    next_offset: int
    bytes_dropped: int


def _tidy(dir: str) -> list[int]:
    """Finish or undo interrupted file operations; return the base offsets of the .log files."""
    names = os.listdir(dir)
    # one cleaning at a time per log: a .log.swap means its group's replacement was committed
    committed = any(name.endswith(".log" + SWAP_SUFFIX) for name in names)
    for name in names:
        path = os.path.join(dir, name)
        if name.endswith(REPLACED_SUFFIX):
            if committed:
                os.unlink(path)
            else:                        # the cleaning never happened: the segment comes back
                os.replace(path, path[: -len(REPLACED_SUFFIX)])
        elif name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, ".tmp")):
            os.unlink(path)
        elif name.endswith(SWAP_SUFFIX):
            final = path[: -len(SWAP_SUFFIX)]
            if final.endswith(TXN_INDEX_SUFFIX) and not committed:
                os.unlink(path)          # the merged index of a cleaning that never happened
                continue
            os.replace(path, final)
            if final.endswith(".log"):   # its indexes describe the old file: derived data, rebuild
                for ext in (".index", ".timeindex"):
                    try:
                        os.unlink(final[:-4] + ext)
                    except FileNotFoundError:
                        pass
    bases = set()
    names = os.listdir(dir)
    for name in names:
        stem, ext = os.path.splitext(name)
        if ext == ".log" and stem.isdigit():
            bases.add(int(stem))
    for name in names:   # indexes without their log are garbage
        stem, ext = os.path.splitext(name)
        if ext in _SEGMENT_INDEXES and stem.isdigit() and int(stem) not in bases:
            os.unlink(os.path.join(dir, name))
    return sorted(bases)


def _dropped(seg: LogSegment, lost: int) -> int:
    if lost:
        log.warning("%s: truncated %d invalid bytes at position %d (next offset %d)",
                    seg.log_path, lost, seg.size, seg.next_offset())
    return lost


def load_segments(dir: str, config: LogConfig, files: FileCache, *, recovery_point: int,
                  clean_shutdown: bool, now_ms: int) -> Loaded:
    """Open (and if needed recover) the segments of one partition directory. Startup only."""
    bases = _tidy(dir)
    if not bases:
        bases = [max(recovery_point, 0)] if clean_shutdown else [0]
    segs = [LogSegment(dir, b, config, files, active=(i == len(bases) - 1), created_ms=now_ms)
            for i, b in enumerate(bases)]
    dropped = 0
    if clean_shutdown:
        dropped = _dropped(segs[-1], segs[-1].recover_tail())
    else:
        first = 0
        for i, s in enumerate(segs):
            if s.base_offset <= recovery_point:
                first = i
        for i in range(first, len(segs)):
            seg = segs[i]
            lost = _dropped(seg, seg.recover())
            dropped += lost
            if lost and i + 1 < len(segs):
                for later in segs[i + 1:]:
                    dropped += later.size
                    later.remove_files()
                segs = segs[: i + 1]
                if not seg.active:
                    seg.make_active()   # reopened writable as the active segment
                break
    return Loaded(segs, segs[-1].next_offset(), dropped)
