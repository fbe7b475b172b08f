"""The arithmetic of client quotas (KIP-13, KIP-124): Kafka's windowed rate and the throttle time
a violation earns. No clock and no I/O: every call takes the time in milliseconds.

A :class:`Rate` is Kafka's ``Rate`` over a ``WindowedSum`` (``org.apache.kafka.common.metrics``):
values are summed into ``samples`` windows of ``window_ms`` each (Kafka's ``quota.window.num``,
11, and ``quota.window.size.seconds``, 1 s). A new window starts when the current one is
``window_ms`` old, reusing the oldest of ``samples + 1`` slots; a window whose last event is
``samples * window_ms`` old no longer counts. The measured rate is the sum over the windows
divided by the time since the oldest window started -- but never by less than ``samples - 1``
whole windows, so a first burst is averaged over ten seconds rather than reported as a huge
rate (Kafka's ``Rate.windowSize``).

When the rate ``O`` exceeds the quota ``T`` over that window ``W``, the client is throttled for
``X = (O - T) / T * W``: the time after which, with nothing more recorded, ``O * W / (W + X)``
is back at ``T`` (``QuotaUtils.throttleTime``). The request-time quota caps ``X`` at one
``quota.window.size.seconds`` (``ClientRequestQuotaManager``).

:class:`QuotaSensor` is one quota entity's rate and bound, thread-safe, with Kafka's
record-then-check order (and ``unrecord`` for a throttled fetch, whose bytes are not sent).

:class:`TokenBucketSensor` is the controller mutation quota's (KIP-599): Kafka's ``TokenBucket``
refilled at ``bound`` tokens per second up to a burst of ``bound * samples * window`` (a sampled
rate would hold one large burst against the client until its window expired). A client is over
the quota while the bucket is below zero, and waits ``-tokens / bound`` seconds for it to refill.

Example: a 5 MB burst against a 1 MB/s quota over 11 windows of 1 s::

    >>> rate = Rate(samples=11, window_ms=1000)
    >>> rate.record(5_000_000, now_ms=0)
    >>> rate.window_size(0), rate.measure(0)       # averaged over 10 whole windows
    (10000, 500000.0)
    >>> sensor = QuotaSensor(bound=1_000_000, samples=11, window_ms=1000)
    >>> sensor.record(11_000_000, now_ms=0)        # 1.1 MB/s over 10 s: 1 s of throttle
    1000
    >>> sensor.record(100, now_ms=500)             # half a second on, still over the quota
    500

and 30 partition mutations against 2 per second over 11 windows of 1 s (a burst of 22)::

    >>> bucket = TokenBucketSensor(bound=2, samples=11, window_ms=1000)
    >>> bucket.admit(30, now_ms=0), bucket.tokens    # admitted: the bucket was not yet below zero
    (0, -8.0)
    >>> bucket.admit(1, now_ms=1000)                 # refused: 3 s until it is back at zero
    3000
"""
from __future__ import annotations

import threading

__all__ = ["Rate", "QuotaSensor", "TokenBucketSensor", "throttle_time_ms"]

_UNLIMITED = float("inf")   # the bound of a rate no quota applies to: measured, never checked


class Rate:
    """Values per second over sampled windows, as Kafka measures them. Not thread-safe.

    The windows are three parallel lists (value, start, last event) rather than objects, so a
    measurement is a few C-level ``sum``/``min`` calls: it runs once per charged request."""

    __slots__ = ("samples", "window_ms", "held", "_values", "_starts", "_lasts", "_current")

    def __init__(self, samples: int, window_ms: float):
        if samples < 1 or window_ms <= 0:
            raise ValueError("a rate needs at least one sample of a positive length")
        self.samples = samples
        self.window_ms = window_ms
        # up to samples + 1 windows: the extra one overlaps the measured span
        self._values: list[float] = []
        self._starts: list[float] = []
        self._lasts: list[float] = []
        self._current = 0
        # the sum of every window's value, obsolete ones included: with non-negative values,
        # at least what total() finds, so a rate that is within a bound by it needs no measuring
        self.held = 0.0

    def record(self, value: float, now_ms: float) -> None:
        i = self._current
        if not self._values:
            self._new_window(now_ms)
        elif now_ms - self._starts[i] >= self.window_ms:
            i = self._advance(now_ms)
        self._values[i] += value
        self._lasts[i] = now_ms
        self.held += value

    def _new_window(self, now_ms: float) -> None:
        self._values.append(0.0)
        self._starts.append(now_ms)
        self._lasts.append(now_ms)

    def _reset(self, i: int, now_ms: float) -> None:
        self.held -= self._values[i]
        self._values[i] = 0.0
        self._starts[i] = now_ms
        self._lasts[i] = now_ms

    def _advance(self, now_ms: float) -> int:
        i = self._current = (self._current + 1) % (self.samples + 1)
        if i >= len(self._values):
            self._new_window(now_ms)
        else:
            self._reset(i, now_ms)
        return i

    def sum_and_window(self, now_ms: float) -> tuple[float, float]:
        """The sum over the windows still counted, and the milliseconds it is measured over:
        since the oldest window started, at least ``samples - 1`` whole windows (and 1 ms).
        A window with no event in the last ``samples * window_ms`` restarts empty first."""
        lasts = self._lasts
        if not lasts:
            total, oldest = 0.0, now_ms
        else:
            expire = self.samples * self.window_ms
            if now_ms - min(lasts) >= expire:
                for i, last in enumerate(lasts):
                    if now_ms - last >= expire:
                        self._reset(i, now_ms)
            total, oldest = sum(self._values), min(self._starts)
        elapsed = now_ms - oldest
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return total, max(elapsed, 1.0)

    def total(self, now_ms: float) -> float:
        """The sum of the values still inside the measured windows."""
        return self.sum_and_window(now_ms)[0]

    def window_size(self, now_ms: float) -> float:
        """Milliseconds the rate is measured over (Kafka's ``Rate.windowSize``)."""
        return self.sum_and_window(now_ms)[1]

    def measure(self, now_ms: float) -> float:
        """Values per second."""
        total, window = self.sum_and_window(now_ms)
        return total / (window / 1000.0)


