"""Offset syncs: which target offset each source offset was copied to, as MirrorMaker 2 records it.

A mirror's copy of a source partition has offsets of its own on the target (the target topic may
have held records before, the source's log may start past 0, transaction markers and aborted
records are not copied). An **offset sync** ``(topic, partition, upstream, downstream)`` says: the
source record at ``upstream`` was written to the same partition of the target topic at
``downstream``, acknowledged by the target -- so every source record after it was copied after
it. The mirror writes them to the offset-syncs topic of the target
(``mm2-offset-syncs.<source-alias>.internal``: MM2 keeps it on the source, named after the other
cluster; ours lives on the target, named after the source like the checkpoints topic, so one
target can gather many sources), one partition, compacted, keyed by source partition, in MM2's
layout (key: STRING topic, INT32 partition; value: INT64 upstream, INT64 downstream).

**What is written** (:class:`SyncTracker`, one per stream, MM2's ``OffsetSyncWriter`` rules at
the grain of an acknowledged chunk, so the per-record cost stays nil): for each chunk the target
acknowledged -- the Produce response gives its first offset, the chunk its record count -- at
most one sync: its **first** record's pair when it is the partition's first since the stream got
it, follows a gap in the source offsets (markers, aborted or compacted records, a rewind) or lands
before the previous chunk (the target was truncated); else its **last** record's pair when the
translation would otherwise lag more than ``offset_lag_max`` (default 100) target records behind;
else the last record's pair waits and is written at the next commit (at most once a second), so
a group that is caught up translates to the target's end exactly. Only topics copied partition to
partition have syncs (records routed by key to another partition count cannot be translated).

**Translation** (:class:`SyncStore`, MM2's ``OffsetSyncStore.translateDownstream``): for a
committed source offset ``c``, take the latest sync with ``upstream <= c``; the target offset is
``downstream`` when ``c == upstream``, else ``downstream + 1`` -- the records between the sync and
``c`` may have been copied or not (filtered, aborted), so the translation never assumes more than
the one record it knows of: a consumer starting there on the target re-reads at most the records
between the sync and ``c`` and never skips one. No sync at or below ``c``: -1 (too old to
translate); no sync at all: None. An upstream rewind (a restarted mirror copying again from its
committed position) voids the earlier syncs of that partition, as MM2's store does. The store
keeps the newest 64 syncs of a partition and, before them, one per half-octave of distance back,
the first one always (a position far behind still translates, less precisely, as in MM2).

Example::

    >>> s = OffsetSync("orders", 0, 30, 17)
    >>> OffsetSync.decode(s.key(), s.value()) == s
    True
    >>> store = SyncStore()
    >>> for sync in (s, OffsetSync("orders", 0, 60, 47), OffsetSync("orders", 0, 79, 66)):
    ...     store.add(sync)
    >>> [store.translate(("orders", 0), c) for c in (29, 30, 55, 60, 80)]
    [-1, 17, 18, 47, 67]
"""
from __future__ import annotations

import bisect
import logging
import queue
import threading
import time
from typing import NamedTuple

from fastkafka import errors
from fastkafka.client import Producer, ProducerData
from fastkafka.protocol.schema import parse_struct

from .internal import TopicReader, decode_record, encode_record

__all__ = ["OffsetSync", "SyncTracker", "SyncWriter", "SyncStore", "read_syncs", "OFFSET_LAG_MAX"]

log = logging.getLogger("fastkafka.mirror")
OFFSET_LAG_MAX = 100                 # MM2's offset.lag.max default
# MM2's OffsetSync KEY_SCHEMA and VALUE_SCHEMA (no version: the layout never changed)
_KEY = parse_struct("OffsetSyncKey", """
    topic                    string
    partition                int32
""")
_VALUE = parse_struct("OffsetSyncValue", """
    upstream_offset          int64
    offset                   int64     # the downstream one
""")


class OffsetSync(NamedTuple):
    """Source ``topic``-``partition``'s record at ``upstream`` is at ``downstream`` on the target."""
    topic: str
    partition: int
    upstream: int
    downstream: int

    def key(self) -> bytes:
        return encode_record(_KEY, {"topic": self.topic, "partition": self.partition})

    def value(self) -> bytes:
        return encode_record(_VALUE, {"upstream_offset": self.upstream, "offset": self.downstream})

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> "OffsetSync":
        """Raises CorruptRecordError for a malformed key or value."""
        k, v = decode_record(_KEY, key), decode_record(_VALUE, value)
        return cls(k.topic, k.partition, v.upstream_offset, v.offset)


