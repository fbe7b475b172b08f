"""Log: one partition's ordered segments — append, read, roll, flush policy, offsets, retention.

Policy lives here; the byte work is in ``_core``: ``Log.append`` is one call into the log's
``Appender`` (``_core.appender``: one walk over the batches, offsets stamped in place, the write
and the index entries into the active segment), which answers with the offsets given or a status
and a summary -- producer state, compaction keys, rolls and errors are decided here from that
summary, never by walking the bytes again. ``Log.read`` resolves an offset to a file region
through an immutable snapshot of the segment list and the mmap'd index — bytes are never read
into Python. Transactions (markers, the last stable offset, the aborted-transaction index) are
the half in transactions.py, which Log inherits; moving the log's start and end (retention,
DeleteRecords, truncation) is truncation.py's, inherited the same way.

Thread-safety: appends, rolls, flushes' bookkeeping, truncation and deletions are serialized by
``self._lock``. Reads never take it: they binary-search the current copy-on-write snapshot and
bound themselves by each segment's published size.

Example::

    >>> import os, tempfile
    >>> from fastkafka.records import build_batch
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> log = Log(os.path.join(tmpdir.name, "orders-0"), LogConfig())
    >>> info = log.append(bytearray(build_batch([(b"k", b"v", [], 1)])))
    >>> info.base_offset, log.read(0, 1 << 20).length
    (0, 70)
    >>> log.close(); log = Log(log.dir); log.log_end_offset     # reopened: the batch is still there
    1
    >>> log.close(); tmpdir.cleanup()
"""
from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from bisect import bisect_right
from typing import Callable, NamedTuple, cast

from .. import errors
from .._core import appender as _ap
from .._core import records as _records
from ..records import keyless_in_compressed
from .._core.segment import SegmentFile
from ..config import LogConfig
from .leader_epochs import LeaderEpochCache
from .lookup import first_record_at_or_after
from .files import FileCache
from .recovery import load_segments
from .scheduler import Scheduler, wall_clock_ms
from .segment import LogSegment
from .segments import LogSegments
from .transactions import TransactionalLog
from .truncation import LogTruncation

_validate = _records.validate
_AS_FOLLOWER = _ap.AS_FOLLOWER
LONG_MAX = (1 << 63) - 1
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


class LogAppendInfo(NamedTuple):
    base_offset: int
    last_offset: int
    log_append_time: int       # -1 unless the topic uses LogAppendTime
    log_start_offset: int


class FetchRegion(NamedTuple):
    """Where a fetch's bytes are: ``length`` bytes of ``file`` from ``position`` (length 0 and
    file None when there is nothing to send). Holding the region keeps the descriptor open."""

    file: SegmentFile | None
    position: int
    length: int
    high_watermark: int
    log_start_offset: int

    @property
    def file_path(self) -> str | None:
        return None if self.file is None else self.file.path

    def fileno(self) -> int:
        if self.file is None:
            raise ValueError("an empty fetch region has no file")
        return self.file.fileno()

    def read_bytes(self) -> bytes:
        """The region's bytes (tests and tools; the server sendfiles instead)."""
        return b"" if self.file is None else self.file.read(self.position, self.length)


def _region(fields: tuple) -> FetchRegion:
    # tuple.__new__ skips the NamedTuple's Python-level __new__: the fetch path builds one per read
    return tuple.__new__(FetchRegion, fields)


def _raise_invalid(buf) -> None:
    # the error path only: records.validate words the error the walk found
    v = _validate(buf, records=True)
    if v.error is None:
        raise errors.InvalidRecordError("produce request without record batches")
    if v.error_code == errors.InvalidRecordError.code:
        raise errors.InvalidRecordError(str(v.error))
    raise v.error


def parse_topic_partition(dir_name: str) -> tuple[str, int]:
    topic, _, part = os.path.basename(os.path.normpath(dir_name)).rpartition("-")
    if not topic or not part.isdigit():
        raise ValueError(f"{dir_name!r} is not a <topic>-<partition> directory")
    return topic, int(part)


