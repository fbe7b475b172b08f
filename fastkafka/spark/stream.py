"""Streaming reads: ``spark.readStream.format("fastkafka")``.

Offsets are ``{"topic": {"partition": offset}}`` JSON (string partition keys), which Spark
writes to the query's checkpoint before a micro-batch runs; a restarted query resumes from the
checkpoint, never from the broker. Nothing is committed to the broker.

Pitfalls this module is built around:

* Spark 4.2+ calls ``latestOffset(start, limit)`` (admission control: ``maxOffsetsPerTrigger``
  arrives as ``ReadMaxRows``); older 4.x calls ``latestOffset()``. Both are accepted.
* ``commit(end)`` arrives after the *next* micro-batch was planned, so it must not be where
  progress is recorded; it does nothing here.
* The planner runs in its own Python process which unpickles this reader: keep the reader's
  state small and rebuild connections per call.
* ``Trigger.AvailableNow``: :meth:`StreamReader.prepareForTriggerAvailableNow` pins the latest
  offsets at the query's start; partitions created later are left for the next run.
* ``minOffsetsPerTrigger``/``maxTriggerDelay``: Spark's Kafka source asks for a ``ReadMinRows``
  carrying the delay, or a composite of it and ``ReadMaxRows``. Spark 4.3's Python API has
  ``ReadMinRows(min_rows)`` without a delay and no composite limit, so the reader applies both
  options itself: :meth:`StreamReader.latestOffset` returns ``start`` (Spark then runs no
  micro-batch) while fewer than ``minOffsetsPerTrigger`` new offsets exist and less than
  ``maxTriggerDelay`` passed since the last trigger; ``maxOffsetsPerTrigger`` still caps the
  batch it lets through. The last trigger's time lives in the reader, which the planner process
  keeps for the query's run; a restarted query lets its first trigger through, as Spark's does.
  Under ``availableNow`` the minimum is ignored: waiting there would hold the run back for up to
  the delay with nothing more to come.

Example::

    q = (spark.readStream.format("fastkafka")
         .option("kafka.bootstrap.servers", "127.0.0.1:9092").option("subscribe", "orders")
         .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 100000).load()
         .writeStream.format("parquet").option("path", "out/")
         .option("checkpointLocation", "chk/").trigger(availableNow=True).start())
"""
from __future__ import annotations

import time
from typing import Iterator

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows, ReadMinRows,
                                              SupportsTriggerAvailableNow)

from . import planning
from .batch import RangePartition, broker_offsets, read_range, resolve
from .broker import connect, discover
from .options import SourceOptions

__all__ = ["StreamReader"]


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader; see the module notes for the offset protocol."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._target: dict | None = None   # availableNow: latest offsets when the query began
        self._last_trigger: float | None = None   # monotonic seconds; None: none yet this run

    def _connect(self):
        return connect(self.opts)

    def initialOffset(self) -> dict:
        opts = self.opts
        with self._connect() as cluster:
            tps = discover(cluster, opts)
            earliest, latest = broker_offsets(cluster, tps, self.opts.isolation_level)
            start = resolve(cluster, opts, opts.starting, tps, earliest, latest, "start")
        return planning.offsets_to_json(start)

    def getDefaultReadLimit(self):
        n = self.opts.max_offsets_per_trigger
        if n is None and self.opts.min_offsets_per_trigger is not None:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def _hold_back(self, base: dict, latest: dict, limit) -> bool:
        """Whether to skip this trigger: too few new offsets and the delay not yet over."""
        min_rows = self.opts.min_offsets_per_trigger
        if min_rows is None or self._target is not None or isinstance(limit, ReadAllAvailable):
            return False
        if isinstance(limit, ReadMinRows):
            min_rows = limit.min_rows
        now = time.monotonic()
        waited = None if self._last_trigger is None else now - self._last_trigger
        if waited is not None and waited * 1000 < self.opts.max_trigger_delay_ms:
            if sum(max(0, latest[tp] - base[tp]) for tp in latest) < min_rows:
                return True
        self._last_trigger = now
        return False

    def prepareForTriggerAvailableNow(self) -> None:
        with self._connect() as cluster:
            _, self._target = broker_offsets(cluster, discover(cluster, self.opts), self.opts.isolation_level)

    def _available(self, cluster) -> tuple[dict, dict]:
        """``(earliest, latest)`` now, the latest capped at the availableNow target."""
        tps = discover(cluster, self.opts)
        if self._target is not None:
            tps = [tp for tp in tps if tp in self._target]
        earliest, latest = broker_offsets(cluster, tps, self.opts.isolation_level)
        if self._target is not None:
            latest = {tp: min(off, self._target[tp]) for tp, off in latest.items()}
        return earliest, latest

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        with self._connect() as cluster:
            earliest, latest = self._available(cluster)
        if start is None:   # Spark before 4.2: no start, no read limit
            return planning.offsets_to_json(latest)
        begun = planning.offsets_from_json(start)
        # New partitions start at their earliest offset; partitions that vanished keep theirs.
        base = {tp: begun.get(tp, earliest[tp]) for tp in latest}
        if self._hold_back(base, latest, limit):
            return start
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = planning.rate_limit(base, latest, max_rows)
        for tp, off in begun.items():
            end.setdefault(tp, off)
        if all(end.get(tp) == off for tp, off in begun.items()) and all(
                end[tp] == base[tp] for tp in end if tp not in begun):
            return start   # nothing new: Spark skips the micro-batch when end == start
        return planning.offsets_to_json(end)

    def reportLatestOffset(self) -> dict | None:
        with self._connect() as cluster:
            _, latest = self._available(cluster)
        return planning.offsets_to_json(latest)

    def partitions(self, start: dict, end: dict) -> list:
        s, e = planning.offsets_from_json(start), planning.offsets_from_json(end)
        if s == e:
            return []
        with self._connect() as cluster:
            earliest, _ = broker_offsets(cluster, sorted(e))
        ranges = planning.plan_ranges(s, e, earliest=earliest,
                                      fail_on_data_loss=self.opts.fail_on_data_loss)
        return [RangePartition.of(r)
                for r in planning.split_ranges(ranges, self.opts.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator:
        return read_range(self.opts, partition)

    def commit(self, end: dict) -> None:
        # Spark calls this a micro-batch late; the checkpoint already holds ``end``. Offsets are
        # never committed to the broker.
        pass
