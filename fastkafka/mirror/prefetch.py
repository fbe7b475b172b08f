"""Fetching and converting ahead of the sender, in a thread of its own.

A mirror stream alternates two waits: the source's fetch and the target's acknowledgement.
Overlapping them is most of the mirror's speed (measured on 2 cores: 0.5x of a plain consume
fetching and sending in turn, 0.8x overlapped), so the stream's fetcher runs here: it polls the
partition leaders, converts each partition's records (:func:`~fastkafka.mirror.convert.convert`)
and queues a :class:`Fetched` per poll, at most ``depth`` ahead of the sender.

The stream thread owns everything else. It :meth:`pause`\\ s the prefetcher around a
rebalance or an error -- which waits until no fetch is running, so the fetcher is the caller's
alone while paused -- and :meth:`resume`\\ s it with the new positions. Each resume starts a
new epoch: what was fetched before is dropped, never sent (the positions it came from were
reset).

Example::

    p = Prefetcher(Fetcher(cluster, isolation_level=1))
    p.resume({("orders", 0): 42}, routes)        # {source topic: Route}
    item = p.get(timeout=0.1)                    # a Fetched, or None
    p.pause(); p.close()
"""
from __future__ import annotations

import queue
import threading
from typing import NamedTuple

from fastkafka.client.fetcher import Fetcher

from .convert import Converted, Route, convert

__all__ = ["Prefetcher", "Fetched"]


class Fetched(NamedTuple):
    """One poll's worth: converted partitions and each polled partition's lag after it."""
    epoch: int
    parts: list[Converted]
    lag: dict[tuple[str, int], int]
    error: BaseException | None = None


class Prefetcher:
    """Polls ``fetcher`` and converts in a daemon thread; :meth:`get` hands out the results."""

    def __init__(self, fetcher: Fetcher, depth: int = 4, name: str = "fastkafka-mirror-fetch"):
        self.fetcher = fetcher
        self.queue: queue.Queue = queue.Queue(depth)
        self._cond = threading.Condition()
        self._epoch = 0
        self._paused = True
        self._busy = False
        self._closed = False
        self._routes: dict[str, Route] = {}
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def resume(self, starts: dict[tuple[str, int], int], routes: dict[str, Route]) -> None:
        """Fetch ``starts`` (offsets, or the Fetcher's EARLIEST/LATEST) from now on. Call paused."""
        with self._cond:
            if not self._paused or self._busy:
                raise RuntimeError("Prefetcher.resume() while fetching: pause() first")
        self.fetcher.unassign(list(self.fetcher.positions))
        self.fetcher.assign(starts)
        with self._cond:
            self._routes = dict(routes)
            self._paused = False
            self._cond.notify_all()

    def pause(self) -> None:
        """Stop fetching; returns once no poll is running. Everything queued is dropped."""
        with self._cond:
            self._paused = True
            self._epoch += 1
            while self._busy:
                self._cond.wait()
        self._drain()

    def get(self, timeout: float) -> Fetched | None:
        """The next poll's results of the current epoch, or None after ``timeout`` seconds."""
        try:
            item = self.queue.get(timeout=timeout)
        except queue.Empty:
            return None
        return item if item.epoch == self._epoch else None

    def ready(self, limit: int) -> list[Fetched]:
        """Up to ``limit`` more results that are already waiting (no wait)."""
        out = []
        while len(out) < limit:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if item.epoch == self._epoch:
                out.append(item)
        return out

    def close(self) -> None:
        with self._cond:
            self._closed = True
        self.pause()
        self._thread.join(10)

    def _drain(self) -> None:
        try:
            while True:
                self.queue.get_nowait()
        except queue.Empty:
            pass

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._paused and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                self._busy = True
                epoch, routes = self._epoch, self._routes
            try:
                item = self._poll(epoch, routes)
            except BaseException as e:  # noqa: BLE001 - the stream thread decides what it means
                item = Fetched(epoch, [], {}, e)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
            self._put(item)

    def _poll(self, epoch: int, routes: dict[str, Route]) -> Fetched:
        parts, lag = [], {}
        for ms in self.fetcher.poll():
            tp = (ms.topic, ms.partition)
            if ms.next_offset > ms.offset:
                parts.append(convert(ms, routes[ms.topic]))
            if ms.high_watermark >= 0:
                lag[tp] = max(0, ms.high_watermark - ms.next_offset)
        return Fetched(epoch, parts, lag)

    def _put(self, item: Fetched) -> None:
        while True:
            with self._cond:
                if item.epoch != self._epoch or self._closed:
                    return      # paused meanwhile: stale
            try:
                self.queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue
