"""Offset-range planning: pure functions from offsets to the ranges Spark's tasks read.

Nothing here talks to a broker or to Spark. The caller asks the broker for each partition's
earliest and latest offsets (and, for timestamps, the first offset at or after a time), and these
functions decide what to read:

* :func:`resolve_offsets` turns an :class:`~fastkafka.spark.options.OffsetSpec` into one offset
  per partition;
* :func:`plan_ranges` pairs starts with ends, checking for lost data like Spark does;
* :func:`split_ranges` cuts large ranges so there are at least ``minPartitions`` of them;
* :func:`rate_limit` caps a micro-batch at ``maxOffsetsPerTrigger``, shared out in proportion to
  what each partition has waiting;
* :func:`offsets_to_json` / :func:`offsets_from_json` are the streaming checkpoint format,
  ``{"topic": {"partition": offset}}`` with string partition keys (JSON has no int keys).

Example::

    >>> tp = ("t", 0)
    >>> ranges = plan_ranges({tp: 0}, {tp: 100}, earliest={tp: 0})
    >>> [(r.start, r.end) for r in split_ranges(ranges, 3)]
    [(0, 33), (33, 66), (66, 100)]
    >>> rate_limit({tp: 0, ("t", 1): 0}, {tp: 90, ("t", 1): 10}, 10)
    {('t', 0): 9, ('t', 1): 1}
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from .options import EARLIEST, LATEST, OffsetSpec

__all__ = ["OffsetRange", "PlanningError", "DataLossError", "timestamp_queries",
           "resolve_offsets", "plan_ranges", "split_ranges", "rate_limit", "offsets_to_json",
           "offsets_from_json"]

_DATA_LOSS = (
    "Some data may have been lost because they are not available in Kafka any more; either the\n"
    " data was aged out by Kafka or the topic may have been deleted before all the data in the\n"
    " topic was processed. If you don't want your streaming query to fail on such cases, set the\n"
    " source option \"failOnDataLoss\" to \"false\".\n")


class PlanningError(ValueError):
    """Offsets that cannot make a valid plan (Spark raises IllegalArgumentException/assertion)."""


class DataLossError(PlanningError):
    """Offsets to read are gone from the broker and ``failOnDataLoss`` is true."""


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition: what one Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def timestamp_queries(spec: OffsetSpec, tps: Iterable[tuple]) -> dict[tuple, int]:
    """The ``{tp: timestamp_ms}`` a spec needs looked up on the broker (empty for offsets)."""
    if spec.kind == "timestamp":
        return {tp: spec.timestamp for tp in tps}
    if spec.kind == "timestamps":
        return {tp: spec.offsets[tp] for tp in tps if tp in spec.offsets}
    return {}


def _check_all_specified(spec: OffsetSpec, tps: list, role: str) -> None:
    specified = set(spec.offsets)
    if specified != set(tps):
        what = "offsets" if spec.kind == "offsets" else "timestamps"
        raise PlanningError(
            f"If {role} contains specific {what}, you must specify all TopicPartitions.\n"
            f"Use -1 for latest, -2 for earliest.\n"
            f"Specified: {_tp_set(specified)} Assigned: {_tp_set(tps)}")


def _tp_set(tps) -> str:
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "}"


def resolve_offsets(spec: OffsetSpec, tps: Iterable[tuple], *, earliest: Mapping,
                    latest: Mapping, by_timestamp: Mapping | None = None, role: str = "start",
                    timestamp_strategy: str = "error") -> dict[tuple, int]:
    """One offset per partition in ``tps`` for ``spec``.

    ``by_timestamp`` holds the broker's answers to :func:`timestamp_queries` (None where no
    record is that recent). With ``role="start"`` no answer is an error unless
    ``timestamp_strategy`` is ``latest``; an end with no answer is the partition's end.

    >>> resolve_offsets(OffsetSpec("offsets", {("t", 0): -2, ("t", 1): 7}), [("t", 0), ("t", 1)],
    ...                 earliest={("t", 0): 3, ("t", 1): 0}, latest={("t", 0): 9, ("t", 1): 9})
    {('t', 0): 3, ('t', 1): 7}
    """
    tps = list(tps)
    name = "startingOffsets" if role == "start" else "endingOffsets"
    if spec.kind == "earliest":
        return {tp: earliest[tp] for tp in tps}
    if spec.kind == "latest":
        return {tp: latest[tp] for tp in tps}
    if spec.kind == "offsets":
        _check_all_specified(spec, tps, name)
        out = {}
        for tp in tps:
            off = spec.offsets[tp]
            out[tp] = earliest[tp] if off == EARLIEST else latest[tp] if off == LATEST else off
        return out
    if spec.kind == "timestamps":
        _check_all_specified(spec, tps, name)
    queries = timestamp_queries(spec, tps)
    found = by_timestamp or {}
    out = {}
    for tp in tps:
        off = found.get(tp)
        if off is None or off < 0:
            if role == "start" and timestamp_strategy == "error":
                raise PlanningError(f"No offset matched from request of topic-partition "
                                    f"{tp[0]}-{tp[1]} and timestamp {queries[tp]}.")
            off = latest[tp]
        out[tp] = off
    return out


def plan_ranges(start: Mapping, end: Mapping, *, earliest: Mapping,
                fail_on_data_loss: bool = True) -> list[OffsetRange]:
    """Non-empty ranges ``[start[tp], end[tp])`` for every partition of ``end``, sorted.

    A partition missing from ``start`` (new since the last micro-batch) starts at its earliest
    offset. A start below ``earliest`` means records were deleted before they were read: an error
    with ``fail_on_data_loss``, otherwise reading resumes at ``earliest``.

    >>> plan_ranges({("t", 0): 5}, {("t", 0): 9, ("t", 1): 4}, earliest={("t", 0): 0, ("t", 1): 0})
    [OffsetRange(topic='t', partition=0, start=5, end=9), OffsetRange(topic='t', partition=1, start=0, end=4)]
    """
    ranges = []
    for tp in sorted(end):
        lo = start.get(tp)
        low_water = earliest.get(tp, 0)
        if lo is None:
            lo = low_water
        elif lo < low_water:
            if fail_on_data_loss:
                raise DataLossError(f"{_DATA_LOSS}Cannot fetch offset {lo} of {tp[0]}-{tp[1]}: "
                                    f"the earliest available offset is {low_water}.")
            lo = low_water
        hi = end[tp]
        if hi < lo:
            if fail_on_data_loss or tp not in start:
                raise PlanningError(
                    f"Beginning offset {lo} is after the ending offset {hi} for topic {tp[0]} "
                    f"partition {tp[1]}. You either provided an invalid fromOffset, or the Kafka "
                    f"topic has been damaged")
            continue
        if hi > lo:
            ranges.append(OffsetRange(tp[0], tp[1], lo, hi))
    return ranges


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Cut ranges so there are at least ``min_partitions`` (when there are that many offsets).

    Each range gets a share of the parts in proportion to its size, rounded up so the total is
    never short, and is cut into near-equal consecutive pieces; small ranges stay whole.

    >>> [r.size for r in split_ranges([OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 0, 2)], 4)]
    [2, 3, 2, 3, 2]
    """
    if not min_partitions or len(ranges) >= min_partitions:
        return list(ranges)
    total = sum(r.size for r in ranges)
    if total == 0:
        return list(ranges)
    out = []
    for r in ranges:
        parts = max(1, min(r.size, math.ceil(r.size * min_partitions / total)))
        bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
        out.extend(OffsetRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:]))
    return out


