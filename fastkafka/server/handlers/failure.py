"""What one partition's (or topic's, or resource's) failure answers: its Kafka error code and
message. Every handler that answers per item maps exceptions here, so a KafkaError keeps its code
and anything else — a bug — costs that item UNKNOWN_SERVER_ERROR and a logged traceback, never
the whole request or the connection.

Example::

    >>> from fastkafka import errors
    >>> failure(errors.NotLeaderOrFollowerError("moved"), "produce to %s", "t-0")
    (6, 'moved')
    >>> failure(ZeroDivisionError(), "produce to %s", "t-0")[0]
    -1
"""
from __future__ import annotations

import logging

from fastkafka import errors

__all__ = ["failure"]

log = logging.getLogger("fastkafka.server")


def failure(exc: BaseException, what: str, *args) -> tuple[int, str | None]:
    """``(error_code, error_message)`` for ``exc`` raised while doing ``what % args``."""
    if isinstance(exc, errors.KafkaError):
        return exc.code, str(exc) or None
    log.error("%s failed", what % args, exc_info=exc)
    return errors.UnknownServerError.code, "unexpected server error"
