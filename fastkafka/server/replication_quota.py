"""Replication throttles (KIP-73, Kafka's ReplicationQuotaManager): a bound on the bytes/s that
moving replicas cost, so a reassignment or a replica catching up cannot starve producers.

Which replicas: the topic configs ``leader.replication.throttled.replicas`` and
``follower.replication.throttled.replicas`` list ``partition:broker`` pairs (or ``*``); a broker
throttles the partitions listed with its own id -- as their leader in what it sends, as their
follower in what it fetches. How fast: the dynamic broker configs
``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate``, measured
like client quotas over ``replication.quota.window.num`` windows of
``replication.quota.window.size.seconds``.

A throttled replica in the ISR is never held back (Kafka's ``shouldLeaderThrottle`` /
``shouldFollowerThrottle``): only one out of sync, or a new one a reassignment adds. While the
measured rate is over the bound the leader answers such a follower's partition empty and the
follower leaves it out of its fetch; the bytes of throttled partitions are recorded either way.

Example::

    >>> q = ReplicationQuota(broker_id=2, bound=1000, samples=2, window_ms=1000, clock=lambda: 0)
    >>> entries = ("0:1", "0:2", "3:2")           # leader.replication.throttled.replicas of a topic
    >>> [p for p in range(4) if q.is_throttled(entries, p)]
    [0, 3]
    >>> q.exceeded(), q.record(5000), q.exceeded()  # 5000 bytes in the first second: 5000/s
    (False, None, True)
"""
from __future__ import annotations

import time
from typing import Callable

from fastkafka.config.keys import LONG_MAX
from fastkafka.security.quota_rate import QuotaSensor
from fastkafka.config.definitions import (BROKER_ID, REPLICATION_QUOTA_WINDOW_NUM,
                                          REPLICATION_QUOTA_WINDOW_SIZE_SECONDS)

__all__ = ["ReplicationQuota", "LEADER_RATE", "FOLLOWER_RATE"]

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
_ALL = "*"


def _monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class ReplicationQuota:
    """One direction's throttle (a leader's sending or a follower's fetching). Thread-safe."""

    def __init__(self, broker_id: int, bound: float, samples: int, window_ms: float,
                 clock: Callable[[], float] = _monotonic_ms):
        self.broker_id = broker_id
        self._clock = clock
        self._sensor = QuotaSensor(self._bound(bound), samples, window_ms)
        self._mine = str(broker_id)
        self._parsed: dict[tuple[str, ...], frozenset[int] | str] = {}

    @classmethod
    def from_config(cls, config, rate: str) -> "ReplicationQuota":
        """The throttle of broker config ``rate`` (LEADER_RATE or FOLLOWER_RATE)."""
        return cls(config[BROKER_ID], config[rate], config[REPLICATION_QUOTA_WINDOW_NUM],
                   config[REPLICATION_QUOTA_WINDOW_SIZE_SECONDS] * 1000.0)

    @staticmethod
    def _bound(bound: float) -> float:
        return float("inf") if bound >= LONG_MAX else float(bound)

    def set_bound(self, bound: float) -> None:
        """A new rate (the dynamic broker config changed)."""
        self._sensor.bound = self._bound(bound)

    @property
    def unlimited(self) -> bool:
        return self._sensor.bound == float("inf")

    def is_throttled(self, entries: tuple[str, ...], partition: int) -> bool:
        """Does the topic config ``entries`` (``partition:broker`` pairs or ``*``) throttle
        ``partition`` on this broker?"""
        if not entries:
            return False
        mine = self._parsed.get(entries)
        if mine is None:
            if len(self._parsed) > 1024:      # configs changed many times: forget the old ones
                self._parsed.clear()
            mine = self._parsed[entries] = _ALL if _ALL in entries else frozenset(
                int(p) for p, _, b in (e.partition(":") for e in entries) if b == self._mine)
        return mine is _ALL or partition in mine

    def exceeded(self) -> bool:
        """Is the measured rate over the bound now?"""
        if self.unlimited:
            return False
        return self._sensor.record(0, self._clock()) > 0

    def record(self, nbytes: int) -> None:
        """Count ``nbytes`` moved for throttled partitions."""
        if nbytes:
            self._sensor.record(nbytes, self._clock(), check=False)
