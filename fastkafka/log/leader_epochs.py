"""The leader-epoch cache of one partition log: which leader epoch began at which offset (KIP-101,
KIP-279), kept in ``leader-epoch-checkpoint`` in the partition directory.

Why: after a leader change a follower must cut its log back to where it agrees with the new
leader. Truncating to the high watermark (what Kafka did before KIP-101) can lose acknowledged
records or leave the replicas diverged; instead the follower asks the leader, with
OffsetForLeaderEpoch, where its own latest epoch ends, and truncates there. Consumers ask the same
question to detect that the log was truncated under their position (KIP-320). The answer comes from
this cache: one ``(epoch, start_offset)`` entry per epoch that wrote to the log, both strictly
increasing. The cache is small and rewritten whole, atomically, whenever it changes, like the offset
checkpoints (checkpoints.py).

Text layout (Kafka's ``LeaderEpochCheckpointFile``)::

    0          <- version
    2          <- number of entries
    0 0        <- epoch start_offset
    3 1200

Example::

    >>> import tempfile
    >>> tmpdir = tempfile.TemporaryDirectory(); cache = LeaderEpochCache(tmpdir.name, log_end_offset=0)
    >>> cache.assign(0, 0), cache.assign(3, 1200), cache.assign(3, 1500)
    (True, True, False)
    >>> cache.entries()
    [(0, 0), (3, 1200)]
    >>> cache.end_offset_for(1, log_end_offset=2000)     # epoch 0 (the largest <= 1) ends at 1200
    (0, 1200)
    >>> cache.end_offset_for(3, log_end_offset=2000)     # the latest epoch ends at the log end
    (3, 2000)
    >>> cache.epoch_for_offset(1199), cache.epoch_for_offset(1200)
    (0, 3)
    >>> LeaderEpochCache(cache.dir, log_end_offset=2000).entries()    # read back from the file
    [(0, 0), (3, 1200)]
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

import bisect
import logging
import os
import threading

from .files import fsync_dir

log = logging.getLogger(__name__)

CHECKPOINT = "leader-epoch-checkpoint"
VERSION = 0

UNDEFINED_EPOCH = -1           # OffsetForLeaderEpoch: no epoch (Kafka's UNDEFINED_EPOCH)
UNDEFINED_EPOCH_OFFSET = -1    # OffsetForLeaderEpoch: no end offset (UNDEFINED_EPOCH_OFFSET)


class LeaderEpochCache:
    """The ``(epoch, start_offset)`` entries of one partition log, ascending in both, mirrored in
    ``<dir>/leader-epoch-checkpoint`` after every change. Thread-safe."""

    def __init__(self, dir: str, log_end_offset: int):
        self.dir = dir
        self.path = os.path.join(dir, CHECKPOINT)
        self._lock = threading.Lock()
        self._entries: list[tuple[int, int]] = []
        with self._lock:
            stored = self._read()
            for epoch, start in stored:          # the assign rules drop non-monotonic entries
                self._assign(epoch, start)
            if self._entries != stored:
                log.warning("%s: dropped non-monotonic entries %s", self.path,
                            [e for e in stored if e not in self._entries])
            if log_end_offset >= 0:              # recovery: epochs starting past the log end
                self._remove_from_end(log_end_offset)
            if self._entries != stored:
                self._write()

    # -- reads ------------------------------------------------------------------------------

    def entries(self) -> list[tuple[int, int]]:
        """The ``(epoch, start_offset)`` entries, ascending."""
        with self._lock:
            return list(self._entries)

    def latest_entry(self) -> tuple[int, int] | None:
        with self._lock:
            return self._entries[-1] if self._entries else None

    def earliest_entry(self) -> tuple[int, int] | None:
        with self._lock:
            return self._entries[0] if self._entries else None

    def latest_epoch(self) -> int:
        """The epoch of the latest entry, -1 when there is none."""
        with self._lock:
            return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch that wrote ``offset``: that of the latest entry starting at or before it, -1
        when none does (Kafka's epochForOffset; ListOffsets answers it with the offset found)."""
        with self._lock:
            i = bisect.bisect_right([s for _, s in self._entries], offset)
            return self._entries[i - 1][0] if i else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """The OffsetForLeaderEpoch answer ``(epoch, end_offset)``: ``epoch`` is the largest cached
        epoch <= ``requested_epoch`` and ``end_offset`` the start offset of the first cached epoch
        above it -- or the log end offset when the latest epoch is requested.

        No requested epoch (-1), an empty cache, or an epoch above the latest give ``(-1, -1)``.
        An epoch below the earliest cached one gives ``(requested_epoch, earliest start offset)``,
        as Kafka does: the data before it is gone, so a follower replicates from there.
        """
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH or not self._entries:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if requested_epoch == self._entries[-1][0]:
                return requested_epoch, log_end_offset
            i = bisect.bisect_right(self._entries, (requested_epoch, float("inf")))
            if i == len(self._entries):          # above the latest epoch
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            end_offset = self._entries[i][1]
            if i == 0:                           # below the earliest epoch
                return requested_epoch, end_offset
            return self._entries[i - 1][0], end_offset

    # -- changes ----------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True when the cache changed (and the
        checkpoint was rewritten).

        The latest epoch again keeps its entry (its start offset stays); an epoch below the latest
        is ignored with a warning. A new epoch starting at or below the latest entry's start offset
        first removes the entries starting at or after it: they conflict with it.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry: epoch {epoch}, start offset {start_offset}")
        with self._lock:
            if not self._assign(epoch, start_offset):
                return False
            self._write()
            return True

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: remove the entries starting at or after it."""
        with self._lock:
            if end_offset >= 0 and self._remove_from_end(end_offset):
                self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start offset advanced to ``start_offset``: the entries starting before it go,
        except the latest of them, which now starts at ``start_offset`` (its epoch still owns the
        offsets from there to the next entry)."""
        with self._lock:
            i = bisect.bisect_right([s for _, s in self._entries], start_offset)
            if i == 0:
                return
            epoch, start = self._entries[i - 1]
            if i == 1 and start == start_offset:
                return
            self._entries[:i] = [(epoch, start_offset)]
            self._write()

    def clear(self) -> None:
        """Remove every entry and the checkpoint file (the log is deleted or replaced)."""
        with self._lock:
            self._entries.clear()
            removed = False
            for path in (self.path, self.path + ".tmp"):
                try:
                    os.unlink(path)
                    removed = True
                except FileNotFoundError:
                    pass
            if removed:
                fsync_dir(self.dir)

    # -- internals (called with the lock held) ----------------------------------------------

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if self._entries:
            latest_epoch, latest_start = self._entries[-1]
            if epoch == latest_epoch:
                return False
            if epoch < latest_epoch:
                log.warning("%s: ignoring epoch %d at offset %d, below the latest epoch %d (at %d)",
                            self.path, epoch, start_offset, latest_epoch, latest_start)
                return False
            removed = self._remove_from_end(start_offset)
            if len(removed) > 1 or removed and removed[0][1] != start_offset:
                # one entry at the same offset is expected (its epoch wrote nothing); more is not
                log.warning("%s: epoch %d at offset %d truncated conflicting entries %s",
                            self.path, epoch, start_offset, removed)
        self._entries.append((epoch, start_offset))
        return True

    def _remove_from_end(self, offset: int) -> list[tuple[int, int]]:
        """Remove and return the entries starting at or after ``offset``."""
        i = len(self._entries)
        while i > 0 and self._entries[i - 1][1] >= offset:
            i -= 1
        removed = self._entries[i:]
        del self._entries[i:]
        return removed

    def _read(self) -> list[tuple[int, int]]:
        """The stored entries; a missing file is empty, and so is a malformed one (with a warning):
        the cache is rebuilt as the log is appended to, so a damaged file must not stop the load."""
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as e:
            log.warning("%s: unreadable, starting with no leader epochs: %s", self.path, e)
            return []
        try:
            while lines and not lines[-1].strip():
                lines.pop()
            if len(lines) < 2 or int(lines[0]) != VERSION:
                raise ValueError("missing or unknown version")
            n = int(lines[1])
            if n != len(lines) - 2:
                raise ValueError(f"expected {n} entries, found {len(lines) - 2}")
            out = []
            for line in lines[2:]:
                fields = line.split()
                if len(fields) != 2:
                    raise ValueError(f"bad entry {line!r}")
                epoch, start = int(fields[0]), int(fields[1])
                if epoch < 0 or start < 0:
                    raise ValueError(f"bad entry {line!r}")
                out.append((epoch, start))
        except ValueError as e:
            log.warning("%s: malformed, starting with no leader epochs: %s", self.path, e)
            return []
        return out

    def _write(self) -> None:
        lines = [str(VERSION), str(len(self._entries))]
        lines += [f"{epoch} {start}" for epoch, start in self._entries]
        data = ("\n".join(lines) + "\n").encode()
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        fsync_dir(self.dir)
