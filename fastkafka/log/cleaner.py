"""Log compaction (``cleanup.policy=compact`` or ``compact,delete``): keep the latest record per key.

One pass over a log:

1. The cleanable range is every segment but the active one, and only segments whose newest
   record is older than ``min.compaction.lag.ms``.
2. A key map (16-byte MD5 of the key -> latest offset) is built over the dirty part — from the
   cleaner's checkpoint on — stopping at a segment boundary when the map would exceed
   ``log.cleaner.dedupe.buffer.size`` / 24 entries (Kafka's 24 bytes per entry), so memory is
   bounded and the rest waits for the next pass.
3. Each segment below the map's end is rewritten to ``<base>.log.cleaned``: a record survives if
   no later offset of its key is in the map; records without a key are dropped (Kafka refuses
   them on compacted topics); tombstones (null value) are dropped once their segment is older than
   ``delete.retention.ms``. Offsets never change: a batch keeps its base offset, producer id,
   epoch, base sequence, lastOffsetDelta, attributes and codec (so the producer state rebuilt from
   the log still sees each idempotent batch's sequence range); untouched batches are copied byte
   for byte, control batches always kept. A batch left with no record is dropped unless it has a
   producer id: then it stays as an empty batch (61 bytes, recordCount 0) carrying that metadata,
   as Kafka retains it.
4. Swap: the old segment pins its open file and indexes (readers of an old snapshot keep reading
   the old inode), its index files are unlinked, the cleaned file replaces the ``.log`` by
   ``rename``, and a new LogSegment (indexes rebuilt lazily) replaces it in the copy-on-write list.
   A crash before the rename leaves a ``.cleaned`` file that recovery deletes.
5. Progress: the first dirty offset of each log is written to ``cleaner-offset-checkpoint`` in its
   log dir (Kafka's file, same text layout as the other checkpoints) after every pass, so a
   restarted broker resumes there instead of recleaning the whole log.

Thread-safety: ``clean`` may run on any thread; it takes the Log's lock only for the swap.

Example::

    >>> cleaner = LogCleaner(KafkaConfig())                       # doctest: +SKIP
    >>> cleaner.clean(log)                                        # doctest: +SKIP
    True
"""
from __future__ import annotations

import hashlib
import os
from typing import Callable

import threading

from .. import records as _records
from .._core.crc32c import crc32c
from .._core.records import finish_batch
from .._core.segment import SegmentFile
from ..config import KafkaConfig
from .checkpoints import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from .scheduler import wall_clock_ms
from .segment import CLEANED_SUFFIX, LogSegment

BYTES_PER_MAP_ENTRY = 24
NO_PRODUCER_ID = -1
_CRC_AT = 17
_CRC_FROM = 21                 # CRC-32C covers attributes .. end of batch
_LAST_OFFSET_DELTA_AT = 23


