"""The async producer's queue: records waiting per partition until ``linger.ms`` or ``batch.size``.

The seeds' async producer buffers events "until either queue.time or batch.size is reached";
here the queue is kept per partition so that what leaves it is already a batch. A partition
is *ready* when it holds ``batch.size`` bytes or its oldest record has waited ``linger.ms``;
:meth:`RecordAccumulator.drain` hands the sender every ready partition, cut into chunks of
about ``batch.size`` bytes (one record batch each). ``queue.buffering.max.messages`` bounds
the records queued or in flight; ``append`` blocks on a full queue for
``queue.enqueue.timeout.ms`` (-1 forever, as the seeds' ``queue.enqueue.timeout.ms``).

Thread-safe: producers append from any thread, the sender thread drains.

Example::

    >>> acc = RecordAccumulator(batch_size=10, max_messages=100)
    >>> acc.append(("t", 0), [(None, b"12345", None, None)] * 3, 15)
    True
    >>> acc.append_one(("t", 0), (None, b"6", None, None), 4)   # 19 bytes: the 2nd batch is not done
    False
    >>> [(tp, len(recs)) for tp, recs in acc.drain(linger_s=60)]
    [(('t', 0), 2), (('t', 0), 2)]
"""
from __future__ import annotations

import threading
import time

from fastkafka import errors

__all__ = ["RecordAccumulator"]


class _Pending:
    __slots__ = ("records", "nbytes", "since", "next_fill")

    def __init__(self, now: float, batch_size: int):
        self.records: list = []
        self.nbytes = 0
        self.since = now
        # nbytes at which the next batch is complete: records keep arriving while the sender
        # is busy, and each further batch.size is a batch of its own (drain cuts them so).
        self.next_fill = batch_size

    def filled(self, batch_size: int) -> bool:
        """True once per batch.size crossed since the last call."""
        if self.nbytes < self.next_fill:
            return False
        self.next_fill = (self.nbytes // batch_size + 1) * batch_size
        return True


class RecordAccumulator:
    """Per-partition record lists plus the bookkeeping ``flush`` and back-pressure need."""

    def __init__(self, batch_size: int, max_messages: int, enqueue_timeout_ms: int = -1):
        self.batch_size = batch_size
        self.max_messages = max_messages
        self.enqueue_timeout_ms = enqueue_timeout_ms
        # The bare lock is what append_one takes: ``with lock`` is a C call, a Condition's
        # __enter__ is a Python one, and append_one runs once per record.
        self._lock = threading.Lock()
        self.cond = threading.Condition(self._lock)
        self._parts: dict[tuple[str, int], _Pending] = {}
        self.queued = 0      # records appended and not yet released (queued or in flight)
        self.flushing = 0    # flush() callers waiting: everything is ready now
        self.closed = False

    def append(self, tp: tuple[str, int], records: list, nbytes: int) -> bool:
        """Queue ``records`` (tuples for ``build_batch``) for ``tp``; ``nbytes`` estimates their
        size. Returns True when this append completed a batch (another ``batch.size`` bytes;
        the sender is woken): once per batch, which is when a sticky partitioner moves on."""
        n = len(records)
        with self.cond:
            if self.closed:
                raise errors.KafkaError("producer is closed")
            if self.queued + n > self.max_messages and self.queued > 0:
                self._wait_for_room(n)
            p = self._parts.get(tp)
            if p is None:
                p = self._parts[tp] = _Pending(time.monotonic(), self.batch_size)
                self.cond.notify_all()   # the sender may sleep without a deadline: give it one
            p.records.extend(records)
            p.nbytes += nbytes
            self.queued += n
            if p.filled(self.batch_size):
                self.cond.notify_all()
                return True
            return False

    def append_one(self, tp: tuple[str, int], record: tuple, nbytes: int) -> bool:
        """:meth:`append` for a single record, the per-call producer's path: one lock, no list.

        The uncommon cases (a new partition to announce, a full queue, a closed accumulator)
        go through :meth:`append`, so only the plain enqueue is duplicated here.
        """
        with self._lock:
            p = self._parts.get(tp)
            if p is not None and self.queued < self.max_messages and not self.closed:
                p.records.append(record)
                p.nbytes += nbytes
                self.queued += 1
                if p.nbytes < p.next_fill:
                    return False
                p.filled(self.batch_size)
                self.cond.notify_all()
                return True
        return self.append(tp, [record], nbytes)

    def _wait_for_room(self, n: int) -> None:
        timeout = self.enqueue_timeout_ms
        deadline = None if timeout < 0 else time.monotonic() + timeout / 1000
        while self.queued + n > self.max_messages and self.queued > 0 and not self.closed:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise errors.KafkaError(  # the seeds' QueueFullException
                    f"producer queue full ({self.queued} records, queue.buffering.max.messages="
                    f"{self.max_messages})")
            self.cond.wait(left)

    def wait_ready(self, linger_s: float) -> None:
        """Block the sender until some partition is ready, a flush is asked for, or close."""
        with self.cond:
            while not self.closed:
                now = time.monotonic()
                if self._parts and (self.flushing or any(
                        p.nbytes >= self.batch_size or now - p.since >= linger_s
                        for p in self._parts.values())):
                    return
                oldest = min((p.since for p in self._parts.values()), default=None)
                self.cond.wait(None if oldest is None else max(oldest + linger_s - now, 0.0005))

    def drain(self, linger_s: float, force: bool = False) -> list[tuple[tuple[str, int], list]]:
        """Take every ready partition's records as ``[(tp, records)]`` chunks of ~batch.size."""
        out = []
        with self.cond:
            now = time.monotonic()
            force = force or self.flushing > 0 or self.closed
            for tp, p in list(self._parts.items()):
                if not (force or p.nbytes >= self.batch_size or now - p.since >= linger_s):
                    continue
                del self._parts[tp]
                recs = p.records
                per = max(1, int(len(recs) * self.batch_size / p.nbytes)) if p.nbytes else len(recs)
                for i in range(0, len(recs), per):
                    out.append((tp, recs[i:i + per]))
        return out

    def release(self, n: int) -> None:
        """``n`` drained records were acknowledged or failed: room in the queue again."""
        with self.cond:
            self.queued -= n
            self.cond.notify_all()

    def wait_empty(self, timeout: float | None = None) -> bool:
        """For flush(): wake the sender and wait until every record was released."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            self.flushing += 1
            self.cond.notify_all()
            try:
                while self.queued > 0:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self.cond.wait(left)
                return True
            finally:
                self.flushing -= 1

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def empty(self) -> bool:
        with self.cond:
            return not self._parts
