"""What a mirror reports: records and bytes copied, lag per topic, as one progress line.

Each stream counts into its own :class:`Stats`; the mirror sums them every few seconds and
prints :func:`progress_line` (``fastkafka mirror`` writes it to stderr). Lag is the source's
high watermark minus the mirror's position, per partition this process owns, as of the last
fetch of that partition; summed per source topic.

Example::

    >>> s = Stats()
    >>> s.add(1500, 1_536_000, {("orders", 0): 10, ("orders", 1): 5, ("clicks", 0): 0})
    >>> records, nbytes, lag = s.snapshot()
    >>> progress_line(records / 2.0, nbytes / 2.0, lag_by_topic(lag))
    'mirror: 750 records/s, 0.77 MB/s; lag clicks=0 orders=15'
"""
from __future__ import annotations

import threading

__all__ = ["Stats", "progress_line", "lag_by_topic"]


class Stats:
    """One stream's counters. Thread-safe: the stream adds, the mirror reads."""

    def __init__(self):
        self._lock = threading.Lock()
        self.records = 0
        self.bytes = 0
        self.lag: dict[tuple[str, int], int] = {}

    def add(self, records: int, nbytes: int, lag: dict[tuple[str, int], int]) -> None:
        with self._lock:
            self.records += records
            self.bytes += nbytes
            self.lag.update(lag)

    def owned(self, tps) -> None:
        """The stream's partitions changed: forget the lag of those it no longer owns."""
        tps = set(tps)
        with self._lock:
            self.lag = {tp: n for tp, n in self.lag.items() if tp in tps}

    def snapshot(self) -> tuple[int, int, dict[tuple[str, int], int]]:
        with self._lock:
            return self.records, self.bytes, dict(self.lag)


def lag_by_topic(lag: dict[tuple[str, int], int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for (topic, _p), n in lag.items():
        out[topic] = out.get(topic, 0) + n
    return dict(sorted(out.items()))


def progress_line(records_per_s: float, bytes_per_s: float, lag: dict[str, int]) -> str:
    lags = " ".join(f"{t}={n}" for t, n in lag.items()) or "-"
    return f"mirror: {records_per_s:,.0f} records/s, {bytes_per_s / 1e6:.2f} MB/s; lag {lags}"