class Log(TransactionalLog, LogTruncation):
    """The log of one partition. See the module docstring for thread rules."""

    def __init__(self, dir: str, config: LogConfig | None = None, *, files: FileCache | None = None,
                 scheduler: Scheduler | None = None, clock: Callable[[], int] | None = None,
                 recovery_point: int = 0, log_start_offset: int = 0, clean_shutdown: bool = False,
                 append_listeners: list | None = None, high_watermark: int | None = None):
        self.dir = os.path.abspath(dir)
        self.topic, self.partition = parse_topic_partition(self.dir)
        config = config or LogConfig()
        self.clock = clock or (scheduler.clock if scheduler else wall_clock_ms)
        self.scheduler = scheduler or Scheduler(self.clock)
        self._files = files or FileCache()
        self._lock = threading.RLock()
        # Called with this Log after every append, outside the lock (fetch long-poll wake-up).
        self._append_listeners: list[Callable[[Log], None]] = (
            append_listeners if append_listeners is not None else [])
        os.makedirs(self.dir, exist_ok=True)
        loaded = load_segments(self.dir, config, self._files, recovery_point=recovery_point,
                               clean_shutdown=clean_shutdown, now_ms=self.clock())
        self._segments = LogSegments(loaded.segments)
        # next offset, high watermark, flush counters, deleted: C fields the append path
        # updates (the properties below read them); its limits set by the config setter
        self._st = st = _ap.Appender(self._lock, LogAppendInfo, self.clock, self.flush)
        self.config = config
        st.next_offset = loaded.next_offset
        self.recovery_point = min(max(recovery_point, 0), st.next_offset) if clean_shutdown \
            else st.next_offset
        self.recovered_bytes_dropped = loaded.bytes_dropped
        st.log_start_offset = min(max(log_start_offset, self._segments.first.base_offset), st.next_offset)
        # a replicated partition's committed end comes from the last checkpoint (replication
        # moves it on); without one, everything this log holds counts as committed
        st.high_watermark = st.next_offset if high_watermark is None else \
            min(max(high_watermark, st.log_start_offset), st.next_offset)
        st.unflushed_messages = 0
        st.first_unflushed_ms = self.clock()   # append time of the oldest unflushed message
        self.flush_count = 0        # flushes done and their fdatasync time: the broker's metrics read them
        self.flush_seconds = 0.0
        self._load_producer_state(rebuild_index=True)   # idempotence, transactions (transactions.py)
        self.leader_epochs = LeaderEpochCache(self.dir, st.next_offset)   # replication (issue 14)
        self._segments.active.attach_appender(st)

    @property
    def config(self) -> LogConfig:
        return self._config

    @config.setter
    def config(self, cfg: LogConfig) -> None:
        # Policy: the limits the append path applies (appender.pxd's AppendLimits)
        with self._lock:
            self._config = cfg
            self._st.set_limits(cfg.segment_bytes, min(cfg.segment_ms, LONG_MAX), cfg.max_message_bytes,
                                min(cfg.flush_messages, LONG_MAX), min(cfg.flush_ms, LONG_MAX),
                                cfg.log_append_time, cfg.compact)

    @property
    def producer_state(self):
        """The ProducerStateManager (idempotence, transactions); replaced whole on a reload."""
        return self._producer_state

    @producer_state.setter
    def producer_state(self, psm) -> None:
        # the append path takes a known producer's next batch itself (the producers lane)
        self._producer_state = psm
        self._st.set_producers(psm.producers)

    @property
    def log_start_offset(self) -> int:
        return self._st.log_start_offset

    @log_start_offset.setter
    def log_start_offset(self, offset: int) -> None:
        self._st.log_start_offset = offset

    @property
    def deleted(self) -> bool:
        return self._st.deleted

    def __repr__(self) -> str:
        return f"Log({self.topic}-{self.partition}, start={self.log_start_offset}, end={self.log_end_offset})"

    # --- offsets ---
    @property
    def log_end_offset(self) -> int:
        return self._st.next_offset

    @property
    def high_watermark(self) -> int:
        """Last committed offset + 1; with one replica it follows the log end offset."""
        return self._st.high_watermark

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark (replication), clamped to [log_start_offset, log_end_offset]."""
        with self._lock:
            self._st.high_watermark = max(self.log_start_offset, min(offset, self._st.next_offset))
            self._high_watermark_moved()
            return self._st.high_watermark

    @property
    def high_watermark_follows_end(self) -> bool:
        """Whether each append commits itself (the partition's ISR is this replica alone); when
        off, replication moves the high watermark (``update_high_watermark``)."""
        return self._st.high_watermark_follows_end

    @high_watermark_follows_end.setter
    def high_watermark_follows_end(self, on: bool) -> None:
        with self._lock:
            self._st.high_watermark_follows_end = on
            if on:
                self._st.high_watermark = self._st.next_offset
                self._high_watermark_moved()

    @property
    def lock(self) -> threading.RLock:
        """The append lock: every writer of this log holds it (the cleaner's swap too)."""
        return self._lock

    def replace_segments(self, old: list[LogSegment], new: list[LogSegment]) -> None:
        """Swap inactive ``old`` segments for ``new`` ones (the cleaner). Under ``lock``."""
        self._segments.replace(old, new)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return self._segments.snapshot()[0]

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments.active

    # --- append ---
    def on_append(self, listener: Callable[[Log], None]) -> None:
        """Call ``listener`` with this Log after each append, outside the lock (a LogManager's
        logs share one list: see ``LogManager.on_append``)."""
        self._append_listeners.append(listener)

    def append(self, buf, leader_epoch: int = -1, *, _follower: bool = False) -> LogAppendInfo:
        """Validate, stamp offsets in place and append v2 batches from a writable buffer.

        Raises CorruptMessageError (framing/CRC), InvalidRecordError (record framing, no
        batches, a keyless record on a compacted topic, a control batch: only the broker writes
        transaction markers, see append_marker), MessageTooLargeError (a batch over
        max.message.bytes), RecordListTooLargeError (the set does not fit a segment),
        OutOfOrderSequenceNumberError / InvalidProducerEpochError (idempotence),
        InvalidTxnStateError (a plain batch inside the producer's transaction), KafkaStorageError
        (I/O, a deleted log). Thread-safe.

        Example::

            >>> import os, tempfile
            >>> from fastkafka.records import build_batch
            >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(os.path.join(tmpdir.name, "orders-0"))
            >>> log.append(bytearray(build_batch([(None, b"a", [], 5), (None, b"b", [], 6)])))
            LogAppendInfo(base_offset=0, last_offset=1, log_append_time=-1, log_start_offset=0)
            >>> log.append(bytearray(build_batch([(None, b"c", [], 7)]))).base_offset
            2
            >>> log.close(); tmpdir.cleanup()
        """
        # One call walks the batches and, when nothing is left to policy, writes them: the
        # answer is then the LogAppendInfo. Otherwise it is the summary (an AppendResult) and
        # _settle decides from it, under the lock, and calls again with what it settled.
        try:
            r = self._st.append(buf, leader_epoch, _AS_FOLLOWER if _follower else 0)
        except OSError as e:
            raise errors.KafkaStorageError(f"append to {self.dir} failed: {e}") from e
        if r.__class__ is not LogAppendInfo:
            if r is None:                # read-only: offsets are stamped in place
                return self.append(bytearray(memoryview(buf)), leader_epoch, _follower=_follower)
            # None only for a follower's fetch that ended inside its first batch (append_as_follower)
            r = cast(LogAppendInfo, self._settle(buf, leader_epoch, r))
        if self._append_listeners:
            for listener in self._append_listeners:
                listener(self)
        return r

    def _settle(self, buf, leader_epoch: int, r) -> LogAppendInfo | None:
        """Policy for an append the Appender handed back: errors, producer state, compaction
        keys, rolls; then the same call again with the CHECKED_* flags settled."""
        with self._lock:
            while True:
                status = r.status
                if status == _ap.OK:       # written: idempotent batches, or a follower's copy
                    return self._record(buf, r)
                if status == _ap.NEEDS_PRODUCER_CHECK:
                    dup = self.producer_state.check_append(r, buf)  # issue 5: raises 45/47
                    if dup is not None:    # a retried batch is answered, not appended again
                        return LogAppendInfo(dup.first_offset, dup.last_offset, -1, self.log_start_offset)
                    flags = r.flags | _ap.PRODUCER_CHECKED
                elif status == _ap.ROLL:
                    self.roll(self._st.next_offset)
                    flags = r.flags
                elif status == _ap.NEEDS_KEY_CHECK:
                    self._require_keys(buf)
                    flags = r.flags | _ap.KEYS_CHECKED
                elif status == _ap.CLOSED:
                    if self.deleted:
                        raise errors.KafkaStorageError(f"log {self.topic}-{self.partition} was deleted")
                    self._segments.active.attach_appender(self._st)   # closed: reopen on use
                    flags = r.flags
                else:
                    self._raise_refused(buf, r)
                try:
                    r = self._st.append(buf, leader_epoch, flags)
                except OSError as e:
                    raise errors.KafkaStorageError(f"append to {self.dir} failed: {e}") from e
                if r.__class__ is LogAppendInfo:
                    return r

    def append_as_follower(self, buf) -> LogAppendInfo | None:
        """A replica's copy of its leader's batches: appended with the offsets, leader epochs and
        timestamps they carry (nothing re-stamped), the producer state and the leader-epoch
        cache updated from them. A batch cut off at the end (fetches may end inside one) is left
        for the next fetch; None when no batch was whole. Raises ReplicaDivergedError when they
        do not continue this log (the follower must truncate first) and the errors of
        :meth:`append` for bad bytes.

        One batch that begins below the log end is taken: the first one copied into a log that
        holds nothing (its end is its start), when it holds the log start -- the leader's log
        start fell inside it (DeleteRecords) and the leader's fetch answers the whole batch. The
        log then starts its segment at the batch's base offset, its log start offset staying
        (Kafka's Partition.appendRecordsToFollowerOrFutureReplica), and its first epoch at the
        log start, as on the leader."""
        try:
            return self.append(buf, -1, _follower=True)
        except errors.ReplicaDivergedError:
            if not self._restart_at_first_batch(buf):
                raise
        info = self.append(buf, -1, _follower=True)
        self.leader_epochs.truncate_from_start(self.log_start_offset)
        return info

    def _restart_at_first_batch(self, buf) -> bool:
        with self._lock:
            end = self._st.next_offset
            if end != self.log_start_offset:
                return False
            h = _records.read_header(buf)
            if not h.base_offset < end <= h.base_offset + h.last_offset_delta:
                return False
            self.truncate_fully_and_start_at(h.base_offset, log_start_offset=end)
            return True

    def _record(self, buf, r) -> LogAppendInfo | None:
        """What policy notes of a written set (under the lock): its idempotent batches, and for
        a follower's copy the leader epochs that begin in it."""
        if r.flags & _AS_FOLLOWER:
            if r.batch_count == 0:      # the fetch ended inside its first batch
                return None
            if r.last_epoch > self.leader_epochs.latest_epoch():
                self._note_epochs(buf, r)
        if r.producer_batches:
            markers = self.producer_state.record_append(r, buf)
            if markers is not None:              # markers among them: index the aborted
                self._markers_written(markers)
        elif r.control_batches:                  # markers alone (append_marker, a follower)
            self._markers_written(self.producer_state.update(buf))
        return tuple.__new__(LogAppendInfo, (r.first_offset, r.last_offset, r.log_append_time,
                                             self.log_start_offset))

    def _note_epochs(self, buf, r) -> None:
        # A new leader epoch begins in these batches: record where (the common case is one
        # epoch for the whole set; several take a walk over the batch headers).
        if r.first_epoch == r.last_epoch:
            self.leader_epochs.assign(r.last_epoch, r.first_offset)
            return
        for base, _last, epoch in _records.batch_epochs(buf):
            if epoch > self.leader_epochs.latest_epoch():
                self.leader_epochs.assign(epoch, base)

    def _raise_refused(self, buf, r) -> None:
        status = r.status
        if status == _ap.BATCH_TOO_LARGE:
            raise errors.MessageTooLargeError(
                f"batch of {r.largest_batch} bytes exceeds max.message.bytes {self.config.max_message_bytes}")
        if status == _ap.SET_TOO_LARGE:
            raise errors.RecordListTooLargeError(
                f"{r.bytes} bytes of batches exceed segment.bytes {self.config.segment_bytes}")
        if status == _ap.NULL_KEY:
            self._keyless()
        if status == _ap.CONTROL_BATCH:
            raise errors.InvalidRecordError("client produce requests must not carry control batches")
        if status == _ap.OFFSETS_BEHIND:
            raise errors.ReplicaDivergedError(
                f"{self.topic}-{self.partition}: batches from the leader do not continue this log "
                f"(log end {self._st.next_offset})")
        _raise_invalid(buf)

    def _keyless(self) -> None:
        # Compaction keeps the latest record per key, so a record without one could never be
        # compacted: Kafka refuses it (INVALID_RECORD).
        raise errors.InvalidRecordError(
            f"compacted topic cannot accept a record without a key ({self.topic}-{self.partition})")

    def _require_keys(self, buf) -> None:
        # Compressed batches of a compacted topic: the keys are inside the codec (as in Kafka,
        # which decompresses them too). Control batches (transaction markers) are exempt.
        if keyless_in_compressed(buf):
            self._keyless()

    def roll(self, new_base: int | None = None, now: int | None = None) -> LogSegment:
        """Start a new active segment at ``new_base`` (default: the log end offset); the old one
        is trimmed and flushed in the background. Thread-safe."""
        with self._lock:
            old = self._segments.active
            new_base = self._st.next_offset if new_base is None else new_base
            if old.size == 0 and old.base_offset == new_base:
                return old
            old.detach_appender()
            try:
                old.roll()
            except OSError as e:     # its last time index entry found a full disk: it stays active
                raise errors.KafkaStorageError(f"roll of {self.dir} failed: {e}") from e
            seg = LogSegment(self.dir, new_base, self.config, self._files, active=True,
                             created_ms=self.clock() if now is None else now)
            self._segments.add(seg)
            seg.attach_appender(self._st)
            self.producer_state.write_snapshot(self.dir, new_base)  # issue 5
        # Kafka flushes a rolled segment asynchronously so the append that rolled does not wait.
        self.scheduler.schedule(0, lambda: self.flush(upto=new_base))
        return seg

    # --- flush policy ---
    def flush(self, upto: int | None = None) -> None:
        """fdatasync every segment holding offsets in [recovery_point, upto) and advance the
        recovery point. fsync runs outside the append lock. Thread-safe."""
        with self._lock:
            upto = self._st.next_offset if upto is None else min(upto, self._st.next_offset)
            if upto <= self.recovery_point:
                return
            segs, bases = self._segments.snapshot()
            first = max(LogSegments.floor_index((segs, bases), self.recovery_point), 0)
            todo = [s for s in segs[first:] if s.base_offset < upto]
            if upto == self._st.next_offset:
                self._st.unflushed_messages = 0
        started = time.monotonic()
        try:
            for s in todo:
                s.flush()
        except OSError as e:
            raise errors.KafkaStorageError(f"flush of {self.dir} failed: {e}") from e
        with self._lock:
            self.flush_count += 1
            self.flush_seconds += time.monotonic() - started
            self.recovery_point = max(self.recovery_point, upto)

    def flush_if_due(self, now: int | None = None) -> bool:
        """The flush.ms timer: flush when unflushed data is at least flush.ms old."""
        now = self.clock() if now is None else now
        if self._st.unflushed_messages and now - self._st.first_unflushed_ms >= self.config.flush_ms:
            self.flush()
            return True
        return False

    # --- reads ---
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_message: bool = True) -> FetchRegion:
        """File region starting at the batch containing ``offset``: at most ``max_bytes`` (may end
        in a partial batch) except that the first batch is whole (KIP-74); never past
        ``max_offset`` (e.g. the high watermark). OffsetOutOfRangeError outside
        [log_start_offset, log_end_offset]. Lock-free.

        Example::

            >>> import os, socket, tempfile
            >>> from fastkafka.records import build_batch
            >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(os.path.join(tmpdir.name, "orders-0"))
            >>> for ts in (1, 2):
            ...     _ = log.append(bytearray(build_batch([(b"k", b"v", [], ts)])))
            >>> r = log.read(1, 1 << 20); r.position, r.length, r.high_watermark
            (70, 70, 2)
            >>> sock, peer = socket.socketpair()
            >>> os.sendfile(sock.fileno(), r.fileno(), r.position, r.length)
            70
            >>> peer.recv(1 << 20) == r.read_bytes()
            True
            >>> log.read(2, 1 << 20).length          # at the log end: nothing to send yet
            0
            >>> sock.close(); peer.close(); log.close(); tmpdir.cleanup()
        """
        segs, bases = self._segments.snapshot()
        hw = self._st.high_watermark
        leo = self._st.next_offset
        lso = self.log_start_offset
        if offset < lso or offset > leo:
            raise errors.OffsetOutOfRangeError(
                f"offset {offset} is outside [{lso}, {leo}] of {self.topic}-{self.partition}")
        limit = leo if max_offset is None or max_offset > leo else max_offset
        if offset >= limit:
            return _region((None, 0, 0, hw, lso))
        i = bisect_right(bases, offset) - 1
        try:
            while i < len(segs):
                seg = segs[i]
                end = seg.size
                if limit < leo and (i + 1 == len(segs) or bases[i + 1] > limit):
                    p = seg.position_of(limit, end)
                    end = end if p is None else p
                r = seg.read(offset, max_bytes, end, min_one_message)
                if r is not None:
                    return _region((r[0], r[1], r[2], hw, lso))
                i += 1   # offset past this segment's last batch (compacted away or at its end)
        except FileNotFoundError:
            raise errors.OffsetOutOfRangeError(
                f"offset {offset} of {self.topic}-{self.partition} was deleted while reading") from None
        return _region((None, 0, 0, hw, lso))

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets: (offset, timestamp) of the first record with timestamp >= ``timestamp``;
        -2 earliest, -1 latest (the high watermark), -3 the record with the max timestamp.
        None when no record is that recent. Lock-free."""
        lso = self.log_start_offset
        if timestamp == EARLIEST_TIMESTAMP:
            return (lso, -1)
        if timestamp == LATEST_TIMESTAMP:
            return (self._st.high_watermark, -1)
        segs = self._segments.snapshot()[0]
        if timestamp == MAX_TIMESTAMP:
            best = max(segs, key=lambda s: s.max_timestamp)
            if best.max_timestamp < 0:
                return None
            return (best.offset_of_max_timestamp, best.max_timestamp)
        for seg in segs:
            if seg.max_timestamp < timestamp or seg.size == 0:
                continue
            start = max(lso, seg.base_offset)
            found = seg.find_offset_by_timestamp(timestamp, start)
            if found is not None:
                pos, _base, size = found
                return first_record_at_or_after(seg.file().read(pos, size), timestamp, start)
        return None

    def offsets_before(self, timestamp: int, max_num: int) -> list[int]:
        """Legacy ListOffsets v0 (the seeds' getOffsetsBefore): segment base offsets whose segment
        was last written at or before ``timestamp``, newest first; -1 latest, -2 earliest."""
        segs = self._segments.snapshot()[0]
        entries = [(s.base_offset, s.largest_timestamp()) for s in segs]
        if segs[-1].size > 0:
            entries.append((self._st.next_offset, self.clock()))
        if entries:
            entries[0] = (max(entries[0][0], self.log_start_offset), entries[0][1])
        if timestamp == LATEST_TIMESTAMP:
            start = len(entries) - 1
        elif timestamp == EARLIEST_TIMESTAMP:
            start = 0
        else:
            start = -1
            for i, (_, ts) in enumerate(entries):
                if ts <= timestamp:
                    start = i
        return [entries[i][0] for i in range(start, -1, -1)][:max_num]

    # --- retention, DeleteRecords, truncation: truncation.py (LogTruncation) ---

    # --- lifecycle ---
    def close(self) -> None:
        """Flush and close every segment (indexes trimmed). Thread-safe."""
        self.flush()
        with self._lock:
            if not self.deleted:
                self.producer_state.write_snapshot(self.dir, self._st.next_offset)  # issue 5
            self._segments.active.detach_appender()   # the next append attaches it again
            for seg in self._segments:
                seg.close()

    def delete(self) -> None:
        """Remove the whole log: segments renamed, the directory moved aside to
        ``<topic>-<partition>.<id>-delete`` (Kafka's name) at once, so a topic of the same name
        created before the delete delay is over gets a directory of its own, and removed after
        the delay (``file.delete.delay.ms``): open handles keep working meanwhile."""
        with self._lock:
            self._st.deleted = True
            self._segments.active.detach_appender()
            gone = list(self._segments)
            for seg in gone:
                seg.rename_to_deleted()
            self.leader_epochs.clear()
            doomed = f"{self.dir}.{uuid.uuid4().hex}-delete"
            os.rename(self.dir, doomed)

        def remove() -> None:
            for seg in gone:
                seg.remove_files()        # drops cached descriptors (the paths moved with the dir)
            shutil.rmtree(doomed, ignore_errors=True)
        self.scheduler.schedule(self.config.file_delete_delay_ms, remove)
