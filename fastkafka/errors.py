"""Kafka's errors as Python exceptions: one class per protocol error code.

``KafkaError`` is the root. Each code in :data:`ERROR_TABLE` gets a class whose name is the
code's name in CamelCase plus ``Error`` (``OFFSET_OUT_OF_RANGE`` -> ``OffsetOutOfRangeError``),
carrying ``code``, ``name`` and ``retriable``. Handlers turn any of these into its code with
:func:`code_of`; everything else becomes ``UNKNOWN_SERVER_ERROR``.

Example::

    >>> from fastkafka import errors
    >>> errors.for_code(3).__name__
    'UnknownTopicOrPartitionError'
    >>> errors.code_of(errors.CorruptMessageError("bad crc"))
    2
"""
from __future__ import annotations

from ._error_table import ERROR_TABLE


class KafkaError(Exception):
    """Root of every fastkafka error; ``code`` is the Kafka error code it maps to."""

    code = -1
    name = "UNKNOWN_SERVER_ERROR"
    retriable = False


def _class_name(name: str) -> str:
    camel = "".join(part.capitalize() for part in name.split("_"))
    return camel if camel.endswith(("Error", "Exception")) else camel + "Error"


_BY_CODE: dict[int, type[KafkaError]] = {}
for _code, _name, _retriable in ERROR_TABLE:
    if _code == 0:
        continue
    _cls = type(_class_name(_name), (KafkaError,), {
        "code": _code, "name": _name, "retriable": _retriable,
        "__doc__": f"Kafka error {_code} {_name}{' (retriable)' if _retriable else ''}.",
    })
    _cls.__module__ = __name__
    globals()[_cls.__name__] = _cls
    _BY_CODE[_code] = _cls
del _code, _name, _retriable, _cls

ERROR_NAMES: dict[int, str] = {code: name for code, name, _ in ERROR_TABLE}


def for_code(code: int) -> type[KafkaError]:
    """The exception class for a Kafka error code (``UnknownServerError`` for unknown codes)."""
    return _BY_CODE.get(code, _BY_CODE[-1])


def code_of(exc: BaseException) -> int:
    """The Kafka error code a handler answers with for ``exc``."""
    return exc.code if isinstance(exc, KafkaError) else -1


# --- errors below the protocol: each maps onto the code a broker would answer with ---

class CorruptRecordError(globals()["CorruptMessageError"]):
    """Bytes that do not frame or checksum as a record batch / message set (code 2)."""


class VarintError(CorruptRecordError):
    """A varint that is truncated or longer than its type allows."""


class CompressionError(CorruptRecordError):
    """A compressed payload that does not decompress, or would exceed its output bound."""


class UnsupportedCompressionError(globals()["UnsupportedCompressionTypeError"]):
    """A compression codec id we do not know (code 76)."""


__all__ = ["KafkaError", "ERROR_TABLE", "ERROR_NAMES", "for_code", "code_of",
           "CorruptRecordError", "VarintError", "CompressionError",
           "UnsupportedCompressionError"] + [c.__name__ for c in _BY_CODE.values()]
