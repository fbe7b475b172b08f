"""LogSegment: one ``%020d.log`` file with its ``.index``, ``.timeindex`` and (once a transaction
aborted in it) ``.txnindex`` (txn_index.py), named by base offset.

The active segment takes the log's appends through the log's ``Appender`` (``_core.appender``:
one walk, the write and the sparse index entries in one call), attached with
``attach_appender``; while attached its published size is the appender's. The segment answers
"where is the batch containing offset o" with a floor lookup in the mmap'd index plus a short
forward scan of batch headers (both in ``_core``).

Thread-safety: appends, ``truncate_to``, ``roll`` and ``recover`` are writer-only (the owning
Log's lock). ``read``, ``find_offset_by_timestamp`` and the lazy opening of files may run on any
thread concurrently with the writer: a reader bounds itself by the ``size`` published after each
write, so it never sees a partial batch.

Example::

    >>> import os, tempfile
    >>> from fastkafka.log import Log
    >>> from fastkafka.records import build_batch
    >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(os.path.join(tmpdir.name, "orders-0"))
    >>> for ts in (1000, 2000, 3000):     # the log writes its segments through the Appender
    ...     _ = log.append(bytearray(build_batch([(b"k", b"v", [], ts)])))
    >>> log.close()
    >>> seg = LogSegment(log.dir, 0, LogConfig(), FileCache())
    >>> seg.size, seg.next_offset(), seg.max_timestamp
    (210, 3, 3000)
    >>> f, position, length = seg.read(1, 1 << 20); position, length   # offsets 1 and 2
    (70, 140)
    >>> seg.find_offset_by_timestamp(1500, 0)             # (position, base_offset, size)
    (70, 1, 70)
    >>> seg.close(); tmpdir.cleanup()
"""
from __future__ import annotations

import mmap
import os
import threading

from .._core.index import OffsetIndex, TimeIndex
from .._core.records import batch_index
from .._core.segment import IndexCursor, SegmentFile
from ..config import LogConfig
from .files import FileCache
from .txn_index import TXN_INDEX_SUFFIX, TransactionIndex

DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


def _rename_quietly(src: str, dst: str) -> None:
    try:
        os.rename(src, dst)
    except FileNotFoundError:
        pass


def segment_path(dir: str, base_offset: int, suffix: str) -> str:
    return os.path.join(dir, f"{base_offset:020d}{suffix}")


