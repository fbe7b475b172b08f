"""Batch reads: ``spark.read.format("fastkafka")`` plans offset ranges, tasks fetch them.

The driver-side planner (:meth:`BatchReader.partitions`) asks the broker for the subscribed
partitions and their offsets and hands them to the pure planning functions; each Spark task then
reads one :class:`RangePartition` with :func:`read_range`, a stateless function that opens its
own connection, so a failed task is simply redone on the same offsets (no duplicates).

Example::

    df = (spark.read.format("fastkafka")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders")
          .option("startingOffsets", '{"orders":{"0":100,"1":-2}}')
          .option("minPartitions", 8)
          .load())
"""
from __future__ import annotations

from typing import Iterator

from pyspark.sql.datasource import DataSourceReader, InputPartition

from . import planning, pushdown
from .broker import EARLIEST, LATEST, connect, discover, fetch_range, list_offsets, prefetched
from .options import SourceOptions

__all__ = ["BatchReader", "PushdownBatchReader", "RangePartition", "read_range", "broker_offsets"]


class RangePartition(InputPartition):
    """One Spark task's work: offsets ``[start, end)`` of ``topic``-``partition``."""

    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end

    @classmethod
    def of(cls, r: planning.OffsetRange) -> "RangePartition":
        return cls(r.topic, r.partition, r.start, r.end)


def read_range(opts: SourceOptions, part: InputPartition) -> Iterator:
    """Arrow batches of one partition's range (nothing for Spark's placeholder partition,
    which it plans when there is nothing to read)."""
    if not isinstance(part, RangePartition) or part.start >= part.end:
        return iter(())
    return _read(opts, part)


def _read(opts, part):
    with connect(opts) as cluster:
        yield from prefetched(fetch_range(cluster, part.topic, part.partition, part.start,
                                          part.end, opts))


def broker_offsets(cluster, tps: list, isolation_level: int = 0) -> tuple[dict, dict]:
    """``(earliest, latest)`` offsets of ``tps`` (latest: the last stable offset when
    ``isolation_level`` is 1, read_committed)."""
    if not tps:
        return {}, {}
    return (list_offsets(cluster, dict.fromkeys(tps, EARLIEST)),
            list_offsets(cluster, dict.fromkeys(tps, LATEST), isolation_level))


def resolve(cluster, opts: SourceOptions, spec, tps, earliest, latest, role: str) -> dict:
    """``spec`` resolved to one offset per partition, asking the broker for timestamps."""
    queries = planning.timestamp_queries(spec, tps)
    found = list_offsets(cluster, queries) if queries else {}
    return planning.resolve_offsets(spec, tps, earliest=earliest, latest=latest,
                                    by_timestamp=found, role=role,
                                    timestamp_strategy=opts.starting_timestamp_strategy)


class BatchReader(DataSourceReader):
    """Reader of a fixed offset range, planned once when the query is planned."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self.pushed = pushdown.Pushed()

    def partitions(self) -> list:
        opts, pushed = self.opts, self.pushed
        with connect(opts) as cluster:
            tps = [tp for tp in discover(cluster, opts)
                   if pushed.partitions is None or tp[1] in pushed.partitions]
            earliest, latest = broker_offsets(cluster, tps, opts.isolation_level)
            start = resolve(cluster, opts, opts.starting, tps, earliest, latest, "start")
            end = resolve(cluster, opts, opts.ending, tps, earliest, latest, "end")
            at_time = {} if pushed.min_timestamp_ms is None or not tps else \
                list_offsets(cluster, dict.fromkeys(tps, pushed.min_timestamp_ms))
        ranges = planning.plan_ranges(start, end, earliest=earliest,
                                      fail_on_data_loss=opts.fail_on_data_loss)
        ranges = pushdown.narrow(ranges, pushed, at_time)
        return [RangePartition.of(r) for r in planning.split_ranges(ranges, opts.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator:
        return read_range(self.opts, partition)


class PushdownBatchReader(BatchReader):
    """A batch reader that narrows its ranges by Spark's filters (option ``pushFilters``)."""

    def pushFilters(self, filters: list) -> list:
        self.pushed, rest = pushdown.push_filters(filters)
        return rest
