"""ProducerStateManager: per-partition producer state -- idempotent sequences and transactions.

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

Transactions (KIP-98). A producer's first transactional batch on this partition begins its
transaction at that batch's first offset (``current_txn_first_offset``, -1 when none); until a
transaction marker completes it, a non-transactional batch of that producer is
INVALID_TXN_STATE (48). Markers -- COMMIT/ABORT control batches -- are written by the broker
for the transaction coordinator (``Log.append_marker``): one older than the producer's epoch is
refused (47), one from an older coordinator epoch than the producer's last marker is
TRANSACTION_COORDINATOR_FENCED (52); a marker of a newer epoch sets it (sequences restart at 0),
and a marker for a producer with nothing ongoing here only records the epochs. A completed
transaction stays *unreplicated* until the high watermark passes its marker: the smallest first
offset of the ongoing and unreplicated transactions is the first unstable offset, which bounds
what read_committed consumers see (``Log.last_stable_offset``). An aborted transaction yields an
:class:`~fastkafka.log.txn_index.AbortedTxn` for the transaction index, whose last stable offset
is the first offset of the oldest *other* ongoing transaction, else the marker's offset + 1
(Kafka's ``lastStableOffset(completedTxn)``); markers are applied one batch at a time, so the
append, a follower's copy and a replay after a crash derive the same entries.

A batch with a producer id but no sequence (base sequence -1) is what the broker's group
coordinator writes for a transaction's offsets (TxnOffsetCommit; Kafka's
``AppendOrigin.COORDINATOR``): only its epoch and transaction state are checked, and it leaves
the producer's sequences alone. Batches with ``producer_id`` -1 (plain producers) are not
tracked. The state is derived data:
it is snapshotted next to the segments (``%020d.snapshot``, named by the log end offset it
covers) and rebuilt after a crash by replaying the batches after the newest snapshot. Snapshot
layout (JSON, version 2; version-1 files, without the transaction fields, still load)::

    {"version": 2, "offset": <log end offset>,
     "producers": [{"id", "epoch", "batches": [[first_seq, last_seq, first_offset, last_offset,
                    timestamp], ...], "last_timestamp", "coordinator_epoch", "txn_first_offset"}],
     "unreplicated": [[producer_id, first_offset, marker_offset], ...]}

Not thread-safe: the owning Log calls it under its lock, except :meth:`first_unstable_offset`,
which reads one tuple published after every change (lock-free readers)::

    start = self.producer_state.load(self)       # Log.__init__: snapshot, then replay from start
    dup = self.producer_state.check_append(r, buf)   # Log.append, before offsets (45/47/48)
    aborted = self.producer_state.record_append(r, buf)   # after the write: index these
    self.producer_state.check_marker(pid, epoch, coordinator_epoch)   # Log.append_marker (47/52)
    self.producer_state.write_snapshot(self.dir, new_base)         # Log.roll / close (LEO)

Example::

    >>> from fastkafka.records import build_batch, build_control_batch
    >>> psm = ProducerStateManager()
    >>> b = bytearray(build_batch([(None, b"x", [], 1)], producer_id=7, producer_epoch=0,
    ...                           base_sequence=0, base_offset=100))
    >>> psm.check(b) is None           # new: append it
    True
    >>> psm.update(b); psm.check(b)    # the same batch again: a duplicate of offsets 100..100
    []
    BatchMetadata(first_seq=0, last_seq=0, first_offset=100, last_offset=100, timestamp=1)
    >>> t = bytearray(build_batch([(None, b"t", [], 2)], producer_id=8, producer_epoch=0,
    ...                           base_sequence=0, is_transactional=True, base_offset=101))
    >>> psm.update(t); psm.first_unstable_offset(high_watermark=102)
    []
    101
    >>> psm.update(bytearray(build_control_batch(False, 8, 0, base_offset=102, timestamp=3)))
    [AbortedTxn(producer_id=8, first_offset=101, last_offset=102, last_stable_offset=103)]
    >>> psm.on_high_watermark(103); psm.first_unstable_offset(high_watermark=103) is None
    True
"""
from __future__ import annotations