class LogSegment:
    """A segment of one partition's log. See the module docstring for the thread rules."""

    def __init__(self, dir: str, base_offset: int, config: LogConfig, files: FileCache, *,
                 active: bool = False, created_ms: int = 0):
        self.dir = dir
        self.base_offset = base_offset
        self.config = config
        self._files = files
        self.log_path = segment_path(dir, base_offset, ".log")
        self.index_path = segment_path(dir, base_offset, ".index")
        self.time_index_path = segment_path(dir, base_offset, ".timeindex")
        self.txn_index = TransactionIndex(segment_path(dir, base_offset, TXN_INDEX_SUFFIX))
        self.active = active
        self.created_ms = created_ms
        if active and not os.path.exists(self.log_path):
            os.close(os.open(self.log_path, os.O_WRONLY | os.O_CREAT, 0o644))
        self._size = os.stat(self.log_path).st_size
        self._appender = None        # the log's Appender while this segment takes its appends
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        # index bookkeeping between appends (largest timestamp so far, bytes since the last
        # entry); None until first needed: loading it reads the time index
        self._cursor: IndexCursor | None = None
        self._open_lock = threading.Lock()
        self.deleted = False
        self._pinned: SegmentFile | None = None
        self._file: SegmentFile | None = None    # managed by the FileCache (see files.py)
        self.referenced = False                   # CLOCK reference bit for the FileCache

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path!r}, size={self.size}, active={self.active})"

    @property
    def size(self) -> int:
        """Bytes published: readers never read past them. Thread-safe."""
        a = self._appender
        return self._size if a is None else a.size

    # --- the FileCache's owner protocol (files.py) ---
    def file_opened(self, f: SegmentFile) -> None:
        self._file = f

    def file_dropped(self) -> None:
        self._file = None
        a = self._appender
        if a is not None:
            a.drop_file()

    # --- lazily opened files ---
    def file(self) -> SegmentFile:
        """The open .log file (through the shared LRU). Thread-safe. Readers bound themselves
        by ``self.size``; where the handle appends is the writer's business (writer_file)."""
        f = self._file
        if f is None:
            # Opening by path takes the lock the renames take (pin before a cleaner's swap,
            # rename_to_deleted): a path read just before one of them would open the file that
            # replaced it, or nothing.
            with self._open_lock:
                f = self._pinned if self._pinned is not None else self._files.get(self, self._open_file)
        self.referenced = True
        return f

    def writer_file(self) -> SegmentFile:
        """The open .log file, set to append at the published end. Writer only: a handle opened
        by a reader mid-write starts at the file's end as it was then, and a reader must never
        move it -- setting the size from a stale ``self.size`` would roll the writer's next
        append back over the last one."""
        f = self.file()
        if f.size != self.size:
            f.set_size(self.size)
        return f

    def _open_file(self) -> SegmentFile:
        return SegmentFile(self.log_path, writable=self.active and not self.deleted,
                           create=self.active and not self.deleted)

    def offset_index(self) -> OffsetIndex:
        idx = self._offset_index
        if idx is None:
            idx = self._open_indexes()[0]
        return idx

    def time_index(self) -> TimeIndex:
        idx = self._time_index
        if idx is None:
            idx = self._open_indexes()[1]
        return idx

    def _open_indexes(self) -> tuple[OffsetIndex, TimeIndex]:
        with self._open_lock:
            oi, ti = self._offset_index, self._time_index
            if oi is None or ti is None:
                max_size = self.config.segment_index_bytes
                try:
                    opened = (OffsetIndex(self.index_path, self.base_offset, max_size, self.active),
                              TimeIndex(self.time_index_path, self.base_offset, max_size, self.active))
                    sane = opened[0].is_valid() and opened[1].is_valid() and (self.active or (
                        os.path.getsize(self.index_path) % 8 == 0
                        and os.path.getsize(self.time_index_path) % 12 == 0))
                except (FileNotFoundError, ValueError):
                    sane = False
                if not sane and self.deleted:   # removed under an old snapshot: gone for good
                    raise FileNotFoundError(self.index_path)
                # missing or corrupt: indexes are derived data, rebuild them
                oi, ti = opened if sane else self._rebuild_indexes()
                self._time_index = ti
                self._offset_index = oi
            return oi, ti

    def _rebuild_indexes(self) -> tuple[OffsetIndex, TimeIndex]:
        oi, ti = self._fresh_indexes()
        self._index_file(oi, ti, check_crc=False)
        return oi, ti

    def _unlink_indexes(self) -> None:
        # A mapping of the old files a reader may still hold stays valid (it keeps the inode).
        for path in (self.index_path, self.time_index_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def _fresh_indexes(self) -> tuple[OffsetIndex, TimeIndex]:
        # Empty writable indexes in new files. Emptying the old files in place zeroed the whole
        # preallocated segment.index.bytes of both (10 MiB each) through the mapping: 20 MiB of
        # page cache and disk written per segment, ~80 ms an empty partition at an unclean
        # restart. A new file is sparse.
        self._unlink_indexes()
        max_size = self.config.segment_index_bytes
        return (OffsetIndex(self.index_path, self.base_offset, max_size, True),
                TimeIndex(self.time_index_path, self.base_offset, max_size, True))

    def _index_file(self, oi: OffsetIndex, ti: TimeIndex, check_crc: bool) -> int:
        """Rebuild both (empty) indexes and the cursor from the file's valid prefix, via mmap;
        trimmed unless active. Returns the prefix's length (recovery truncates the rest)."""
        for idx in (oi, ti):
            if idx.entries:       # (fresh ones have none: reset() zeroes the whole mapping)
                idx.reset()
        cur = IndexCursor(self.config.index_interval_bytes)
        valid = 0
        if self.size:
            with open(self.log_path, "rb") as fh:
                with mmap.mmap(fh.fileno(), self.size, access=mmap.ACCESS_READ) as mm:
                    batches = batch_index(mm, check_crc=check_crc)
                    valid = batches[-1][0] + batches[-1][4] if batches else 0
                    with memoryview(mm) as whole, whole[:valid] as prefix:
                        cur.index_batches(prefix, oi, ti)
        self._cursor = cur
        if not self.active:
            self._final_time_entry(ti)
            oi.trim()
            ti.trim()
        return valid

    # --- writer side ---
    def attach_appender(self, appender) -> None:
        """This active segment takes the log's appends (``appender``: the log's
        ``_core.appender.Appender``) until ``detach_appender``. Writer only."""
        appender.attach(self.writer_file, self.writer_indexes, self.base_offset, self._size, self.created_ms)
        self._appender = appender

    def writer_indexes(self) -> tuple[IndexCursor, OffsetIndex, TimeIndex]:
        """(cursor, offset index, time index) the appender writes entries through. Writer only."""
        return self.cursor(), self.offset_index(), self.time_index()

    def detach_appender(self) -> None:
        """Stop taking appends (a roll, truncation, close): the size the appender published
        becomes this segment's own. Writer only."""
        a = self._appender
        if a is not None:
            self._size = a.size
            self._appender = None
            a.detach()

    def flush(self) -> None:
        """fdatasync the .log (and the .txnindex after new entries). Offset and time indexes are
        not msync'ed: they are rebuilt when found damaged, and a stale-but-valid index only makes
        lookups scan further. Thread-safe with appends."""
        if self.size:
            self.file().flush()
        self.txn_index.flush()

    def roll(self) -> None:
        """This segment stops being the active one: last time index entry, trim both indexes."""
        oi, ti = self.offset_index(), self.time_index()
        self._final_time_entry(ti)
        oi.trim()
        ti.trim()
        self.active = False

    def _final_time_entry(self, ti: TimeIndex) -> None:
        # Kafka's last time index entry holds the segment's largest timestamp even when it is
        # not interval-aligned, so retention can read it back after a restart.
        cur = self.cursor()
        if cur.max_timestamp >= 0 and not ti.is_full:
            ti.append(cur.max_timestamp, cur.offset_of_max_timestamp)

    def cursor(self) -> IndexCursor:
        """Where the sparse indexes stand (largest timestamp so far, bytes since the last entry);
        loaded on first use. Thread-safe."""
        return self._cursor or self._load_cursor()

    def _load_cursor(self) -> IndexCursor:
        # A segment opened from disk: its largest timestamp is the time index's last entry.
        oi, ti = self.offset_index(), self.time_index()
        if self._cursor is None:          # (opening the indexes may have rebuilt them, and it)
            ts, off = ti.last_entry
            cur = IndexCursor(self.config.index_interval_bytes, ts, off)
            cur.full = oi.is_full or ti.is_full
            self._cursor = cur
        return self._cursor

    def truncate_to(self, position: int, next_offset: int) -> None:
        """Drop everything from ``position`` (a batch boundary holding ``next_offset``). Writer only."""
        f = self.writer_file()
        f.truncate(position)
        self._size = position
        self.offset_index().truncate_to(next_offset)
        self.time_index().truncate_to(next_offset)
        self.txn_index.truncate_to(next_offset)
        self._cursor = None
        # the next batch gets an entry unless the segment is now empty
        self._load_cursor().bytes_since_last_index_entry = self.config.index_interval_bytes + 1 if position else 0

    def recover(self) -> int:
        """Revalidate every batch (size within the file, CRC), truncate at the first invalid
        byte and rebuild both indexes. Returns the bytes dropped. Writer only (startup)."""
        with self._open_lock:
            if self.size == 0 and self.active:
                # Nothing to index: the indexes open when first used, as after a clean stop
                # (creating and mapping two files per empty partition was most of the unclean
                # restart's extra cost).
                self._unlink_indexes()
                self._offset_index = self._time_index = None
                self._cursor = IndexCursor(self.config.index_interval_bytes)
                return 0
            oi, ti = self._fresh_indexes()
            valid = self._index_file(oi, ti, check_crc=True)
            self._offset_index, self._time_index = oi, ti
        dropped = self.size - valid
        if dropped:
            self._files.forget(self)       # a cached handle may be read-only
            w = SegmentFile(self.log_path, writable=True)
            w.truncate(valid)
            w.close()
            self._size = valid
        return dropped

    def recover_tail(self) -> int:
        """Revalidate the batches from the last offset-index entry to the end of the file
        (framing, sizes, magic, CRC-32C, increasing offsets) and truncate at the first invalid
        byte; when the indexed batch itself is damaged, or the index points outside the file,
        the whole segment is recovered. Returns the bytes dropped. Writer only (startup).

        A clean-shutdown marker says the broker stopped cleanly, not that nobody touched the
        file since: the active segment's tail is checked on every open, at the cost of one
        index interval (``index.interval.bytes``) plus a batch."""
        if self.size == 0:
            return 0
        oi = self.offset_index()
        last, pos = oi.lookup(1 << 62)
        tail = batch_index(self.file().read(pos, self.size - pos), check_crc=True) \
            if pos < self.size else []
        if oi.entries and (not tail or tail[0][2] != last):
            return self.recover()
        end, nxt = pos, self.base_offset
        for at, base, last_offset, _ts, size in tail:
            if base < nxt:                 # offsets went backwards: not a batch this log wrote
                break
            end, nxt = pos + at + size, last_offset + 1
        dropped = self.size - end
        if dropped:
            self.truncate_to(end, nxt)
        return dropped

    # --- reader side ---
    def read(self, offset: int, max_bytes: int, end: int | None = None,
             min_one_message: bool = True) -> tuple[SegmentFile, int, int] | None:
        """File region (file, position, length) from the batch containing ``offset``, at most
        ``max_bytes`` long unless the first batch alone is larger (KIP-74), bounded by ``end``
        (default: the published size). None when no batch at or after ``offset`` is here."""
        if end is None:
            end = self.size
        f = self._file
        if f is None or self.active:
            f = self.file()
        else:
            self.referenced = True
        r = f.region(self._offset_index or self.offset_index(), offset, max_bytes, end, min_one_message)
        return None if r is None else (f, r[0], r[1])

    def next_offset(self) -> int:
        """Offset after the last batch (base_offset when empty): a walk from the last index entry."""
        if self.size == 0:
            return self.base_offset   # nothing to walk: an empty partition maps no index yet
        f = self.file()
        pos = self.offset_index().lookup(1 << 62)[1]
        nxt = self.base_offset
        while True:
            b = f.find_batch(-(1 << 63), pos, self.size)
            if b is None:
                return nxt
            nxt, pos = b[2] + 1, b[0] + b[4]

    def position_of(self, offset: int, end: int | None = None) -> int | None:
        """Position of the batch containing ``offset`` (or the next one), None if none here."""
        b = self.file().locate(self.offset_index(), offset, self.size if end is None else end)
        return None if b is None else b[0]

    @property
    def max_timestamp(self) -> int:
        """Largest timestamp in the segment (-1 when it has none). Thread-safe."""
        return self.cursor().max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        """The (last) offset of the batch holding ``max_timestamp``. Thread-safe."""
        return self.cursor().offset_of_max_timestamp

    def largest_timestamp(self) -> int:
        """What retention judges by: the largest record timestamp, else the file's mtime (ms)."""
        ts = self.max_timestamp
        if ts >= 0:
            return ts
        try:
            return os.stat(self.log_path).st_mtime_ns // 1_000_000
        except FileNotFoundError:
            return -1

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int, int] | None:
        """First batch at or after ``start_offset`` with max timestamp >= ``timestamp``:
        (position, base_offset, size), or None. Thread-safe."""
        _, off = self.time_index().lookup(timestamp)
        off = max(off, start_offset)
        f = self.file()
        b = f.find_batch(off, self.offset_index().lookup(off)[1], self.size, timestamp)
        return None if b is None else (b[0], b[1], b[4])

    def pin(self) -> None:
        """Keep this object's own file handle and index mappings from now on (the cleaner is about
        to replace the files at its paths); readers of an old snapshot keep a consistent view."""
        self.offset_index()
        self.time_index()
        self.txn_index.entries()
        with self._open_lock:    # a reader opening the file now finishes first or sees _pinned
            f = self._file if self._file is not None else self._files.get(self, self._open_file)
            self._pinned = f
            self._files.forget(self)
            self._file = f

    # --- deletion ---
    def rename_to_deleted(self) -> None:
        """Rename the files to ``*.deleted`` (and point this object at them); open handles
        and mappings stay valid, and a reader of an old snapshot can still open them."""
        with self._open_lock:
            self.deleted = True
            for attr, idx in (("index_path", self._offset_index), ("time_index_path", self._time_index)):
                new = getattr(self, attr) + DELETED_SUFFIX
                if idx is not None:
                    idx.rename(new)
                else:
                    _rename_quietly(getattr(self, attr), new)
                setattr(self, attr, new)
            _rename_quietly(self.log_path, self.log_path + DELETED_SUFFIX)
            self.log_path += DELETED_SUFFIX
        self.txn_index.rename(self.txn_index.path + DELETED_SUFFIX)

    def remove_files(self) -> None:
        """Unlink the files and drop the cached descriptor (held regions keep theirs)."""
        self._files.forget(self)
        for p in (self.log_path, self.index_path, self.time_index_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        self.txn_index.delete()

    def reopened(self, config: LogConfig) -> "LogSegment":
        """A new object for this segment's files (the cleaner replaced them), in the same
        descriptor budget."""
        return LogSegment(self.dir, self.base_offset, config, self._files, created_ms=self.created_ms)

    def make_active(self) -> None:
        """A rolled segment becomes the active one again (a truncation back into it): its
        read-only index mappings and file handle are dropped and reopened writable. Writer only.

        ``active`` flips under the lock the readers' lazy opening takes, so no reader can open
        a read-only index of the now active segment (the writer would append to it) after the
        old ones are dropped; a read-only handle a reader was opening meanwhile is replaced."""
        with self._open_lock:
            self._offset_index = self._time_index = None
            self._cursor = None
            self.active = True
        self._files.forget(self)
        while not self.file().writable:     # a reader's open from before the flip landed last
            self._files.forget(self)

    def close(self) -> None:
        """Trim the active indexes (so their length gives their entries) and drop them and the
        handle. Thread-safe with readers: a lock-free reader may hold an index right now, so it
        is not unmapped here -- the mapping goes when the last holder lets go (as a dropped file
        handle closes), and the next use of this segment reopens both lazily."""
        with self._open_lock:
            if self.active and self._time_index is not None and self._cursor is not None:
                self._final_time_entry(self._time_index)
            for idx in (self._offset_index, self._time_index):
                if idx is not None:
                    idx.trim()       # keeps the mapping; a no-op for a read-only index
            self._offset_index = self._time_index = None
        self._files.forget(self)
