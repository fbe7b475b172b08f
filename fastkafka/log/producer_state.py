"""ProducerStateManager: per-partition sequence tracking for the idempotent producer.

An idempotent producer stamps each batch with ``(producer_id, producer_epoch, base_sequence)``;
sequences count records per partition from 0 (wrapping at 2^31). For every producer the log
remembers its epoch and the last five batches it appended (Kafka's
``NUM_BATCHES_TO_RETAIN``: a producer has at most five requests in flight per partition), so

* a retried batch that was already appended is a *duplicate*: acknowledged with the offsets it
  got the first time and not appended again;
* a batch that does not continue the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER (45) — a gap
  means the producer lost a batch, and appending would reorder or lose data;
* a batch from an older epoch than the producer's latest is INVALID_PRODUCER_EPOCH (47): a
  zombie; a newer epoch starts the sequence again at 0.

Batches with ``producer_id`` -1 (plain producers) are not tracked. The state is derived data:
it is snapshotted next to the segments (``%020d.snapshot``, named by the log end offset it
covers) and rebuilt after a crash by replaying the batches after the newest snapshot.

Not thread-safe: the owning Log calls it under its lock::

    self.producer_state = ProducerStateManager.recover(self)      # Log.__init__, after loading
    dup = self.producer_state.check(mv)          # Log.append, before offsets are assigned (45/47)
    if dup is not None:                           # a retry: answer with the first offsets
        return LogAppendInfo(dup.first_offset, dup.last_offset, -1, self.log_start_offset)
    self.producer_state.update(mv)               # Log.append, after offsets are stamped
    self.producer_state.write_snapshot(self.dir, new_base)         # Log.roll / close (LEO)
    self.producer_state.truncate_after(offset)   # Log.truncate_to

Example::

    >>> from fastkafka.records import build_batch
    >>> psm = ProducerStateManager()
    >>> b = bytearray(build_batch([(None, b"x", [], 1)], producer_id=7, producer_epoch=0,
    ...                           base_sequence=0, base_offset=100))
    >>> psm.check(b) is None           # new: append it
    True
    >>> psm.update(b); psm.check(b)    # the same batch again: a duplicate of offsets 100..100
    BatchMetadata(first_seq=0, last_seq=0, first_offset=100, last_offset=100, timestamp=1)
"""
from __future__ import annotations

import json
import os
from collections import deque
from typing import Iterable, NamedTuple

from .. import errors
from .._core.records import batch_index, read_header, validate

__all__ = ["ProducerStateManager", "ProducerStateEntry", "BatchMetadata", "NO_PRODUCER_ID",
           "SNAPSHOT_SUFFIX"]

NO_PRODUCER_ID = -1
NUM_BATCHES_TO_RETAIN = 5
SEQUENCE_MODULUS = 1 << 31
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class ProducerStateEntry:
    """One producer's epoch and its last batches on this partition (oldest first)."""

    __slots__ = ("producer_id", "epoch", "batches", "last_timestamp")

    def __init__(self, producer_id: int, epoch: int):
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = deque(maxlen=NUM_BATCHES_TO_RETAIN)
        self.last_timestamp = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def add(self, meta: BatchMetadata) -> None:
        self.batches.append(meta)
        self.last_timestamp = max(self.last_timestamp, meta.timestamp)


def _last_seq(first_seq: int, last_offset_delta: int) -> int:
    return (first_seq + last_offset_delta) % SEQUENCE_MODULUS


def _next_seq(seq: int) -> int:
    return (seq + 1) % SEQUENCE_MODULUS


