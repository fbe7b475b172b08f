"""Kafka's errors as Python exceptions: one class per protocol error code.

``KafkaError`` is the root. Each code in :data:`ERROR_TABLE` (``table.py``) has a class, written
into ``codes.py`` by ``tools/generate_errors.py``, whose name is the code's name in CamelCase plus
``Error`` (``OFFSET_OUT_OF_RANGE`` -> ``OffsetOutOfRangeError``), carrying ``code``, ``name`` and
``retriable``. Handlers turn any of these into its code with :func:`code_of`; everything else
becomes ``UNKNOWN_SERVER_ERROR``.

Example::

    >>> from fastkafka import errors
    >>> errors.for_code(3).__name__
    'UnknownTopicOrPartitionError'
    >>> errors.code_of(errors.CorruptMessageError("bad crc"))
    2
"""
from __future__ import annotations

from .base import KafkaError
from .codes import *  # noqa: F403  (one class per error code, generated: see codes.py)
from .codes import _BY_CODE, CorruptMessageError, UnsupportedCompressionTypeError
from .codes import __all__ as _CODES
from .table import ERROR_TABLE

for _cls in (KafkaError, *_BY_CODE.values()):   # their public home: tracebacks, repr, pickle
    _cls.__module__ = __name__
del _cls
ERROR_NAMES: dict[int, str] = {code: name for code, name, _ in ERROR_TABLE}


def for_code(code: int) -> type[KafkaError]:
    """The exception class for a Kafka error code (``UnknownServerError`` for unknown codes)."""
    return _BY_CODE.get(code, _BY_CODE[-1])


def raise_for(code: int, what: str, message: str | None = None) -> None:
    """Raise the exception of a non-zero error code in an answer, naming ``what`` was asked
    (and the broker's ``message``, when it sent one).

    >>> raise_for(0, "create t")
    >>> raise_for(36, "create t", "Topic 't' already exists.")
    Traceback (most recent call last):
    ...
    fastkafka.errors.TopicAlreadyExistsError: create t: Topic 't' already exists.
    """
    if code:
        raise for_code(code)(f"{what}: {message}" if message else what)


def code_of(exc: BaseException) -> int:
    """The Kafka error code a handler answers with for ``exc``."""
    return exc.code if isinstance(exc, KafkaError) else -1


# --- errors below the protocol: each maps onto the code a broker would answer with ---

class CorruptRecordError(CorruptMessageError):
    """Bytes that do not frame or checksum as a record batch / message set (code 2)."""


class VarintError(CorruptRecordError):
    """A varint that is truncated or longer than its type allows."""


class CompressionError(CorruptRecordError):
    """A compressed payload that does not decompress, or would exceed its output bound."""


class UnsupportedCompressionError(UnsupportedCompressionTypeError):
    """A compression codec id we do not know (code 76)."""


class ReplicaDivergedError(UnknownServerError):  # noqa: F405  (from .codes)
    """A follower was handed batches that do not continue its log: it must truncate (by leader
    epoch) before it fetches again. Never sent to a client."""


__all__ = ["KafkaError", "ERROR_TABLE", "ERROR_NAMES", "for_code", "code_of",
           "CorruptRecordError", "VarintError", "CompressionError", "ReplicaDivergedError",
           "UnsupportedCompressionError", *_CODES]