class SyncWriter:
    """Writes offset syncs to ``topic`` on the target from a thread of its own (the streams only
    queue them): one Produce request for whatever piled up meanwhile. A failed write is logged
    and dropped -- a missing sync costs precision (more re-read records), never a skipped one."""

    def __init__(self, target_props: dict, topic: str):
        self.topic = topic
        self.producer = Producer({**target_props, "producer.type": "sync"})
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="fastkafka-mirror-syncs", daemon=True)
        self._thread.start()
        self.written = 0

    def write(self, syncs: list[OffsetSync]) -> None:
        self._queue.put(syncs)

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop."""
        self._queue.put(None)
        self._thread.join(timeout)
        try:
            self.producer.close()
        except errors.KafkaError as e:
            log.debug("closing the offset-syncs producer: %s", e)

    def _run(self) -> None:
        done = False
        while not done:
            todo = [self._queue.get()]
            while True:
                try:
                    todo.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            done = None in todo
            syncs = [s for batch in todo if batch is not None for s in batch]
            if not syncs:
                continue
            ts = int(time.time() * 1000)
            try:
                self.producer.send([ProducerData(self.topic, s.key(), [s.value()], partition=0, timestamp=ts)
                                    for s in syncs])
                self.written += len(syncs)
            except errors.KafkaError as e:
                log.warning("%d offset syncs not written to %s: %s", len(syncs), self.topic, e)


class SyncTracker:
    """One stream's offset syncs: call :meth:`acknowledged` with each acknowledged partition's
    chunks, :meth:`commit` when positions are committed, :meth:`forget` for partitions let go."""

    def __init__(self, writer: SyncWriter, offset_lag_max: int = OFFSET_LAG_MAX, flush_interval_s: float = 1.0):
        self.writer = writer
        self.max_lag = offset_lag_max
        self.flush_s = flush_interval_s
        self.state: dict[tuple[str, int], list[int]] = {}   # tp -> [last upstream, its downstream, last sync's]
        self.delayed: dict[tuple[str, int], tuple[int, int]] = {}
        self._next_flush = 0.0

    def acknowledged(self, part, metadata) -> None:
        """``part`` (a :class:`~fastkafka.mirror.convert.Converted`) was written: ``metadata``
        holds the target's RecordMetadata of each of its chunks, in order."""
        offsets = part.offsets
        if offsets is None:
            return
        tp = part.source
        st = self.state.get(tp)
        out = []
        for (u0, u1), (_tp, enc), md in zip(offsets, part.chunks, metadata):
            d0 = md.offset
            if d0 < 0:
                continue
            d1 = d0 + enc.last_offset_delta
            if st is None or u0 != st[0] + 1 or d0 < st[1]:
                out.append(OffsetSync(tp[0], tp[1], u0, d0))
                st = [u1, d1, d0]
                if u1 != u0:
                    self.delayed[tp] = (u1, d1)
                else:
                    self.delayed.pop(tp, None)
            elif d1 - (st[2] + 1) >= self.max_lag:
                out.append(OffsetSync(tp[0], tp[1], u1, d1))
                st = [u1, d1, d1]
                self.delayed.pop(tp, None)
            else:
                st[0], st[1] = u1, d1
                self.delayed[tp] = (u1, d1)
        if st is not None:
            self.state[tp] = st
        if out:
            self.writer.write(out)

    def commit(self, force: bool = False) -> None:
        """Write the waiting last-record syncs (at most once per flush interval unless forced)."""
        if not self.delayed:
            return
        now = time.monotonic()
        if not force and now < self._next_flush:
            return
        self._next_flush = now + self.flush_s
        out = []
        for tp, (u, d) in self.delayed.items():
            out.append(OffsetSync(tp[0], tp[1], u, d))
            st = self.state.get(tp)
            if st is not None:
                st[2] = d
        self.delayed.clear()
        self.writer.write(out)

    def forget(self, tps=None) -> None:
        """Write the waiting syncs of ``tps`` (None: all), then start them afresh: the next chunk
        of each is synced at its first record."""
        tps = list(self.state) if tps is None else list(tps)
        out = [OffsetSync(tp[0], tp[1], *self.delayed.pop(tp)) for tp in tps if tp in self.delayed]
        for tp in tps:
            self.state.pop(tp, None)
        if out:
            self.writer.write(out)


class SyncStore:
    """Offset syncs by source partition, and MM2's translation of a committed source offset."""

    KEEP = 64

    def __init__(self):
        self.syncs: dict[tuple[str, int], list[tuple[int, int]]] = {}

    def add(self, sync: OffsetSync) -> None:
        tp = (sync.topic, sync.partition)
        pair = (sync.upstream, sync.downstream)
        have = self.syncs.get(tp)
        if have is None or sync.upstream < have[-1][0]:      # first, or a rewind: the rest is void
            self.syncs[tp] = [pair]
        elif sync.upstream == have[-1][0]:
            have[-1] = pair
        else:
            have.append(pair)
            if len(have) > 4 * self.KEEP:
                self.syncs[tp] = _thin(have, self.KEEP)

    def translate(self, tp: tuple[str, int], upstream: int) -> int | None:
        """The target offset for committed source offset ``upstream`` of ``tp``; -1 when every
        sync is after it, None without syncs."""
        have = self.syncs.get(tp)
        if not have:
            return None
        i = bisect.bisect_right(have, (upstream, float("inf"))) - 1
        if i < 0:
            return -1
        u, d = have[i]
        return d if upstream == u else d + 1


def _band(distance: int) -> int:
    """Half-octave bands: ``[2^k, 1.5 * 2^k)`` and ``[1.5 * 2^k, 2^(k+1))`` apart."""
    n = distance.bit_length()
    return distance if n <= 2 else (n << 1) | ((distance >> (n - 2)) & 1)


def _thin(syncs: list, keep: int) -> list:
    """The newest ``keep`` syncs and, before them, the oldest sync of each half-octave band of
    distance back from the newest (the first sync always kept, so what could be translated still
    can): a translation ``D`` records behind the newest sync uses one at most about ``2D`` before
    it (measured), like MM2's exponentially spaced store."""
    newest = syncs[-1][0]
    older: dict[int, tuple[int, int]] = {}
    for pair in syncs[:-keep]:
        older.setdefault(_band(newest - pair[0]), pair)
    return sorted(older.values()) + syncs[-keep:]


def read_syncs(reader: TopicReader, store: SyncStore) -> int:
    """Add what ``reader`` has not read yet of the offset-syncs topic to ``store``; how many."""
    n = 0
    for key, value in reader.read():
        if key is None or value is None:
            continue
        try:
            store.add(OffsetSync.decode(key, value))
            n += 1
        except errors.CorruptRecordError as e:
            log.warning("skipping a malformed offset sync in %s: %s", reader.topic, e)
    return n
