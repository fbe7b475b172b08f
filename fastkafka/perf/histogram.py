"""A bounded latency histogram: HdrHistogram's layout with a fixed precision of 1/128.

Values are microseconds. Below 256 µs each value has its own bucket; above, a value with bit
length ``b`` falls into one of 128 buckets of width ``2**(b-8)``, so a bucket's width is at most
1/128 (0.8%) of its values. Up to an hour that is 3,200 buckets whatever the record count,
where a list of every record's latency would grow to gigabytes at 10^7-10^8 records.

Thread-safety: none; one thread records (the producer's ack callback), others read after it stops.

Example::

    >>> h = LatencyHistogram()
    >>> for ms in (1, 2, 3, 100):
    ...     h.record_ms(ms)
    >>> h.count, h.max_ms, round(h.percentile_ms(0.5), 1), round(h.mean_ms, 1)
    (4, 100.0, 2.0, 26.5)
"""
from __future__ import annotations

__all__ = ["LatencyHistogram"]

_SUB_BITS = 8                       # 2**8 exact values, then 2**7 buckets per power of two
_EXACT = 1 << _SUB_BITS
_HALF = _EXACT >> 1
_MAX_US = 3_600_000_000             # an hour: anything slower is clamped (and counted)


def _index(us: int) -> int:
    if us < _EXACT:
        return us
    shift = us.bit_length() - _SUB_BITS
    return _EXACT + (shift - 1) * _HALF + ((us >> shift) - _HALF)


def _highest_equivalent(index: int) -> int:
    """The largest value that lands in bucket ``index`` (what a percentile reports, as
    HdrHistogram's highestEquivalentValue: never below the true value)."""
    if index < _EXACT:
        return index
    shift, sub = divmod(index - _EXACT, _HALF)
    shift += 1
    return ((sub + _HALF + 1) << shift) - 1


class LatencyHistogram:
    """Counts of latencies in log-spaced buckets; exact count, sum, min and max beside them."""

    __slots__ = ("counts", "count", "total_us", "min_us", "max_us")

    def __init__(self):
        self.counts = [0] * (_index(_MAX_US) + 1)
        self.count = 0
        self.total_us = 0
        self.min_us = 0
        self.max_us = 0

    def record_ms(self, ms: float, count: int = 1) -> None:
        """Add ``count`` observations of ``ms`` milliseconds (a batch acknowledged at once
        counts each of its records)."""
        us = min(max(int(ms * 1000.0 + 0.5), 0), _MAX_US)
        self.counts[_index(us)] += count
        if self.count == 0 or us < self.min_us:
            self.min_us = us
        if us > self.max_us:
            self.max_us = us
        self.count += count
        self.total_us += us * count

    def merge(self, other: "LatencyHistogram") -> None:
        """Add every observation of ``other`` to this histogram."""
        if other.count == 0:
            return
        for i, c in enumerate(other.counts):
            if c:
                self.counts[i] += c
        self.min_us = other.min_us if self.count == 0 else min(self.min_us, other.min_us)
        self.max_us = max(self.max_us, other.max_us)
        self.count += other.count
        self.total_us += other.total_us

    @property
    def mean_ms(self) -> float:
        return self.total_us / self.count / 1000.0 if self.count else 0.0

    @property
    def max_ms(self) -> float:
        return self.max_us / 1000.0

    def percentile_ms(self, q: float) -> float:
        """The latency below which a fraction ``q`` (0..1) of observations lie, nearest rank,
        within the bucket precision (0 when empty; never above the recorded maximum)."""
        if self.count == 0:
            return 0.0
        rank = max(1, min(self.count, int(q * self.count + 0.999999)))
        seen = 0
        for i, c in enumerate(self.counts):
            seen += c
            if seen >= rank:
                return min(_highest_equivalent(i), self.max_us) / 1000.0
        return self.max_ms   # pragma: no cover - the counts always add up to count

    def percentiles_ms(self, qs=(0.5, 0.95, 0.99, 0.999)) -> list[float]:
        return [self.percentile_ms(q) for q in qs]