import json
import os
from typing import Iterable

from .. import errors
from .._core.producer_entry import BatchMetadata, ProducerStateEntry
from .._core.records import batch_index, read_header, validate
from ..records import RecordBatch, end_txn_marker
from .txn_index import AbortedTxn

__all__ = ["ProducerStateManager", "ProducerStateEntry", "BatchMetadata", "NO_PRODUCER_ID",
           "SNAPSHOT_SUFFIX"]

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
SEQUENCE_MODULUS = 1 << 31
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 2
_READABLE_VERSIONS = (1, 2)


def _last_seq(first_seq: int, last_offset_delta: int) -> int:
    return (first_seq + last_offset_delta) % SEQUENCE_MODULUS


def _next_seq(seq: int) -> int:
    return (seq + 1) % SEQUENCE_MODULUS


class ProducerStateManager:
    """Producer id -> :class:`ProducerStateEntry` for one partition, and its transactions."""

    def __init__(self):
        self.producers: dict[int, ProducerStateEntry] = {}
        # first offset -> producer id of each ongoing transaction; transactions begin in offset
        # order, so the dict's order is the offsets' (the first key is the smallest)
        self.ongoing: dict[int, int] = {}
        # first offset -> (producer id, marker offset) of completed transactions whose marker
        # the high watermark has not passed yet
        self.unreplicated: dict[int, tuple[int, int]] = {}
        # what lock-free readers see: (first ongoing offset or None, ((first, marker), ...))
        self.unstable: tuple[int | None, tuple[tuple[int, int], ...]] = (None, ())

    def __len__(self) -> int:
        return len(self.producers)

    # --- the append path ---
    def check_append(self, r, buf) -> BatchMetadata | None:
        """:meth:`check` from an append's summary (``_core.appender.AppendResult``): the one
        idempotent batch a produce request carries is checked from its fields; a set of several
        (only direct Log users write those) is walked by :meth:`check`."""
        if r.producer_batches != 1 or r.mixed_producers:
            return self.check(buf)
        dup = self._check_one(r.producer_id, r.producer_epoch, r.base_sequence,
                              _last_seq(r.base_sequence, r.last_sequence_delta))
        if dup is None and self.ongoing and not r.transactional:   # (no transaction: no look)
            self._check_not_in_txn(r.producer_id)
        return dup

    def record_append(self, r, buf) -> list[AbortedTxn] | None:
        """:meth:`update` from an append's summary, after the write gave the batch its offsets.
        For a set holding markers (``r.control_batches``: the broker's own, or a follower's
        copy) the aborted transactions they completed, which the Log indexes; None otherwise."""
        if r.producer_batches != 1 or r.mixed_producers:
            aborted = self.update(buf)
            return aborted if r.control_batches else None
        self._record(r.producer_id, r.producer_epoch, r.base_sequence, r.last_sequence_delta,
                     r.producer_first_offset, r.producer_last_offset, r.producer_max_timestamp,
                     r.transactional)
        return None

    def check(self, buf) -> BatchMetadata | None:
        """Check every idempotent batch of ``buf`` (validated, offsets not yet assigned).

        Returns the original :class:`BatchMetadata` when ``buf`` is one batch already appended;
        None when it may be appended; raises OutOfOrderSequenceNumberError,
        InvalidProducerEpochError, InvalidTxnStateError, or DuplicateSequenceNumberError (a
        duplicate mixed with new batches in one request, which no real producer sends).
        """
        first_header = read_header(buf, 0)
        if first_header.producer_id == NO_PRODUCER_ID and first_header.size == len(buf):
            return None                               # the common case: one plain batch
        # producer -> (epoch, last seq, in a transaction) within buf
        expected: dict[int, tuple[int, int, bool]] = {}
        duplicate = None
        count = 0
        for pos, *_ in batch_index(buf, check_crc=False):
            count += 1
            h = read_header(buf, pos)
            if h.producer_id == NO_PRODUCER_ID:
                continue
            first = h.base_sequence
            last = _last_seq(first, h.last_offset_delta)
            txn = h.is_transactional
            if h.producer_id in expected:
                epoch, prev_last, in_txn = expected[h.producer_id]
                if h.producer_epoch != epoch or (first != NO_SEQUENCE and first != _next_seq(prev_last)):
                    raise errors.OutOfOrderSequenceNumberError(
                        f"producer {h.producer_id}: batches of one request are not contiguous")
                if in_txn and not txn:
                    raise errors.InvalidTxnStateError(
                        f"producer {h.producer_id}: a plain batch after transactional ones")
            else:
                dup = self._check_one(h.producer_id, h.producer_epoch, first, last)
                if dup is not None:
                    duplicate = dup
                elif not txn:
                    self._check_not_in_txn(h.producer_id)
                entry = self.producers.get(h.producer_id)
                in_txn = entry is not None and entry.current_txn_first_offset >= 0
            expected[h.producer_id] = (h.producer_epoch, last, in_txn or txn)
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
            if first != 0 and first != NO_SEQUENCE:
                raise errors.OutOfOrderSequenceNumberError(
                    f"producer {producer_id}: new epoch {epoch} must start at sequence 0, not {first}")
        elif first != -1:                   # (NO_SEQUENCE: the coordinator's batches have none)
            dup = entry.find_duplicate(first, last)
            if dup is not None:
                return dup
            # (no batches of this epoch: a marker set it, so the sequence starts at 0)
            expected = _next_seq(entry.last_seq) if entry.batches else 0
            if first != expected:
                raise errors.OutOfOrderSequenceNumberError(
                    f"producer {producer_id}: sequence {first} does not follow {entry.last_seq}")
        return None

    def _check_not_in_txn(self, producer_id: int) -> None:
        # a non-transactional batch: INVALID_TXN_STATE while the producer's transaction is ongoing
        entry = self.producers.get(producer_id)
        if entry is not None and entry.current_txn_first_offset >= 0:
            raise errors.InvalidTxnStateError(
                f"producer {producer_id} has a transaction ongoing: its batches must be transactional")

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """May the coordinator write a marker for ``producer_id`` now? Raises
        InvalidProducerEpochError (an older producer epoch) or TransactionCoordinatorFencedError
        (an older coordinator epoch than the producer's last marker)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if epoch < entry.epoch:
            raise errors.InvalidProducerEpochError(
                f"marker for producer {producer_id}: epoch {epoch} is older than the current {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise errors.TransactionCoordinatorFencedError(
                f"marker for producer {producer_id}: coordinator epoch {coordinator_epoch} is older "
                f"than {entry.coordinator_epoch}")

    def update(self, buf) -> list[AbortedTxn]:
        """Record the batches of ``buf`` after their offsets were assigned (also used to replay),
        markers included; returns the aborted transactions the markers completed."""
        first_header = read_header(buf, 0)
        if first_header.producer_id == NO_PRODUCER_ID and first_header.size == len(buf):
            return []
        view = memoryview(buf)
        aborted = []
        for pos, base_offset, last_offset, max_ts, size in batch_index(buf, check_crc=False):
            h = read_header(buf, pos)
            if h.producer_id != NO_PRODUCER_ID:
                done = self._apply(h, view, pos, size, base_offset, last_offset, max_ts)
                if done is not None:
                    aborted.append(done)
        return aborted

    def _apply(self, h, view, pos, size, base_offset, last_offset, max_ts) -> AbortedTxn | None:
        if h.is_control:
            marker = end_txn_marker(RecordBatch(h, view[pos:pos + size]))
            if marker is None:       # emptied by compaction, or not an end-transaction marker
                return None
            return self.record_marker(h.producer_id, h.producer_epoch, marker[1], not marker[0],
                                      base_offset, max_ts)
        self._record(h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta,
                     base_offset, last_offset, max_ts, h.is_transactional)
        return None

    def _record(self, producer_id, epoch, first, last_offset_delta, first_offset, last_offset, ts,
                transactional=False):
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id, epoch)
        elif epoch != entry.epoch:
            entry.set_epoch(epoch)
        if first != -1:           # (-1: the coordinator's batch, no sequence to remember)
            entry.record(first, last_offset_delta, first_offset, last_offset, ts)
        entry.last_timestamp = ts          # the last batch's, as Kafka (what expiry counts from)
        if transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = first_offset      # a transaction begins
            self.ongoing[first_offset] = producer_id
            self._publish()

    def record_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, aborted: bool,
                      offset: int, timestamp: int) -> AbortedTxn | None:
        """A marker at ``offset`` completes the producer's ongoing transaction (if any) and
        records its epochs; returns the index entry when it aborted one."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id, epoch)
        else:
            entry.set_epoch(epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        first = entry.current_txn_first_offset
        if first < 0:
            return None                # the transaction wrote nothing here
        stable = self._stable_offset_after(producer_id, offset)
        del self.ongoing[first]
        entry.current_txn_first_offset = -1
        self.unreplicated[first] = (producer_id, offset)
        self._publish()
        return AbortedTxn(producer_id, first, offset, stable) if aborted else None

    def _stable_offset_after(self, producer_id: int, marker_offset: int) -> int:
        for first, pid in self.ongoing.items():
            if pid != producer_id:
                return first
        return marker_offset + 1

    # --- the last stable offset ---
    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below ``high_watermark`` (replicated)."""
        if self.unreplicated:
            gone = [f for f, (_pid, last) in self.unreplicated.items() if last < high_watermark]
            if gone:
                for f in gone:
                    del self.unreplicated[f]
                self._publish()

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The smallest first offset of the ongoing transactions and of the completed ones whose
        marker is at or above ``high_watermark``; None when there is none. Lock-free."""
        first, unreplicated = self.unstable
        for f, last in unreplicated:
            if last >= high_watermark and (first is None or f < first):
                first = f
        return first

    def _publish(self) -> None:
        self.unstable = (next(iter(self.ongoing), None),
                         tuple((f, last) for f, (_pid, last) in self.unreplicated.items()))

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its newest data batch (the cleaner keeps that batch even
        when compaction empties it: the producer's sequence and epoch live on in it). Markers
        are never batches here, so a marker is never taken for a producer's last batch."""
        return {pid: e.batches[-1].last_offset for pid, e in self.producers.items() if e.batches}

    # --- housekeeping ---
    def active(self) -> list[ProducerStateEntry]:
        """The producers this partition remembers, by id (DescribeProducers)."""
        return [self.producers[pid] for pid in sorted(self.producers)]

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers silent for ``producer.id.expiration.ms``, never one with a
        transaction ongoing; returns how many."""
        gone = [pid for pid, e in self.producers.items()
                if now_ms - e.last_timestamp >= expiration_ms and e.current_txn_first_offset < 0]
        for pid in gone:
            del self.producers[pid]
        return len(gone)

    def truncate_after(self, offset: int) -> None:
        """The log was truncated to ``offset``: forget batches and transactions at or after it.
        A transaction whose marker went but whose data did not is ongoing again when this state
        still knows it (unreplicated); the Log rebuilds its state from a snapshot instead
        (``Log.truncate_to``), which is exact."""
        for first, (pid, last) in list(self.unreplicated.items()):
            if last >= offset:
                del self.unreplicated[first]
                entry = self.producers.get(pid)
                if first < offset and entry is not None and entry.current_txn_first_offset < 0:
                    entry.current_txn_first_offset = first
                    self.ongoing[first] = pid
        for first, pid in list(self.ongoing.items()):
            if first >= offset:
                del self.ongoing[first]
                self.producers[pid].current_txn_first_offset = -1
        self.ongoing = dict(sorted(self.ongoing.items()))
        for pid in list(self.producers):
            entry = self.producers[pid]
            kept = [b for b in entry.batches if b.last_offset < offset]
            if not kept and entry.current_txn_first_offset < 0:
                del self.producers[pid]
            else:
                entry.batches = kept
        self._publish()

    # --- recovery and snapshots ---
    def load(self, log) -> int:
        """Load the newest snapshot of ``log`` (a Log being opened or truncated) at or below its
        log end, drop snapshots above it (they describe a tail that is gone) and return where
        the batches must be replayed from (:meth:`replay`).

        Snapshots are written at every roll once a producer was seen, so a log without any has
        had no idempotent batch before its active segment: replaying that segment suffices (and
        plain topics are never scanned)."""
        end = log.log_end_offset
        start = self.load_snapshot(log.dir, end)
        self.delete_snapshots(log.dir, after=end)
        if start is None:
            start = log.active_segment.base_offset
        return max(start, log.log_start_offset)

    def replay(self, log, offset: int, chunk: int = 1 << 20) -> list[AbortedTxn]:
        """Apply every batch of ``log`` from ``offset`` to its end (headers, and the record of
        each marker); returns the aborted transactions its markers completed, in order. Reads
        through ``log.read`` (lock-free)."""
        end = log.log_end_offset
        aborted = []
        while offset < end:
            data = memoryview(log.read(offset, chunk).read_bytes())
            whole = validate(data, check_crc=False).valid_bytes
            if whole == 0:
                break                       # nothing readable: recovery already truncated garbage
            for pos, base, last, max_ts, size in batch_index(data[:whole], check_crc=False):
                if last >= offset:
                    h = read_header(data, pos)
                    if h.producer_id != NO_PRODUCER_ID:
                        done = self._apply(h, data, pos, size, base, last, max_ts)
                        if done is not None:
                            aborted.append(done)
                offset = max(offset, last + 1)
        return aborted

    def write_snapshot(self, dir: str, log_end_offset: int, keep: int = 2) -> str | None:
        """Write ``<dir>/%020d.snapshot`` atomically and prune all but the newest ``keep``.

        Nothing is written for a log that never saw an idempotent producer (see :meth:`load`).
        """
        if not self.producers and not self.unreplicated and not self.snapshot_offsets(dir):
            return None
        path = os.path.join(dir, f"{log_end_offset:020d}{SNAPSHOT_SUFFIX}")
        doc = {"version": SNAPSHOT_VERSION, "offset": log_end_offset, "producers": [
            {"id": e.producer_id, "epoch": e.epoch, "batches": [list(b) for b in e.batches],
             "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
             "txn_first_offset": e.current_txn_first_offset}
            for e in self.producers.values()],
            "unreplicated": [[pid, first, last] for first, (pid, last) in self.unreplicated.items()]}
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
                if doc.get("version") not in _READABLE_VERSIONS:
                    continue
                producers = {}
                for p in doc["producers"]:
                    entry = ProducerStateEntry(int(p["id"]), int(p["epoch"]))
                    for b in p["batches"]:
                        entry.add(BatchMetadata(*map(int, b)))
                    entry.last_timestamp = int(p.get("last_timestamp", entry.last_timestamp))
                    entry.coordinator_epoch = int(p.get("coordinator_epoch", -1))
                    entry.current_txn_first_offset = int(p.get("txn_first_offset", -1))
                    producers[entry.producer_id] = entry
                unreplicated = {int(first): (int(pid), int(last))
                                for pid, first, last in doc.get("unreplicated", ())}
            except (OSError, ValueError, KeyError, TypeError):
                continue            # a torn snapshot is skipped: an older one or a replay will do
            self._set(producers, unreplicated)
            return off
        self._set({}, {})
        return None

    def _set(self, producers: dict[int, ProducerStateEntry], unreplicated: dict) -> None:
        # the same dict for the state's life: the Log's append path holds it (Appender.set_producers)
        self.producers.clear()
        self.producers.update(producers)
        self.ongoing = {e.current_txn_first_offset: pid for pid, e in
                        sorted(producers.items(), key=lambda kv: kv[1].current_txn_first_offset)
                        if e.current_txn_first_offset >= 0}
        self.unreplicated = unreplicated
        self._publish()

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
