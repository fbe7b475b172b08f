"""How requests get from network processors to handlers: ``num.io.threads`` handler threads
sharing one queue, or — with ``num.io.threads=0`` — inline on the processor thread.

Inline skips a queue hop and two thread switches per request; with the GIL and two cores that
is usually the faster choice for small requests, while handler threads let a slow request (a
large append, a topic creation) overlap with network I/O on other connections. bench/ measures
both; the broker's default is whichever won there (see bench/RESULTS.md).

Example::

    >>> seen = []
    >>> ch = RequestChannel(seen.append, num_threads=0)
    >>> ch.submit("req"); seen
    ['req']
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

__all__ = ["RequestChannel"]

log = logging.getLogger("fastkafka.server")

_STOP = object()


class RequestChannel:
    """Thread-safe: ``submit`` may be called from every processor at once."""

    def __init__(self, handle: Callable[[object], None], num_threads: int):
        self._handle = handle
        self._threads: list[threading.Thread] = []
        if num_threads <= 0:
            self.submit = handle  # inline
            return
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self.submit = self._queue.put
        for i in range(num_threads):
            t = threading.Thread(target=self._run, name=f"fastkafka-io-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def _run(self) -> None:
        get = self._queue.get
        handle = self._handle
        while True:
            request = get()
            if request is _STOP:
                return
            try:
                handle(request)
            except Exception:  # the dispatcher has its own boundary; this is the last line
                log.exception("request handler thread caught an exception")

    def shutdown(self, timeout: float = 5.0) -> None:
        """Let queued requests finish, then stop the handler threads."""
        for _ in self._threads:
            self._queue.put(_STOP)
        for t in self._threads:
            t.join(timeout)
        self._threads.clear()
