"""Log compaction (``cleanup.policy=compact`` or ``compact,delete``): keep the latest record per key.

One pass over a log:

1. The cleanable range is every segment but the active one, and only segments whose newest
   record is older than ``min.compaction.lag.ms`` and that end at or below the last stable
   offset (a transaction not yet decided is never cleaned, as in Kafka).
2. A key map (16-byte MD5 of the key -> latest offset) is built over the dirty part — from the
   cleaner's checkpoint on — stopping at a segment boundary when the map would exceed
   ``log.cleaner.dedupe.buffer.size`` / 24 entries (Kafka's 24 bytes per entry), so memory is
   bounded and the rest waits for the next pass.
3. The segments below the map's end are grouped (cleaner_swap.group_segments: consecutive
   segments while the group's log bytes stay <= ``segment.bytes``, its index sizes <=
   ``segment.index.bytes`` and its offsets within 32 bits of its base) and each group is
   rewritten to one ``<first base>.log.cleaned``: a record survives if no later offset of its
   key is in the map; records without a key are dropped (Kafka refuses them on compacted topics);
   tombstones (null value) are dropped once their segment is older than ``delete.retention.ms``.
   Offsets never change: a batch keeps its base offset, producer id, epoch, base sequence,
   lastOffsetDelta, attributes and codec; untouched batches are copied byte for byte, control
   batches copied whole. The records of aborted transactions (found in the segments'
   transaction indexes) are dropped and never enter the key map, so they cannot shadow a
   committed record of the same key. A transaction marker goes like a tombstone (once its
   segment is older than ``delete.retention.ms``) when no batch of its transaction is left:
   a COMMIT when the pass met no batch of its transaction, an ABORT when the pass met none of
   its aborted batches (they are dropped in the pass that meets them, so their marker goes in a
   later one; its ``.txnindex`` entry goes with it), as Kafka's cleaner does. A marker that may
   be its producer's newest batch (an active producer with no data batch after it) stays: it
   carries the epoch that fences the producer. A batch left with no record is dropped, except
   the last data batch of its producer in the whole log (per the log's producer state, active
   segment included; never a marker): it stays as an empty batch (61 bytes, recordCount 0) so
   the producer state rebuilt from the log still sees the producer's last sequence and epoch,
   as Kafka retains it. A one-segment group in which nothing changed is not rewritten.
4. Swap (cleaner_swap.replace_group): the group's segments are replaced by the cleaned one in the
   copy-on-write list, atomically for readers (old snapshots keep the old, pinned files) and for
   crashes (recovery restores the whole group or completes the replacement). The merged segment
   is named by the group's first base offset; its first remaining batch may be later, which
   reads by offset handle as for any gap left by compaction.
5. Progress: the first dirty offset of each log is written to ``cleaner-offset-checkpoint`` in its
   log dir (Kafka's file, same text layout as the other checkpoints) after every pass, so a
   restarted broker resumes there instead of recleaning the whole log.

Thread-safety: ``clean`` may run on any thread; it takes the Log's lock only to read the
producers' last offsets and for each swap.

Example::

    >>> import os, tempfile
    >>> from fastkafka.config import LogConfig
    >>> from fastkafka.log import Log
    >>> from fastkafka.records import build_batch, iter_batches
    >>> compacted = LogConfig.from_broker(overrides={"cleanup.policy": "compact"})
    >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(os.path.join(tmpdir.name, "users-0"), compacted)
    >>> for key, value in [(b"alice", b"v1"), (b"bob", b"v1"), (b"alice", b"v2")]:
    ...     _ = log.append(bytearray(build_batch([(key, value, [], 1)])))
    >>> _ = log.roll()                         # the active segment is never cleaned
    >>> cleaner = LogCleaner(KafkaConfig())
    >>> cleaner.clean(log)
    True
    >>> batches = iter_batches(log.read(0, 1 << 20).read_bytes())
    >>> [(r.offset, r.key, r.value) for b in batches for r in b.records()]      # alice's v1 is gone
    [(1, b'bob', b'v1'), (2, b'alice', b'v2')]
    >>> cleaner.first_dirty_offset(log)        # the next pass starts here
    3
    >>> log.close(); tmpdir.cleanup()
"""
from __future__ import annotations