class ProducerStateManager:
    """Producer id -> :class:`ProducerStateEntry` for one partition."""

    def __init__(self):
        self.producers: dict[int, ProducerStateEntry] = {}

    def __len__(self) -> int:
        return len(self.producers)

    # --- the append path ---
    def check_append(self, r, buf) -> BatchMetadata | None:
        """:meth:`check` from an append's summary (``_core.appender.AppendResult``): the one
        idempotent batch a produce request carries is checked from its fields; a set of several
        (only direct Log users write those) is walked by :meth:`check`."""
        if r.producer_batches != 1 or r.mixed_producers:
            return self.check(buf)
        return self._check_one(r.producer_id, r.producer_epoch, r.base_sequence,
                               _last_seq(r.base_sequence, r.last_sequence_delta))

    def record_append(self, r, buf) -> None:
        """:meth:`update` from an append's summary, after the write gave the batch its offsets."""
        if r.producer_batches != 1 or r.mixed_producers:
            self.update(buf)
            return
        self._record(r.producer_id, r.producer_epoch, r.base_sequence, r.last_sequence_delta,
                     r.producer_first_offset, r.producer_last_offset, r.producer_max_timestamp)

    def check(self, buf) -> BatchMetadata | None:
        """Check every idempotent batch of ``buf`` (validated, offsets not yet assigned).

        Returns the original :class:`BatchMetadata` when ``buf`` is one batch already appended;
        None when it may be appended; raises OutOfOrderSequenceNumberError,
        InvalidProducerEpochError, or DuplicateSequenceNumberError (a duplicate mixed with new
        batches in one request, which no real producer sends).
        """
        first_header = read_header(buf, 0)
        if first_header.producer_id == NO_PRODUCER_ID and first_header.size == len(buf):
            return None                               # the common case: one plain batch
        expected: dict[int, tuple[int, int]] = {}   # producer -> (epoch, last seq) within buf
        duplicate = None
        count = 0
        for pos, *_ in batch_index(buf, check_crc=False):
            count += 1
            h = read_header(buf, pos)
            if h.producer_id == NO_PRODUCER_ID:
                continue
            first = h.base_sequence
            last = _last_seq(first, h.last_offset_delta)
            if h.producer_id in expected:
                epoch, prev_last = expected[h.producer_id]
                if h.producer_epoch != epoch or first != _next_seq(prev_last):
                    raise errors.OutOfOrderSequenceNumberError(
                        f"producer {h.producer_id}: batches of one request are not contiguous")
            else:
                dup = self._check_one(h.producer_id, h.producer_epoch, first, last)
                if dup is not None:
                    duplicate = dup
            expected[h.producer_id] = (h.producer_epoch, last)
        if duplicate is not None and count > 1:
            raise errors.DuplicateSequenceNumberError("a duplicate batch among new batches")
        return duplicate

    def _check_one(self, producer_id: int, epoch: int, first: int, last: int) -> BatchMetadata | None:
        entry = self.producers.get(producer_id)
        if entry is None:
            # no state (new producer, or its state expired with old segments): accept any start
            return None
        if epoch < entry.epoch:
            raise errors.InvalidProducerEpochError(
                f"producer {producer_id}: epoch {epoch} is older than the current {entry.epoch}")
        if epoch > entry.epoch:
            if first != 0:
                raise errors.OutOfOrderSequenceNumberError(
                    f"producer {producer_id}: new epoch {epoch} must start at sequence 0, not {first}")
            return None
        dup = entry.find_duplicate(first, last)
        if dup is not None:
            return dup
        if entry.batches and first != _next_seq(entry.last_seq):
            raise errors.OutOfOrderSequenceNumberError(
                f"producer {producer_id}: sequence {first} does not follow {entry.last_seq}")
        return None

    def update(self, buf) -> None:
        """Record the batches of ``buf`` after their offsets were assigned (also used to replay)."""
        first_header = read_header(buf, 0)
        if first_header.producer_id == NO_PRODUCER_ID and first_header.size == len(buf):
            return
        for pos, base_offset, last_offset, max_ts, _size in batch_index(buf, check_crc=False):
            h = read_header(buf, pos)
            if h.producer_id == NO_PRODUCER_ID:
                continue
            self._record(h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta,
                         base_offset, last_offset, max_ts)

    def _record(self, producer_id, epoch, first, last_offset_delta, first_offset, last_offset, ts):
        entry = self.producers.get(producer_id)
        if entry is None or epoch != entry.epoch:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id, epoch)
        entry.add(BatchMetadata(first, _last_seq(first, last_offset_delta), first_offset,
                                last_offset, ts))

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its newest batch (the cleaner keeps that batch even when
        compaction empties it: the producer's sequence and epoch live on in it)."""
        return {pid: e.batches[-1].last_offset for pid, e in self.producers.items() if e.batches}

    # --- housekeeping ---
    def active(self) -> list[ProducerStateEntry]:
        """The producers this partition remembers, by id (DescribeProducers)."""
        return [self.producers[pid] for pid in sorted(self.producers)]

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers silent for ``producer.id.expiration.ms``; returns how many."""
        gone = [pid for pid, e in self.producers.items() if now_ms - e.last_timestamp >= expiration_ms]
        for pid in gone:
            del self.producers[pid]
        return len(gone)

    def truncate_after(self, offset: int) -> None:
        """The log was truncated to ``offset``: forget batches at or after it."""
        for pid in list(self.producers):
            entry = self.producers[pid]
            kept = [b for b in entry.batches if b.last_offset < offset]
            if not kept:
                del self.producers[pid]
            else:
                entry.batches = deque(kept, maxlen=NUM_BATCHES_TO_RETAIN)

    # --- recovery and snapshots ---
    @classmethod
    def recover(cls, log) -> "ProducerStateManager":
        """The state of ``log`` (a Log being opened): newest snapshot, then the batches after it.

        Snapshots are written at every roll once a producer was seen, so a log without any has
        had no idempotent batch before its active segment: replaying that segment suffices (and
        plain topics are never scanned). Reads through ``log.read`` (lock-free).
        """
        psm = cls()
        start = psm.load_snapshot(log.dir, log.log_end_offset)
        if start is None:
            start = log.active_segment.base_offset
        psm.replay(log, max(start, log.log_start_offset))
        return psm

    def replay(self, log, offset: int, chunk: int = 1 << 20) -> None:
        """Apply every batch of ``log`` from ``offset`` to its end (headers only)."""
        end = log.log_end_offset
        while offset < end:
            data = memoryview(log.read(offset, chunk).read_bytes())
            whole = validate(data, check_crc=False).valid_bytes
            if whole == 0:
                return                      # nothing readable: recovery already truncated garbage
            for pos, base, last, max_ts, _size in batch_index(data[:whole], check_crc=False):
                if last >= offset:
                    h = read_header(data, pos)
                    if h.producer_id != NO_PRODUCER_ID:
                        self._record(h.producer_id, h.producer_epoch, h.base_sequence,
                                     h.last_offset_delta, base, last, max_ts)
                offset = max(offset, last + 1)

    def write_snapshot(self, dir: str, log_end_offset: int, keep: int = 2) -> str | None:
        """Write ``<dir>/%020d.snapshot`` atomically and prune all but the newest ``keep``.

        Nothing is written for a log that never saw an idempotent producer (see :meth:`recover`).
        """
        if not self.producers and not self.snapshot_offsets(dir):
            return None
        path = os.path.join(dir, f"{log_end_offset:020d}{SNAPSHOT_SUFFIX}")
        doc = {"version": SNAPSHOT_VERSION, "offset": log_end_offset, "producers": [
            {"id": e.producer_id, "epoch": e.epoch, "batches": [list(b) for b in e.batches]}
            for e in self.producers.values()]}
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self.delete_snapshots(dir, keep=self.snapshot_offsets(dir)[-keep:])
        return path

    @staticmethod
    def snapshot_offsets(dir: str) -> list[int]:
        out = []
        for name in os.listdir(dir):
            stem, ext = os.path.splitext(name)
            if ext == SNAPSHOT_SUFFIX and stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    def load_snapshot(self, dir: str, upto_offset: int) -> int | None:
        """Load the newest readable snapshot at or below ``upto_offset``; returns the offset it
        covers (replay batches from there), None when there is none."""
        for off in reversed([o for o in self.snapshot_offsets(dir) if o <= upto_offset]):
            path = os.path.join(dir, f"{off:020d}{SNAPSHOT_SUFFIX}")
            try:
                with open(path) as f:
                    doc = json.load(f)
                if doc.get("version") != SNAPSHOT_VERSION:
                    continue
                producers = {}
                for p in doc["producers"]:
                    entry = ProducerStateEntry(int(p["id"]), int(p["epoch"]))
                    for b in p["batches"]:
                        entry.add(BatchMetadata(*map(int, b)))
                    producers[entry.producer_id] = entry
            except (OSError, ValueError, KeyError, TypeError):
                continue            # a torn snapshot is skipped: an older one or a replay will do
            self.producers = producers
            return off
        self.producers = {}
        return None

    def delete_snapshots(self, dir: str, keep: Iterable[int] = (), after: int | None = None) -> None:
        """Remove snapshots not in ``keep`` (or only those above ``after`` when it is given)."""
        keep = set(keep)
        for off in self.snapshot_offsets(dir):
            if off in keep or (after is not None and off <= after):
                continue
            try:
                os.unlink(os.path.join(dir, f"{off:020d}{SNAPSHOT_SUFFIX}"))
            except FileNotFoundError:
                pass
