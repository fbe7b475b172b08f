"""Filter pushdown: Spark's filters on ``partition``, ``offset`` and ``timestamp`` narrowed to the
offset ranges a batch read plans, so ``WHERE timestamp >= '2026-11-01'`` on a large topic reads
only that window. Pure functions; the reader asks the broker for the offsets of a time.

What is pushed, and whether Spark must still check it:

* ``partition`` ``=`` / ``IN`` and ``offset`` ``= < <= > >=``: exact, consumed here;
* ``timestamp`` ``>`` / ``>=``: the read starts at the first offset whose timestamp is at or
  after the bound (Kafka's ListOffsets by time), so no matching record before it is skipped;
  records after it may still be older (CreateTime need not grow with offsets), so Spark keeps
  the filter;
* ``timestamp`` ``<`` / ``<=`` and everything else: left to Spark. An upper time bound cannot
  end a range early: ListOffsets only finds the first offset at or after a time, and a later
  record may carry an older CreateTime.

Example::

    >>> from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan
    >>> pushed, rest = push_filters([In(("partition",), (0, 2)), GreaterThanOrEqual(("offset",), 10),
    ...                              LessThan(("offset",), 20), EqualTo(("key",), b"k")])
    >>> sorted(pushed.partitions), pushed.min_offset, pushed.end_offset, [f.attribute for f in rest]
    ([0, 2], 10, 20, [('key',)])
    >>> [(r.partition, r.start, r.end) for r in narrow([OffsetRange("t", 0, 0, 100),
    ...                                                  OffsetRange("t", 1, 0, 100)], pushed, {})]
    [(0, 10, 20)]
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from pyspark.sql.datasource import (EqualTo, Filter, GreaterThan, GreaterThanOrEqual, In, LessThan,
                                    LessThanOrEqual)

from .planning import OffsetRange

__all__ = ["Pushed", "push_filters", "narrow"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Pushed:
    """What the pushed filters allow: partitions (None: all), offsets ``[min_offset,
    end_offset)`` and records at or after ``min_timestamp_ms`` (None: any time)."""
    partitions: frozenset[int] | None = None
    min_offset: int = 0
    end_offset: int | None = None
    min_timestamp_ms: int | None = None


def _micros(value) -> int | None:
    """A timestamp literal as microseconds since the epoch; naive values are local time, as
    PySpark hands them over."""
    if not isinstance(value, dt.datetime):
        return None
    if value.tzinfo is None:
        value = value.astimezone()
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _push_one(p: Pushed, f: Filter) -> tuple[Pushed, bool]:
    """``(narrowed, exact)``; ``p`` unchanged and not exact when ``f`` cannot be pushed."""
    col = f.attribute if hasattr(f, "attribute") else None
    if col == ("partition",):
        values = (f.value,) if isinstance(f, EqualTo) else f.value if isinstance(f, In) else None
        if values is None or any(_int(v) is None for v in values):
            return p, False
        keep = frozenset(values) if p.partitions is None else p.partitions & frozenset(values)
        return replace(p, partitions=keep), True
    if col == ("offset",):
        v = _int(getattr(f, "value", None))
        bounds = None if v is None else {
            EqualTo: (v, v + 1), GreaterThan: (v + 1, None), GreaterThanOrEqual: (v, None),
            LessThan: (0, v), LessThanOrEqual: (0, v + 1)}.get(type(f))
        if bounds is None:
            return p, False
        lo, hi = bounds
        end = p.end_offset if hi is None else hi if p.end_offset is None else min(hi, p.end_offset)
        return replace(p, min_offset=max(p.min_offset, lo), end_offset=end), True
    if col == ("timestamp",) and isinstance(f, (GreaterThan, GreaterThanOrEqual)):
        us = _micros(f.value)
        if us is None:
            return p, False
        ms = us // 1000 + 1 if isinstance(f, GreaterThan) else -(-us // 1000)   # record ts are ms
        if p.min_timestamp_ms is None or ms > p.min_timestamp_ms:
            p = replace(p, min_timestamp_ms=ms)
        return p, False
    return p, False


def push_filters(filters: Iterable[Filter]) -> tuple[Pushed, list[Filter]]:
    """The narrowing ``filters`` (ANDed) allow, and the filters Spark must still evaluate (the
    input objects themselves, as Spark requires)."""
    pushed, rest = Pushed(), []
    for f in filters:
        pushed, exact = _push_one(pushed, f)
        if not exact:
            rest.append(f)
    return pushed, rest


def narrow(ranges: list[OffsetRange], pushed: Pushed, first_at_time: Mapping[tuple, int]
           ) -> list[OffsetRange]:
    """``ranges`` cut to what ``pushed`` allows; ``first_at_time[tp]`` is the first offset at or
    after ``pushed.min_timestamp_ms`` (-1: no record that recent)."""
    out = []
    for r in ranges:
        if pushed.partitions is not None and r.partition not in pushed.partitions:
            continue
        lo, hi = max(r.start, pushed.min_offset), r.end
        if pushed.end_offset is not None:
            hi = min(hi, pushed.end_offset)
        at = first_at_time.get((r.topic, r.partition))
        if at is not None:
            lo = max(lo, hi if at < 0 else at)
        if hi > lo:
            out.append(replace(r, start=lo, end=hi))
    return out