import hashlib
import os
import threading
from bisect import bisect_right
from typing import Callable

from ..config.definitions import LOG_CLEANER_DEDUPE_BUFFER_SIZE
from .. import records as _records
from .._core.crc32c import crc32c
from .._core.records import HeaderOffsets as H
from .._core.records import finish_batch
from ..config import KafkaConfig
from .checkpoints import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from .cleaner_swap import CleanedFile, group_segments, replace_group, segment_info
from .scheduler import wall_clock_ms
from .segment import LogSegment
from .txn_index import AbortedTxn

BYTES_PER_MAP_ENTRY = 24
NO_PRODUCER_ID = -1


def _key_hash(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


class LogCleaner:
    """Compacts logs one pass at a time. Thread-safe (one pass per log at a time)."""

    def __init__(self, config: KafkaConfig | None = None, *, clock: Callable[[], int] | None = None,
                 max_map_entries: int | None = None):
        config = config or KafkaConfig()
        self.clock = clock or wall_clock_ms
        self.max_map_entries = max_map_entries or max(
            1, config[LOG_CLEANER_DEDUPE_BUFFER_SIZE] // BYTES_PER_MAP_ENTRY)
        # data dir -> {(topic, partition): first dirty offset}, loaded from and written to each
        # dir's cleaner-offset-checkpoint
        self._checkpoints: dict[str, dict[tuple[str, int], int]] = {}
        self._lock = threading.Lock()

    def first_dirty_offset(self, log) -> int:
        """Where the next pass on ``log`` starts (its checkpoint, within the log's bounds)."""
        with self._lock:
            off = self._dir_checkpoints(log).get((log.topic, log.partition), 0)
        if off > log.log_end_offset:       # the log was truncated or recreated under the checkpoint
            off = 0
        return max(off, log.log_start_offset)

    def forget(self, log) -> None:
        """Drop ``log``'s checkpoint entry (its partition was deleted)."""
        with self._lock:
            cps = self._dir_checkpoints(log)
            if cps.pop((log.topic, log.partition), None) is not None:
                self._checkpoint_file(log).write(cps)

    def _set_first_dirty_offset(self, log, offset: int) -> None:
        with self._lock:
            cps = self._dir_checkpoints(log)
            cps[(log.topic, log.partition)] = offset
            self._checkpoint_file(log).write(cps)

    @staticmethod
    def _checkpoint_file(log) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(os.path.join(os.path.dirname(log.dir), CLEANER_OFFSET_CHECKPOINT))

    def _dir_checkpoints(self, log) -> dict[tuple[str, int], int]:
        d = os.path.dirname(log.dir)
        cps = self._checkpoints.get(d)
        if cps is None:
            try:
                cps = self._checkpoint_file(log).read()
            except ValueError:             # malformed: clean from the start, as Kafka does
                cps = {}
            self._checkpoints[d] = cps
        return cps

    def clean(self, log, force: bool = False) -> bool:
        """One compaction pass; True if any segment was rewritten. ``force`` ignores the dirty ratio."""
        now = self.clock()
        cfg = log.config
        cleanable = []
        stable = log.last_stable_offset
        segs = log.segments
        for seg, nxt in zip(segs, segs[1:]):
            if (seg.size and now - seg.largest_timestamp() < cfg.min_compaction_lag_ms) \
                    or nxt.base_offset > stable:
                break
            cleanable.append(seg)
        if not cleanable:
            return False
        first_dirty = self.first_dirty_offset(log)
        dirty = [s for i, s in enumerate(cleanable)
                 if i + 1 == len(cleanable) or cleanable[i + 1].base_offset > first_dirty]
        dirty = [s for s in dirty if _segment_end(s, log) > first_dirty]
        total = sum(s.size for s in cleanable)
        if not dirty or (not force and total and
                         sum(s.size for s in dirty) / total < cfg.min_cleanable_dirty_ratio):
            return False
        last_batches = log.producer_last_offsets()   # before the map: appends only make it later
        aborted = _AbortedRanges(log.collect_aborted_transactions(
            cleanable[0].base_offset, _segment_end(cleanable[-1], log)))
        key_map, map_end = self._build_map(dirty, log, aborted)
        markers = _MarkerCleaning(aborted, last_batches, {p.producer_id for p in log.describe_producers()})
        if not key_map:
            return False
        horizon = now - cfg.delete_retention_ms
        below = [s for s in cleanable if s.base_offset < map_end]
        ends = [s.base_offset for s in below[1:]] + [_segment_end(below[-1], log)]
        infos = [segment_info(s, e) for s, e in zip(below, ends)]
        for group in group_segments(infos, cfg.segment_bytes, cfg.segment_index_bytes):
            self._clean_group(log, [below[i] for i in group], key_map, horizon, last_batches, markers)
        self._set_first_dirty_offset(log, map_end)
        return True

    def _build_map(self, dirty: list[LogSegment], log, aborted: "_AbortedRanges") -> tuple[dict, int]:
        key_map: dict[bytes, int] = {}
        end = dirty[0].base_offset
        for seg in dirty:
            seg_keys: dict[bytes, int] = {}
            for r in _segment_records(seg, aborted):
                if r.key is not None:
                    seg_keys[_key_hash(r.key)] = r.offset
            if key_map and len(key_map.keys() | seg_keys.keys()) > self.max_map_entries:
                break        # the map is full at a segment boundary: the rest waits for the next pass
            key_map.update(seg_keys)
            end = _segment_end(seg, log)
        return key_map, end

    def _clean_group(self, log, group: list[LogSegment], key_map: dict, horizon: int,
                     last_batches: dict[int, int], markers: "_MarkerCleaning") -> None:
        """Rewrite ``group`` into one cleaned segment and swap it in; a lone segment in which
        nothing changed is left alone. One segment's output is in memory at a time."""
        out: CleanedFile | None = None
        try:
            for seg in group:
                data, changed = _clean_segment(seg, key_map, seg.largest_timestamp() < horizon,
                                               last_batches, markers)
                if out is None and (changed or len(group) > 1):
                    out = CleanedFile(group[0])
                if out is not None:
                    out.append(data)
            if out is None:
                return
            path = out.finish()
        except BaseException:
            if out is not None:
                out.discard()
            raise
        kept = [e for s in group for e in s.txn_index.entries() if not markers.removed(e)]
        new = replace_group(log, group, path, kept)
        if new is not None:
            new.offset_index()        # rebuild the indexes now rather than in a reader's fetch


def _clean_segment(seg: LogSegment, key_map: dict, past_horizon: bool,
                   last_batches: dict[int, int], markers: "_MarkerCleaning") -> tuple[bytearray, bool]:
    """The segment's batches after compaction, and whether anything changed. ``past_horizon``:
    the segment is older than ``delete.retention.ms`` (tombstones and spent markers go)."""
    out = bytearray()
    changed = False
    data = seg.file().read(0, seg.size)
    for b in _records.iter_batches(data, check_crc=False):
        if b.is_control:
            if markers.on_marker(b, past_horizon):
                changed = True
            else:
                out += b.buffer
            continue
        recs = b.records()
        if markers.on_data(b.header):
            kept = []              # an aborted transaction's records: no consumer may see them
        else:
            kept = [r for r in recs
                    if r.key is not None and key_map.get(_key_hash(r.key), -1) <= r.offset
                    and not (past_horizon and r.value is None)]
        if len(kept) == len(recs):
            out += b.buffer
            continue
        changed = True
        h = b.header
        if kept:
            out += _rebuilt_batch(kept, h)
        elif h.producer_id != NO_PRODUCER_ID and last_batches.get(h.producer_id) == b.last_offset:
            out += _empty_batch(h)     # the producer's last sequence and epoch live on in it
    return out, changed


def _rebuilt_batch(kept: list, h) -> bytearray:
    """The surviving records in a batch with the original's header fields, lastOffsetDelta
    included (a producer's last sequence is baseSequence + lastOffsetDelta)."""
    buf = bytearray(_records.build_batch(
        kept, compression=h.compression, base_offset=h.base_offset, timestamp_type=h.timestamp_type,
        producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
        is_transactional=h.is_transactional, partition_leader_epoch=h.partition_leader_epoch))
    buf[H.LAST_OFFSET_DELTA:H.LAST_OFFSET_DELTA + 4] = h.last_offset_delta.to_bytes(4, "big", signed=True)
    buf[H.CRC:H.CRC + 4] = crc32c(memoryview(buf)[H.ATTRIBUTES:]).to_bytes(4, "big")
    return buf


def _empty_batch(h) -> bytearray:
    """A batch of no records keeping ``h``'s offsets, timestamps and producer metadata."""
    return finish_batch(bytearray(_records.BATCH_OVERHEAD), record_count=0,
                        last_offset_delta=h.last_offset_delta, base_timestamp=h.base_timestamp,
                        max_timestamp=h.max_timestamp, base_offset=h.base_offset,
                        partition_leader_epoch=h.partition_leader_epoch, compression=0,
                        timestamp_type=h.timestamp_type, is_transactional=h.is_transactional,
                        producer_id=h.producer_id, producer_epoch=h.producer_epoch,
                        base_sequence=h.base_sequence)


def _segment_end(seg: LogSegment, log) -> int:
    """First offset after ``seg``: the next segment's base offset."""
    segs = log.segments
    i = segs.index(seg) if seg in segs else -1
    return segs[i + 1].base_offset if 0 <= i < len(segs) - 1 else log.log_end_offset


def _segment_records(seg: LogSegment, aborted: "_AbortedRanges"):
    for b in _records.iter_batches(seg.file().read(0, seg.size), check_crc=False):
        if not b.is_control and not aborted.holds(b.header):
            yield from b.records()


class _AbortedRanges:
    """Which transactional batches belong to an aborted transaction: producer id -> the
    [first offset, marker offset] ranges of its aborted transactions (disjoint: a producer has
    one transaction at a time)."""

    def __init__(self, txns: list[AbortedTxn]):
        self._ranges: dict[int, list[tuple[int, int]]] = {}
        for t in txns:
            self._ranges.setdefault(t.producer_id, []).append((t.first_offset, t.last_offset))
        for r in self._ranges.values():
            r.sort()

    def marker_of(self, h) -> int | None:
        """The marker offset of the aborted transaction holding the batch with header ``h``, or
        None when the batch is not part of one."""
        if not h.is_transactional or not self._ranges:
            return None
        ranges = self._ranges.get(h.producer_id)
        if not ranges:
            return None
        i = bisect_right(ranges, (h.base_offset, 1 << 63)) - 1
        return ranges[i][1] if i >= 0 and ranges[i][0] <= h.base_offset <= ranges[i][1] else None

    def holds(self, h) -> bool:
        """Is the batch with header ``h`` part of an aborted transaction?"""
        return self.marker_of(h) is not None


class _MarkerCleaning:
    """One pass's walk of transactions, in offset order over the cleaned segments (Kafka's
    CleanedTransactionMetadata): which markers have no batch of their transaction left."""

    def __init__(self, aborted: _AbortedRanges, last_batches: dict[int, int], active: set[int]):
        self._aborted = aborted
        self._last_batches, self._active = last_batches, active
        self._committing: set[int] = set()               # producers with a batch met since their last marker
        self._aborted_met: set[tuple[int, int]] = set()  # (producer, marker offset) of aborted batches met
        self._removed: set[tuple[int, int]] = set()      # (producer, marker offset) of removed ABORTs

    def on_data(self, h) -> bool:
        """Note a data batch; True when it belongs to an aborted transaction (its records go)."""
        if not h.is_transactional:
            return False
        end = self._aborted.marker_of(h)
        if end is None:
            self._committing.add(h.producer_id)
            return False
        self._aborted_met.add((h.producer_id, end))
        return True

    def on_marker(self, b, past_horizon: bool) -> bool:
        """Note a control batch; True when it is removed."""
        h = b.header
        pid = h.producer_id
        met = pid in self._committing
        self._committing.discard(pid)
        kind = _records.end_txn_marker(b)
        if kind is not None and not kind[0]:
            met = (pid, h.base_offset) in self._aborted_met
        newest = pid in self._active and self._last_batches.get(pid, -1) < h.base_offset
        if met or not past_horizon or newest:
            return False
        if kind is not None and not kind[0]:
            self._removed.add((pid, h.base_offset))
        return True

    def removed(self, entry: AbortedTxn) -> bool:
        """Was the marker of this ``.txnindex`` entry removed?"""
        return (entry.producer_id, entry.last_offset) in self._removed
