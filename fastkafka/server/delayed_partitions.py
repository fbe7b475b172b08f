"""An answer waiting on several partitions of one request, in a purgatory: Kafka's
DelayedProduce (acks=all, and the markers of WriteTxnMarkers) and DelayedDeleteRecords share
this shape.

Each waiting partition has its response fields (a dict the response is built from) and what
its rule looks at. ``ready(w)`` gives the partition's fields once it can answer and None while
it must wait; the operation completes when every partition is ready, or when its time is up,
and then the partitions still waiting get ``expired(w)``. ``respond()`` sends the answer.

Example::

    >>> from fastkafka.server.purgatory import Purgatory
    >>> hw = {"t": 0}
    >>> fields = {"index": 0, "error_code": 0}
    >>> op = DelayedPartitions(10_000, [(fields, 5)],
    ...                        ready=lambda need: {"error_code": 0} if hw["t"] >= need else None,
    ...                        expired=lambda need: {"error_code": 7}, respond=lambda: print(fields))
    >>> p = Purgatory("demo"); op.wait_in(p, [("t", 0)])
    >>> hw["t"] = 5; p.check(("t", 0))
    {'index': 0, 'error_code': 0}
    1
    >>> p.shutdown()
"""
from __future__ import annotations

from typing import Callable

from fastkafka import errors

from .partition import acks_all_code
from .purgatory import DelayedOperation

__all__ = ["DelayedPartitions", "wait_for_acks_all"]

_TIMED_OUT = errors.RequestTimedOutError.code


class DelayedPartitions(DelayedOperation):
    def __init__(self, timeout_ms: int, waiting, *, ready: Callable, expired: Callable,
                 respond: Callable[[], None]):
        super().__init__(timeout_ms)
        # waiting: [(the partition's response fields, what ready/expired look at)]
        self.waiting, self.ready, self.expired, self.respond = waiting, ready, expired, respond

    def try_complete(self) -> bool:
        if all(self.ready(w) is not None for _, w in self.waiting):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        for fields, w in self.waiting:
            fields.update(self.ready(w) or self.expired(w))
        self.respond()

    def wait_in(self, purgatory, keys) -> None:
        """Complete now, or watch under ``keys`` (the partitions' ``(topic, partition)``)."""
        purgatory.try_complete_else_watch(self, keys)


def _acks_all(w) -> dict | None:
    code = acks_all_code(w)
    return None if code is None else {"error_code": code}


def wait_for_acks_all(timeout_ms: int, waiting, respond: Callable[[], None], purgatory) -> None:
    """Writes waiting for acks=all, each ``(fields, Replication)``: the error code once the high
    watermark passed the write (see ``acks_all_code``), REQUEST_TIMED_OUT when the time is up.
    Answers now or watches in ``purgatory`` (the replica manager's produce purgatory)."""
    DelayedPartitions(timeout_ms, waiting, ready=_acks_all, expired=lambda w: {"error_code": _TIMED_OUT},
                      respond=respond).wait_in(purgatory, [w.key for _, w in waiting])