def rate_limit(start: Mapping, latest: Mapping, max_offsets: int | None) -> dict[tuple, int]:
    """End offsets advancing at most ``max_offsets`` records in total past ``start``.

    Each partition gets a share proportional to its backlog, rounded down, except that a share
    below one is rounded up so a small partition is never starved (the total may then exceed
    ``max_offsets`` by a few, as with Spark). Partitions absent from ``start`` begin at 0.

    >>> rate_limit({("t", 0): 10}, {("t", 0): 15}, 100)
    {('t', 0): 15}
    """
    if max_offsets is None:
        return dict(latest)
    backlog = {tp: end - start.get(tp, 0) for tp, end in latest.items()}
    total = sum(b for b in backlog.values() if b > 0)
    if total <= max_offsets:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        size = backlog[tp]
        if size <= 0:
            out[tp] = end
            continue
        share = max_offsets * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, start.get(tp, 0) + step)
    return out


def offsets_to_json(offsets: Mapping) -> dict:
    """``{(t, p): off}`` -> the checkpoint form ``{"t": {"p": off}}`` (sorted, string keys).

    >>> offsets_to_json({("b", 1): 4, ("a", 10): 1, ("a", 2): 3})
    {'a': {'2': 3, '10': 1}, 'b': {'1': 4}}
    """
    out: dict = {}
    for (t, p) in sorted(offsets):
        out.setdefault(t, {})[str(p)] = int(offsets[(t, p)])
    return out


def offsets_from_json(obj: Mapping) -> dict[tuple, int]:
    """The checkpoint form back to ``{(t, p): off}``; int keys are accepted as well.

    >>> offsets_from_json({"a": {"2": 3}})
    {('a', 2): 3}
    """
    return {(t, int(p)): int(off) for t, parts in obj.items() for p, off in parts.items()}
