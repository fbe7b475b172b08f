"""Requests that wait: a long-polling Fetch sits here until enough bytes arrive or its time is up.

An operation is *watched* under keys (``(topic, partition)``); whoever changes a key — the
produce path after an append — calls :meth:`Purgatory.check`, which asks each watcher whether
it can finish now. A timer thread completes the ones whose deadline passes. Completion happens
exactly once whichever of the two gets there first (Kafka's DelayedOperationPurgatory, minus the
timing wheel: a heap is plenty for a single broker's waiting fetches).

Example::

    >>> import time
    >>> class Op(DelayedOperation):
    ...     ready = False
    ...     def try_complete(self): return self.ready and self.force_complete()
    ...     def on_complete(self): print("done")
    >>> p = Purgatory("demo"); op = Op(timeout_ms=10_000)
    >>> p.try_complete_else_watch(op, [("t", 0)])
    False
    >>> op.ready = True; p.check(("t", 0))
    done
    1
    >>> p.shutdown()
"""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Hashable, Iterable

__all__ = ["DelayedOperation", "Purgatory"]

log = logging.getLogger("fastkafka.server")


class DelayedOperation:
    """Subclasses implement ``try_complete`` (call ``force_complete`` when satisfied) and ``on_complete``."""

    def __init__(self, timeout_ms: int):
        self.deadline = time.monotonic() + max(0, timeout_ms) / 1000.0
        self._lock = threading.Lock()
        self.completed = False

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def force_complete(self) -> bool:
        """Complete now unless someone already did; True if this call completed it."""
        with self._lock:
            if self.completed:
                return False
            self.completed = True
        try:
            self.on_complete()
        except Exception:
            log.exception("completing a delayed %s failed", type(self).__name__)
        return True


class Purgatory:
    """Thread-safe: ops are added from handler threads and completed from any thread."""

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}
        self._heap: list[tuple[float, int, DelayedOperation]] = []
        self._seq = itertools.count()
        self._wake = threading.Condition(self._lock)
        self._stopped = False
        self._thread = threading.Thread(target=self._expire_loop, name=f"fastkafka-purgatory-{name}", daemon=True)
        self._thread.start()

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete ``op`` now if it can; otherwise watch it under ``keys`` until completion or timeout."""
        if op.try_complete():
            return True
        with self._lock:
            if self._stopped:
                stopped = True
            else:
                stopped = False
                for key in keys:
                    self._watchers.setdefault(key, []).append(op)
                heapq.heappush(self._heap, (op.deadline, next(self._seq), op))
                self._wake.notify()
        if stopped:
            op.force_complete()
            return True
        # an append may have landed between the first check and the watch
        return op.try_complete()

    def check(self, key: Hashable) -> int:
        """Something changed under ``key``: let its watchers try to finish. Returns how many did."""
        with self._lock:
            ops = self._watchers.pop(key, None)
        if not ops:
            return 0
        done = 0
        pending = []
        for op in ops:
            if op.completed:
                continue
            if op.try_complete():
                done += 1
            elif not op.completed:
                pending.append(op)
        if pending:
            with self._lock:
                self._watchers.setdefault(key, []).extend(pending)
        return done

    def watched(self) -> int:
        with self._lock:
            return sum(1 for _, _, op in self._heap if not op.completed)

    def _expire_loop(self) -> None:
        while True:
            expired = []
            with self._lock:
                while not self._stopped:
                    now = time.monotonic()
                    while self._heap and (self._heap[0][0] <= now or self._heap[0][2].completed):
                        expired.append(heapq.heappop(self._heap)[2])
                    if expired:
                        break
                    timeout = self._heap[0][0] - now if self._heap else None
                    self._wake.wait(timeout)
                if self._stopped and not expired:
                    return
                if expired:
                    self._forget(expired)
            for op in expired:
                op.force_complete()

    def _forget(self, ops: list[DelayedOperation]) -> None:
        gone = set(map(id, ops))
        for key in list(self._watchers):
            kept = [o for o in self._watchers[key] if id(o) not in gone and not o.completed]
            if kept:
                self._watchers[key] = kept
            else:
                del self._watchers[key]

    def shutdown(self) -> None:
        """Complete every waiting operation now (answers go out before the broker stops)."""
        with self._lock:
            self._stopped = True
            ops = [op for _, _, op in self._heap]
            self._heap.clear()
            self._watchers.clear()
            self._wake.notify_all()
        for op in ops:
            op.force_complete()
        self._thread.join(2.0)
