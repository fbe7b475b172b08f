"""TransactionIndex: the aborted transactions of one segment, ``%020d.txnindex`` (Kafka's layout).

When an ABORT marker completes a transaction (KIP-98), the Log appends an entry to the index of
the segment the marker was written to. A read_committed Fetch asks which aborted transactions
overlap the range it returns (``Log.aborted_transactions``); the consumer drops their records.

Byte layout: a run of 34-byte entries, big-endian, no header (Kafka's ``AbortedTxn``)::

    off  size  field
      0     2  version            0
      2     8  producerId
     10     8  firstOffset        the transaction's first offset on this partition
     18     8  lastOffset         the offset of its ABORT marker (in this segment)
     26     8  lastStableOffset   the partition's last stable offset once the marker was written:
                                  the first offset of the oldest other ongoing transaction, else
                                  lastOffset + 1

Entries are in marker order (lastOffset increases). The file is created by the first entry (a
topic that never saw an abort has none) and removed when truncation empties it; a torn tail (a
size that is not a multiple of 34) is cut to whole entries when the file is loaded. The index is
derived data: recovery drops the entries the producer-state replay covers and the replay writes
them again (``Log`` / producer_state.py).

Thread-safety: ``append``, ``truncate_to``, ``rename``, ``delete`` and ``flush`` are writer-only
(the Log's lock). ``entries`` and ``collect`` are lock-free: the entries live in memory once
loaded (loading takes this index's own lock), appends only grow the list and truncation replaces
it, so a reader bounds itself by the length it saw first.

Example::

    >>> import os, tempfile
    >>> tmpdir = tempfile.TemporaryDirectory(); d = tmpdir.name
    >>> idx = TransactionIndex(os.path.join(d, "00000000000000000000.txnindex"))
    >>> idx.entries(), os.path.exists(idx.path)
    ([], False)
    >>> idx.append(AbortedTxn(producer_id=7, first_offset=3, last_offset=9, last_stable_offset=10))
    >>> os.path.getsize(idx.path)
    34
    >>> idx.collect(0, 5)
    ([AbortedTxn(producer_id=7, first_offset=3, last_offset=9, last_stable_offset=10)], True)
    >>> idx.truncate_to(9); os.path.exists(idx.path)
    False
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

import logging
import os
import struct
import threading
from bisect import bisect_left
from operator import itemgetter
from typing import Iterator, NamedTuple

from .. import errors

__all__ = ["AbortedTxn", "TransactionIndex", "TXN_INDEX_SUFFIX", "ENTRY_SIZE"]

log = logging.getLogger(__name__)

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size          # 34
_VERSION = 0
_LAST_OFFSET = itemgetter(2)


class AbortedTxn(NamedTuple):
    """One entry: an aborted transaction of ``producer_id`` from ``first_offset`` to its marker
    at ``last_offset``, and the partition's last stable offset once that marker was written."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """One segment's ``.txnindex``. See the module docstring for the thread rules."""

    __slots__ = ("path", "_entries", "_lock", "_dirty")

    def __init__(self, path: str):
        self.path = path
        self._entries: list[AbortedTxn] | None = None    # loaded on first use
        self._lock = threading.Lock()
        self._dirty = False

    def __repr__(self) -> str:
        n = "?" if self._entries is None else len(self._entries)
        return f"TransactionIndex({self.path!r}, entries={n})"

    def entries(self) -> list[AbortedTxn]:
        """The entries, oldest first (do not modify the list). Lock-free."""
        e = self._entries
        return e if e is not None else self._load()

    def _load(self) -> list[AbortedTxn]:
        with self._lock:
            if self._entries is not None:
                return self._entries
            try:
                with open(self.path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                data = b""
            whole = len(data) - len(data) % ENTRY_SIZE
            if whole != len(data):       # a torn append: keep the whole entries
                log.warning("%s: dropping a torn entry (%d bytes)", self.path, len(data) - whole)
                self._cut(whole)
            entries = []
            for version, txn in iter_entries(data):
                if version != _VERSION:
                    raise errors.KafkaStorageError(
                        f"{self.path}: aborted transaction entry of unknown version {version}")
                entries.append(txn)
            self._entries = entries
            return entries

    def _cut(self, size: int) -> None:
        try:
            if size:
                os.truncate(self.path, size)
            else:
                os.unlink(self.path)       # no empty index files
        except FileNotFoundError:
            pass

    # --- writer side ---
    def append(self, txn: AbortedTxn) -> None:
        """Add an entry (its marker after every entry's). Writer only."""
        entries = self.entries()
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(f"{self.path}: aborted transaction {txn} does not follow {entries[-1]}")
        data = _ENTRY.pack(_VERSION, *txn)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, data)           # 34 bytes to a regular file: written whole or failed
        finally:
            os.close(fd)
        self._dirty = True
        entries.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset``. Writer only."""
        entries = self.entries()
        keep = bisect_left(entries, offset, key=_LAST_OFFSET)
        if keep < len(entries):
            self._cut(keep * ENTRY_SIZE)
            self._entries = entries[:keep]

    def flush(self) -> None:
        """fsync the file if entries were appended since the last flush. Writer only."""
        if not self._dirty:
            return
        self._dirty = False
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, path: str) -> None:
        """Move the file (if any) to ``path`` (the segment is deleted or swapped). The entries
        are loaded first, so readers of an old segment list keep them. Writer only."""
        self.entries()
        with self._lock:
            try:
                os.rename(self.path, path)
            except FileNotFoundError:
                pass
            self.path = path

    def delete(self) -> None:
        """Unlink the file (the loaded entries stay for readers still holding the segment)."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    # --- reader side ---
    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [``fetch_offset``, ``upper_bound_offset``): marker at or after the
        first, first offset before the second; and whether the search is complete -- an entry
        whose last stable offset is at or past ``upper_bound_offset`` means no later entry
        (here or in a later segment) can overlap (Kafka's ``collectAbortedTxns``). Lock-free."""
        entries = self.entries()
        n = len(entries)
        # an entry with its marker before fetch_offset has lastStableOffset <= marker + 1 <=
        # fetch_offset, so skipping it cannot skip the end of the search
        i = bisect_left(entries, fetch_offset, 0, n, key=_LAST_OFFSET)
        out = []
        while i < n:
            e = entries[i]
            if e.first_offset < upper_bound_offset:
                out.append(e)
            if e.last_stable_offset >= upper_bound_offset:
                return out, True
            i += 1
        return out, False


def iter_entries(data) -> Iterator[tuple[int, AbortedTxn]]:
    """``(version, entry)`` of each whole entry in an index file's bytes (a torn tail is left
    out). Pure: tools read files with it without changing them."""
    view = memoryview(data)
    for version, pid, first, last, lso in _ENTRY.iter_unpack(view[:len(view) - len(view) % ENTRY_SIZE]):
        yield version, AbortedTxn(pid, first, last, lso)


def write_entries(path: str, entries: list[AbortedTxn]) -> None:
    """Write a whole index file (the cleaner's merged segment), fsync'ed."""
    with open(path, "wb") as f:
        f.write(b"".join(_ENTRY.pack(_VERSION, *e) for e in entries))
        f.flush()
        os.fsync(f.fileno())
