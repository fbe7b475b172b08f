"""A tiny scheduler with an injectable clock: retention, delayed file deletion, flushes, checkpoints.

Tasks run on a background thread (``start()``) or, in tests, when ``run_due(now)`` is called with a
fake clock. Thread-safe.

Example::

    >>> now = [0]
    >>> s = Scheduler(clock=lambda: now[0])
    >>> ran = []
    >>> _ = s.schedule(1000, lambda: ran.append("x"))
    >>> now[0] = 1000; s.run_due(); ran
    1
    ['x']
"""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


# the same clock in C (a third of the cost: Log.append reads it once per call)
from .._core.segment import wall_clock_ms  # noqa: E402,F811


class Scheduler:
    """Runs callables after a delay (ms), once or every ``period_ms``."""

    def __init__(self, clock: Callable[[], int] = wall_clock_ms, name: str = "fastkafka-scheduler"):
        self.clock = clock
        self.name = name
        self._heap: list[tuple[int, int, Callable[[], object], int | None]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def schedule(self, delay_ms: int, fn: Callable[[], object], period_ms: int | None = None) -> int:
        """Run ``fn`` after ``delay_ms`` (then every ``period_ms`` if given); returns a task id."""
        seq = next(self._seq)
        with self._cond:
            heapq.heappush(self._heap, (self.clock() + max(0, delay_ms), seq, fn, period_ms))
            self._cond.notify()
        return seq

    def run_due(self, now: int | None = None) -> int:
        """Run every task due at ``now`` (default: the clock); returns how many ran."""
        ran = 0
        while True:
            with self._cond:
                t = self.clock() if now is None else now
                if not self._heap or self._heap[0][0] > t:
                    return ran
                due, seq, fn, period = heapq.heappop(self._heap)
                if period is not None:
                    heapq.heappush(self._heap, (t + period, seq, fn, period))
            try:
                fn()
            except Exception:  # a failing task must not stop the others
                log.exception("scheduled task %r failed", fn)
            ran += 1

    def pending(self) -> int:
        with self._cond:
            return len(self._heap)

    def start(self) -> None:
        """Run tasks on a daemon thread using the clock (real time only)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                if self._stopping:
                    return
                wait = (self._heap[0][0] - self.clock()) / 1000 if self._heap else 1.0
                if wait > 0:
                    self._cond.wait(min(wait, 1.0))
                    continue
            self.run_due()

    def shutdown(self, run_pending: bool = False) -> None:
        """Stop the thread; optionally run every remaining one-shot task now (file deletions)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if run_pending:
            with self._cond:
                tasks = [(fn, period) for _, _, fn, period in self._heap]
                self._heap.clear()
            for fn, period in tasks:
                if period is None:
                    try:
                        fn()
                    except Exception:
                        log.exception("scheduled task %r failed", fn)