def _key_hash(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


class LogCleaner:
    """Compacts logs one pass at a time. Thread-safe (one pass per log at a time)."""

    def __init__(self, config: KafkaConfig | None = None, *, clock: Callable[[], int] | None = None,
                 max_map_entries: int | None = None):
        config = config or KafkaConfig()
        self.clock = clock or wall_clock_ms
        self.max_map_entries = max_map_entries or max(
            1, config["log.cleaner.dedupe.buffer.size"] // BYTES_PER_MAP_ENTRY)
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
        for seg in log.segments[:-1]:
            if seg.size and now - seg.largest_timestamp() < cfg.min_compaction_lag_ms:
                break
            cleanable.append(seg)
        if not cleanable:
            return False
        first_dirty = self.first_dirty_offset(log)
        dirty = [s for i, s in enumerate(cleanable)
                 if i + 1 == len(cleanable) or cleanable[i + 1].base_offset > first_dirty]
        dirty = [s for s in dirty if _segment_end(cleanable, s, log) > first_dirty]
        total = sum(s.size for s in cleanable)
        if not dirty or (not force and total and
                         sum(s.size for s in dirty) / total < cfg.min_cleanable_dirty_ratio):
            return False
        key_map, map_end = self._build_map(dirty, cleanable, log)
        if not key_map:
            return False
        horizon = now - cfg.delete_retention_ms
        for seg in cleanable:
            if seg.base_offset >= map_end:
                break
            self._clean_segment(log, seg, key_map, drop_tombstones=seg.largest_timestamp() < horizon)
        self._set_first_dirty_offset(log, map_end)
        return True

    def _build_map(self, dirty: list[LogSegment], cleanable: list[LogSegment], log) -> tuple[dict, int]:
        key_map: dict[bytes, int] = {}
        end = dirty[0].base_offset
        for seg in dirty:
            seg_keys: dict[bytes, int] = {}
            for r in _segment_records(seg):
                if r.key is not None:
                    seg_keys[_key_hash(r.key)] = r.offset
            if key_map and len(key_map.keys() | seg_keys.keys()) > self.max_map_entries:
                break        # the map is full at a segment boundary: the rest waits for the next pass
            key_map.update(seg_keys)
            end = _segment_end(cleanable, seg, log)
        return key_map, end

    def _clean_segment(self, log, seg: LogSegment, key_map: dict, drop_tombstones: bool) -> None:
        out = bytearray()
        changed = False
        data = seg.file().read(0, seg.size)
        for b in _records.iter_batches(data, check_crc=False):
            if b.is_control:
                out += b.buffer
                continue
            recs = b.records()
            kept = [r for r in recs
                    if r.key is not None and key_map.get(_key_hash(r.key), -1) <= r.offset
                    and not (drop_tombstones and r.value is None)]
            if len(kept) == len(recs):
                out += b.buffer
                continue
            changed = True
            if kept:
                out += _rebuilt_batch(kept, b.header)
            elif b.header.producer_id != NO_PRODUCER_ID:
                out += _empty_batch(b.header)
        if changed:
            self._swap(log, seg, bytes(out))

    def _swap(self, log, old: LogSegment, data: bytes) -> None:
        cleaned = old.log_path + CLEANED_SUFFIX
        f = SegmentFile(cleaned, create=True)
        f.truncate(0)
        f.append(data)
        f.flush()
        f.close()
        with log._lock:
            if old not in log.segments:        # deleted by retention meanwhile
                os.unlink(cleaned)
                return
            old.pin()
            for p in (old.index_path, old.time_index_path):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
            os.replace(cleaned, old.log_path)
            new = LogSegment(old.dir, old.base_offset, old.config, old._files, created_ms=old.created_ms)
            log._segments.replace([old], [new])


def _rebuilt_batch(kept: list, h) -> bytearray:
    """The surviving records in a batch with the original's header fields, lastOffsetDelta
    included (a producer's last sequence is baseSequence + lastOffsetDelta)."""
    buf = bytearray(_records.build_batch(
        kept, compression=h.compression, base_offset=h.base_offset, timestamp_type=h.timestamp_type,
        producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
        is_transactional=h.is_transactional, partition_leader_epoch=h.partition_leader_epoch))
    buf[_LAST_OFFSET_DELTA_AT:_LAST_OFFSET_DELTA_AT + 4] = h.last_offset_delta.to_bytes(4, "big", signed=True)
    buf[_CRC_AT:_CRC_AT + 4] = crc32c(memoryview(buf)[_CRC_FROM:]).to_bytes(4, "big")
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


def _segment_end(cleanable: list[LogSegment], seg: LogSegment, log) -> int:
    """First offset after ``seg``: the next segment's base offset."""
    segs = log.segments
    i = segs.index(seg) if seg in segs else -1
    return segs[i + 1].base_offset if 0 <= i < len(segs) - 1 else log.log_end_offset


def _segment_records(seg: LogSegment):
    for b in _records.iter_batches(seg.file().read(0, seg.size), check_crc=False):
        if not b.is_control:
            yield from b.records()
