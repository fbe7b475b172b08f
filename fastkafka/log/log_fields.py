"""What :class:`~fastkafka.log.Log` holds, declared once for the classes it inherits.

``Log`` is written in three files -- ``log.py``, :mod:`.transactions` (``TransactionalLog``)
and :mod:`.truncation` (``LogTruncation``) -- whose methods all run on the one Log object, its
lock, segments and appender. ``Log.__init__`` sets these attributes; the two mixins inherit
:class:`LogFields` so a type checker (``mypy fastkafka/log``, in ``make test``) knows them where
the mixins use them. Nothing here exists at run time but the empty class.

Example::

    >>> from fastkafka.log import Log
    >>> issubclass(Log, LogFields)
    True
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

__all__ = ["LogFields"]

if TYPE_CHECKING:
    import threading

    from .._core.appender import Appender
    from ..config import LogConfig
    from .files import FileCache
    from .leader_epochs import LeaderEpochCache
    from .log import LogAppendInfo
    from .producer_state import ProducerStateManager
    from .scheduler import Scheduler
    from .segments import LogSegments


class LogFields:
    """The attributes ``Log.__init__`` sets and the methods one part of Log calls in another."""

    dir: str
    topic: str
    partition: int
    clock: Callable[[], int]
    scheduler: Scheduler
    config: LogConfig
    producer_state: ProducerStateManager
    leader_epochs: LeaderEpochCache
    recovery_point: int
    _append_listeners: list[Callable[[Any], None]]     # each called with the Log (on_append)
    _files: FileCache
    _lock: threading.RLock
    _segments: LogSegments
    _st: Appender

    if TYPE_CHECKING:
        def _settle(self, buf, leader_epoch: int, r) -> LogAppendInfo | None: ...
        def _load_producer_state(self, rebuild_index: bool) -> None: ...
