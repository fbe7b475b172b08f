"""The machinery every property is declared with: value types (a native value or its
``server.properties`` string form), validators, :class:`ConfigKey` and :func:`define`.

Example::

    >>> key = ConfigKey("example.ms", LONG, 10, at_least(0), "An example.")
    >>> key.parse("250"), key.parse(7)
    (250, 7)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar, overload

from ..errors import InvalidConfigError

__all__ = ["ConfigException", "ConfigKey", "ConfigName", "define", "define_topic", "KEYS", "TOPIC_KEYS", "INT", "LONG",
           "DOUBLE", "BOOLEAN", "STRING", "LIST", "PASSWORD", "at_least", "between", "one_of",
           "each_one_of", "throttled_replicas", "kafka_version", "refused", "INT_MAX", "LONG_MAX"]

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


class ConfigException(InvalidConfigError, ValueError):
    """A property whose value has the wrong type or fails its validator (names the property)."""

    __module__ = "fastkafka.config"   # its public name, in tracebacks too


# --- types: parse a native value or its server.properties string form ---

def _parse_int(v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool):
        raise ValueError("expected an integer, got a boolean")
    if isinstance(v, str):
        v = int(v.strip())
    elif isinstance(v, float):
        if not v.is_integer():
            raise ValueError("expected an integer")
        v = int(v)
    elif not isinstance(v, int):
        raise ValueError(f"expected an integer, got {type(v).__name__}")
    if not lo <= v <= hi:
        raise ValueError(f"{v} does not fit the type's range [{lo}, {hi}]")
    return v


def _parse_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    raise ValueError("expected true or false")


def _parse_list(v: Any) -> list[str]:
    if isinstance(v, str):
        return [p.strip() for p in v.split(",") if p.strip()]
    if isinstance(v, (list, tuple)):
        return [str(p).strip() for p in v]
    raise ValueError("expected a comma-separated list")


INT: Callable[[Any], int] = lambda v: _parse_int(v, -(1 << 31), INT_MAX)          # noqa: E731
LONG: Callable[[Any], int] = lambda v: _parse_int(v, -(1 << 63), LONG_MAX)        # noqa: E731
DOUBLE: Callable[[Any], float] = lambda v: float(v)                              # noqa: E731
BOOLEAN = _parse_bool
STRING: Callable[[Any], str] = lambda v: str(v).strip()                          # noqa: E731
LIST = _parse_list


def PASSWORD(v: Any) -> str:  # noqa: N802  (a type, like the others)
    """A secret (Kafka's PASSWORD type): kept verbatim, never shown by DescribeConfigs."""
    return str(v)


# --- validators: raise ValueError with a reason ---

def at_least(lo: float) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if v < lo:
            raise ValueError(f"must be at least {lo}")
    return check


def between(lo: float, hi: float) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if not lo <= v <= hi:
            raise ValueError(f"must be between {lo} and {hi}")
    return check


def one_of(*allowed: str) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if v not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
    return check


def each_one_of(*allowed: str) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        bad = [x for x in v if x not in allowed]
        if bad or not v:
            raise ValueError(f"each entry must be one of {', '.join(allowed)}")
    return check


@dataclass(frozen=True)
class ConfigKey:
    """One declared property: ``topic`` is the topic-level override name, if topics may override it."""

    name: str
    type: Callable[[Any], Any]
    default: Any
    validator: Callable[[Any], None] | None
    doc: str
    topic: str | None = None

    def parse(self, value: Any, as_name: str | None = None) -> Any:
        """Convert and validate ``value``; :class:`ConfigException` names the property (``as_name``:
        the name the caller used, e.g. the topic-level one) on failure."""
        name = as_name or self.name
        if value is None:
            if self.default is None:
                return None
            raise ConfigException(f"{name}: a value is required")
        try:
            v = self.type(value)
            if self.validator is not None:
                self.validator(v)
        except (ValueError, TypeError) as e:
            raise ConfigException(f"Invalid value {value!r} for configuration {name}: {e}") from None
        return v


T = TypeVar("T")


class ConfigName(str, Generic[T]):
    """A declared property's name that knows its value's type: what :func:`define` returns, so a
    reader writes ``config[REQUEST_TIMEOUT_MS]`` (an ``int`` to a type checker; a misspelt name is
    an undefined constant, not a KeyError at run time). It is the name itself (a ``str``), so any
    mapping keyed by names takes it.

    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.config.definitions import REQUEST_TIMEOUT_MS
    >>> REQUEST_TIMEOUT_MS, KafkaConfig({"request.timeout.ms": "500"})[REQUEST_TIMEOUT_MS]
    ('request.timeout.ms', 500)
    """

    __slots__ = ()


KEYS: dict[str, ConfigKey] = {}        # broker name -> key
TOPIC_KEYS: dict[str, ConfigKey] = {}  # topic-level name -> key


@overload
def define(name: str, type: Callable[[Any], T], default: None, validator: Callable[[Any], None] | None,
           doc: str, topic: str | None = None) -> ConfigName[T | None]: ...
@overload
def define(name: str, type: Callable[[Any], T], default: Any, validator: Callable[[Any], None] | None,
           doc: str, topic: str | None = None) -> ConfigName[T]: ...
def define(name: str, type: Callable[[Any], Any], default: Any, validator: Callable[[Any], None] | None,
           doc: str, topic: str | None = None) -> ConfigName[Any]:
    """Declare a property once; the default is checked here so a bad declaration fails at import.
    Returns its typed name (bind it to the property's name in capitals)."""
    key = ConfigKey(name, type, default, validator, doc, topic)
    if name in KEYS:
        raise ValueError(f"configuration {name} declared twice")
    if default is not None:
        key.parse(default)
    KEYS[name] = key
    if topic is not None:
        TOPIC_KEYS[topic] = key
    return ConfigName(name)


def define_topic(topic: str, type: Callable[[Any], Any], default: Any,
                 validator: Callable[[Any], None] | None, doc: str) -> ConfigKey:
    """Declare a topic-level property that has no broker-wide default in Kafka either."""
    key = ConfigKey(topic, type, default, validator, doc, topic)
    if topic in TOPIC_KEYS:
        raise ValueError(f"topic configuration {topic} declared twice")
    key.parse(default)
    TOPIC_KEYS[topic] = key
    return key


def throttled_replicas(v: list[str]) -> None:
    """Kafka's ThrottledReplicaListValidator: ``*`` or ``partition:broker`` pairs."""
    if v == ["*"]:
        return
    for entry in v:
        p, _, b = entry.partition(":")
        if not (p.isdigit() and b.isdigit()):
            raise ValueError("must be '*' or a list of partitionId:brokerId pairs")


def kafka_version(v: str) -> None:
    """A Kafka release or inter-broker protocol version such as 2.8, 3.0-IV1 or 0.10.0.0 (Kafka reads
    the first three parts of a 0.x version and two of later ones, so a full release number is fine).

    >>> kafka_version("0.10.0.0"), kafka_version("3.0-IV1"), kafka_version("2.8.1")
    (None, None, None)
    """
    if not re.fullmatch(r"\d+(\.\d+){1,3}(-IV\d+)?", v):
        raise ValueError("must be a Kafka version such as 3.0-IV1")


def principals(v: str) -> None:
    """``super.users``: ``Type:name`` principals separated by ';'."""
    for part in v.split(";"):
        kind, sep, name = part.strip().partition(":")
        if part.strip() and not (kind and sep and name):
            raise ValueError(f"{part.strip()!r} is not a principal (Type:name, e.g. User:admin)")


def refused(reason: str) -> Callable[[Any], None]:
    """A boolean feature this broker lacks: true is refused with Kafka's reason."""
    def check(v: bool) -> None:
        if v:
            raise ValueError(reason)
    return check

