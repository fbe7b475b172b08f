"""The two ends of a partition's log moving: the start forward (retention, DeleteRecords, a
follower following its leader's log start offset) and the end back (a follower cutting its log
to where it agrees with its leader, or dropping all of it when the leader no longer holds the
offsets that would continue it).

``Log`` inherits :class:`LogTruncation`, as it inherits ``TransactionalLog``: these methods run
on the Log (its lock, segments, Appender, producer state and leader-epoch cache) and live here
only to keep one job per file. What each keeps consistent, as Kafka's ``UnifiedLog`` does:

* the log start offset only moves forward and never past the high watermark
  (``maybeIncrementLogStartOffset``): the leader-epoch cache then starts there and the
  segments wholly below it go;
* retention deletes only segments wholly below the high watermark (Kafka's
  ``deletableSegments``), so a leader never drops what its followers have not copied yet;
* :meth:`~LogTruncation.truncate_to` cuts the tail: segments and indexes after the offset,
  the epochs that begin there, the producer state rebuilt from the snapshots below it, and the
  log start, high watermark and recovery point no further than the new end (below the first
  segment it is a full truncation);
* :meth:`~LogTruncation.truncate_fully_and_start_at` replaces every segment with one empty
  segment at the new offset, which becomes the log start, log end, high watermark and recovery
  point at once; the epoch cache and the producer state (snapshots too) start empty: they
  describe batches that are gone (Kafka's ``truncateFullyAndStartAt``, for a follower whose log
  ends below its leader's log start).

Segments that go are renamed ``.deleted`` at once and removed after ``file.delete.delay.ms``,
so a reader of an old snapshot finishes its read. Thread-safe: each method takes the Log's lock.

Example::

    >>> import tempfile
    >>> from fastkafka.log import Log
    >>> from fastkafka.records import build_batch
    >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(tmpdir.name + "/orders-0")
    >>> for _ in range(3):
    ...     _ = log.append(bytearray(build_batch([(b"k", b"v", [], 1)])))
    >>> log.delete_records(2), log.log_start_offset, log.log_end_offset
    (2, 2, 3)
    >>> log.truncate_fully_and_start_at(10)
    >>> log.log_start_offset, log.log_end_offset, log.high_watermark, [s.base_offset for s in log.segments]
    (10, 10, 10, [10])
    >>> log.append(bytearray(build_batch([(b"k", b"v", [], 1)]))).base_offset
    10
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

from .. import errors
from . import retention
from .segment import LogSegment
from .log_fields import LogFields

__all__ = ["LogTruncation"]


class LogTruncation(LogFields):
    """Log's methods that move its start and end offsets (Log inherits them). See the module
    docstring."""

    # --- the start ---
    def delete_old_segments(self, now: int | None = None) -> int:
        """Delete whole segments past retention (time, size) or below the log start offset --
        never the active one, nor one holding offsets at or above the high watermark. Returns
        how many segments went."""
        now = self.clock() if now is None else now
        with self._lock:
            gone = retention.deletable_segments(list(self._segments), self.config, now, self.log_start_offset,
                                                self._st.high_watermark)
            if not gone:
                return 0
            self._segments.remove(gone)
            self._start_at(max(self.log_start_offset, self._segments.first.base_offset))
            for seg in gone:
                seg.rename_to_deleted()
        self._schedule_removal(gone)
        return len(gone)

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start offset forward to ``offset`` (never back) and delete the segments
        wholly below it: DeleteRecords on a leader, and a follower taking its leader's log start
        offset from each fetch, so that retention on the leader is retention on every replica.
        True when it moved. OffsetOutOfRangeError past the high watermark: records not yet
        committed cannot be deleted (Kafka's maybeIncrementLogStartOffset)."""
        with self._lock:
            hw = self._st.high_watermark
            if offset > hw:
                raise errors.OffsetOutOfRangeError(
                    f"cannot move the log start offset of {self.topic}-{self.partition} to {offset}: "
                    f"high watermark is {hw}")
            if offset <= self.log_start_offset:
                return False
            self._start_at(offset)
        self.delete_old_segments()
        return True

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: advance the log start offset to ``offset`` (-1: the high watermark) and
        drop segments wholly below it. Returns the new log start offset (low watermark)."""
        with self._lock:
            if offset == -1:
                offset = self._st.high_watermark
            if offset < 0:
                raise errors.OffsetOutOfRangeError(f"cannot delete records before {offset}")
            self.maybe_increment_log_start_offset(offset)
            return self.log_start_offset

    def _start_at(self, offset: int) -> None:
        # the epoch that owns ``offset`` now begins there (under the lock)
        self.log_start_offset = offset
        self.leader_epochs.truncate_from_start(offset)

    def _schedule_removal(self, gone: list[LogSegment]) -> None:
        def remove() -> None:
            for seg in gone:
                seg.remove_files()
        self.scheduler.schedule(self.config.file_delete_delay_ms, remove)

    # --- the end ---
    def truncate_to(self, offset: int) -> None:
        """Drop every record at or after ``offset`` (a follower diverging from its leader). The
        log start offset follows it down when it is lower, and below the first segment nothing
        is left to keep: the log starts over at ``offset`` (Kafka's truncateTo). At or past the
        log end only an epoch entry at the log end goes (this replica led briefly and wrote
        nothing in that epoch: the entry conflicts with the leader's)."""
        if offset < 0:
            raise ValueError(f"cannot truncate {self.topic}-{self.partition} to offset {offset}")
        with self._lock:
            if offset >= self._st.next_offset:
                self.leader_epochs.truncate_from_end(self._st.next_offset)
                return
            if offset < self._segments.first.base_offset:
                self.truncate_fully_and_start_at(offset)
                return
            segs = list(self._segments)
            gone = [s for s in segs if s.base_offset >= offset and s is not segs[0]]
            keep = [s for s in segs if s not in gone]
            last = keep[-1]
            segs[-1].detach_appender()
            pos = last.position_of(offset)
            if not last.active:
                last.make_active()    # reopened writable, untrimmed
            if pos is not None:
                last.truncate_to(pos, offset)
            self._segments.remove(gone)
            last.attach_appender(self._st)   # its file, cursor and indexes changed
            for s in gone:
                s.rename_to_deleted()
            self._st.next_offset = offset
            self._st.log_start_offset = min(self._st.log_start_offset, offset)
            self._st.high_watermark = min(self._st.high_watermark, offset)
            self.recovery_point = min(self.recovery_point, offset)
            self.leader_epochs.truncate_from_end(offset)
            self._load_producer_state(rebuild_index=False)   # snapshots above offset go too
        self._schedule_removal(gone)

    def truncate_fully_and_start_at(self, offset: int, log_start_offset: int | None = None) -> None:
        """Replace the whole log with one empty segment at ``offset``, which becomes the log
        start (unless ``log_start_offset`` is given), log end, high watermark and recovery point;
        the leader-epoch cache, the producer state and its snapshots start empty. What a follower
        does when its log ends below its leader's log start offset: none of its records can be
        continued, so it starts over where the leader's log starts (Kafka's
        truncateFullyAndStartAt). Works in either direction."""
        if offset < 0:
            raise ValueError(f"cannot start {self.topic}-{self.partition} at offset {offset}")
        start = offset if log_start_offset is None else log_start_offset
        with self._lock:
            gone = list(self._segments)
            gone[-1].detach_appender()
            for s in gone:     # renamed first: the new segment may take an old one's file names
                s.rename_to_deleted()
            seg = LogSegment(self.dir, offset, self.config, self._files, active=True, created_ms=self.clock())
            self._segments.replace(gone, [seg])
            st = self._st
            st.next_offset = offset
            seg.attach_appender(st)
            st.log_start_offset = start
            st.high_watermark = max(offset, start)     # Kafka's bounds: not below the log start
            st.unflushed_messages = 0
            self.recovery_point = offset
            self.leader_epochs.clear()
            self.producer_state.delete_snapshots(self.dir)
            self._load_producer_state(rebuild_index=False)   # nothing to load: an empty state
        self._schedule_removal(gone)