def throttle_time_ms(observed: float, bound: float, window_ms: float) -> int:
    """How long to throttle a client measured at ``observed`` per second over ``window_ms``
    against the quota ``bound`` (0 when within it), rounded like Java's ``Math.round``."""
    if observed <= bound:
        return 0
    return int((observed - bound) / bound * window_ms + 0.5)


class QuotaSensor:
    """One quota entity's rate against its bound (bytes/s, or percent of a thread for request
    time). Thread-safe. ``max_throttle_ms`` caps the throttle (the request-time quota's)."""

    __slots__ = ("bound", "max_throttle_ms", "last_record_ms", "_rate", "_lock", "_shortest_s")

    def __init__(self, bound: float, samples: int, window_ms: float, max_throttle_ms: float | None = None):
        self.bound = bound
        self.max_throttle_ms = max_throttle_ms
        self.last_record_ms = 0.0
        self._rate = Rate(samples, window_ms)
        self._lock = threading.Lock()
        # a rate is never measured over less than samples - 1 windows (the margin keeps float
        # rounding of the running sum on the safe side)
        self._shortest_s = (samples - 1) * window_ms / 1000.0 * (1 - 1e-9)

    def record(self, value: float, now_ms: float, check: bool = True) -> int:
        """Add ``value`` at ``now_ms``; the throttle time in ms if the rate is now over the bound."""
        with self._lock:
            rate = self._rate
            rate.record(value, now_ms)
            self.last_record_ms = now_ms
            bound = self.bound
            if not check or bound == _UNLIMITED or rate.held <= bound * self._shortest_s:
                return 0      # (well within the quota: no need to measure exactly)
            total, window = rate.sum_and_window(now_ms)
            observed = total / (window / 1000.0)
            if observed <= bound:
                return 0
            throttle = throttle_time_ms(observed, bound, window)
        cap = self.max_throttle_ms
        return throttle if cap is None or throttle <= cap else int(cap)

    def unrecord(self, value: float, now_ms: float) -> None:
        """Take back a recorded ``value`` (Kafka records it negated: a throttled fetch is
        answered empty, so its bytes were never sent)."""
        with self._lock:
            self._rate.record(-value, now_ms)

    def rate(self, now_ms: float) -> float:
        with self._lock:
            return self._rate.measure(now_ms)


class TokenBucketSensor:
    """One quota entity's token bucket (the controller mutation quota's sensor). Thread-safe.

    Built like :class:`QuotaSensor` (``bound`` may be changed later: the burst follows it), so
    the quota types keep either kind per client. The bucket starts full."""

    __slots__ = ("bound", "last_record_ms", "tokens", "_window_s", "_updated_ms", "_lock")

    def __init__(self, bound: float, samples: int, window_ms: float, max_throttle_ms: float | None = None):
        self.bound = bound
        self._window_s = samples * window_ms / 1000.0     # the burst is bound * this
        self.tokens = bound * self._window_s
        self.last_record_ms = 0.0
        self._updated_ms: float | None = None      # last refill (None: full, never used)
        self._lock = threading.Lock()

    def _refill(self, now_ms: float) -> None:
        last = self._updated_ms
        if last is None or now_ms > last:   # (a clock read before another caller's is not newer)
            elapsed_s = float("inf") if last is None else (now_ms - last) / 1000.0
            self.tokens = min(self.bound * self._window_s, self.tokens + self.bound * elapsed_s)
            self._updated_ms = now_ms

    def _throttle_ms(self) -> int:
        return int(-self.tokens / self.bound * 1000.0 + 0.5) if self.tokens < 0 else 0

    def admit(self, permits: float, now_ms: float) -> int:
        """Strict: take ``permits`` unless the bucket is already below zero (however many they
        are); the milliseconds until it is back at zero when refused, else 0."""
        if self.bound == _UNLIMITED:
            return 0
        with self._lock:
            self._refill(now_ms)
            throttle = self._throttle_ms()
            if throttle == 0:
                self.tokens -= permits
                self.last_record_ms = now_ms
            return throttle

    def record(self, permits: float, now_ms: float) -> int:
        """Permissive: take ``permits`` whatever the bucket holds; the milliseconds until it is
        back at zero (0 while it is not below zero)."""
        if self.bound == _UNLIMITED:
            return 0
        with self._lock:
            self._refill(now_ms)
            self.tokens -= permits
            self.last_record_ms = now_ms
            return self._throttle_ms()
