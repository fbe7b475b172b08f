"""Typed broker and topic configuration, with Kafka's property names and defaults.

Each property is declared once with :func:`define` (name, type, default, validator, doc and,
when a topic may override it, the topic-level name). :class:`KafkaConfig` parses a broker's
properties (strings from ``server.properties`` or native values), validates them and reports the
keys it does not know instead of failing on them. :class:`LogConfig` is the per-topic view the log
layer reads: broker defaults overlaid with a topic's overrides (``segment.bytes``, ``retention.ms``...).

Adding a key is one statement in :mod:`.definitions`, which binds its typed name; code reads the
value through that name (``config[NUM_NETWORK_THREADS]``, an ``int`` to mypy), never a string::

    NUM_NETWORK_THREADS = define("num.network.threads", INT, 3, at_least(1), "Threads that serve requests.")

Example::

    >>> from fastkafka.config.definitions import LOG_SEGMENT_BYTES
    >>> cfg = KafkaConfig({"log.segment.bytes": "1048576", "log.retention.hours": 1, "bogus": 1})
    >>> cfg[LOG_SEGMENT_BYTES], cfg.unknown
    (1048576, ['bogus'])
    >>> LogConfig.from_broker(cfg, {"retention.ms": "60000"}).retention_ms
    60000
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, TypeVar, overload

from .definitions import (HOUR_MS, LOG_CLEANER_DELETE_RETENTION_MS, LOG_DIR, LOG_DIRS, LOG_FLUSH_INTERVAL_MS,
                          LOG_FLUSH_SCHEDULER_INTERVAL_MS, LOG_INDEX_INTERVAL_BYTES, LOG_INDEX_SIZE_MAX_BYTES,
                          LOG_MESSAGE_FORMAT_VERSION, LOG_RETENTION_HOURS, LOG_RETENTION_MINUTES, LOG_RETENTION_MS,
                          LOG_ROLL_HOURS, LOG_ROLL_JITTER_HOURS, LOG_ROLL_JITTER_MS, LOG_ROLL_MS, LOG_SEGMENT_BYTES,
                          LOG_SEGMENT_DELETE_DELAY_MS, MESSAGE_MAX_BYTES, NO_EFFECT_YET)
from .keys import (BOOLEAN, DOUBLE, INT, KEYS, LIST, LONG, LONG_MAX, PASSWORD, STRING, TOPIC_KEYS,
                   ConfigException, ConfigKey, ConfigName, at_least, between, define, each_one_of, one_of)
from .properties import load_properties, parse_key_values

__all__ = ["ConfigException", "ConfigKey", "ConfigName", "define", "KEYS", "TOPIC_KEYS", "KafkaConfig",
           "LogConfig", "load_properties", "parse_key_values", "INT", "LONG", "DOUBLE", "BOOLEAN", "STRING", "LIST",
           "PASSWORD", "at_least", "between", "one_of", "each_one_of", "topic_config_names",
           "topic_configs_without_effect"]

T = TypeVar("T")


def _listener_key(name: str) -> bool:
    """``listener.name.<l>.<declared key>`` or ``listener.name.<l>.<mechanism>.sasl.jaas.config``."""
    if not name.startswith("listener.name."):
        return False
    rest = name[len("listener.name."):].partition(".")[2]
    return rest in KEYS or rest.partition(".")[2] == "sasl.jaas.config"


class KafkaConfig(Mapping[str, Any]):
    """Validated broker properties: every declared key, its default when not given.

    Thread-safe (immutable after construction). ``unknown`` lists given keys nobody declared.

    Example::

        >>> KafkaConfig({"log.dirs": "/a,/b"}).log_dirs
        ['/a', '/b']
    """

    def __init__(self, props: Mapping[str, Any] | None = None, *, strict: bool = False):
        props = dict(props or {})
        self.unknown: list[str] = sorted(k for k in props if k not in KEYS and not _listener_key(k))
        if strict and self.unknown:
            raise ConfigException(f"unknown configuration(s): {', '.join(self.unknown)}")
        self.originals = props
        self._values = {name: key.parse(props.get(name, key.default)) for name, key in KEYS.items()}

    @overload
    def __getitem__(self, name: ConfigName[T]) -> T: ...
    @overload
    def __getitem__(self, name: str) -> Any: ...
    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    @overload
    def for_listener(self, listener: str, name: ConfigName[T]) -> T: ...
    @overload
    def for_listener(self, listener: str, name: str) -> Any: ...
    def for_listener(self, listener: str, name: str) -> Any:
        """``name`` as ``listener`` sees it: ``listener.name.<listener>.<name>`` when given, else
        the broker-wide value (Kafka's precedence for per-listener configs).

        >>> cfg = KafkaConfig({"listener.name.internal.ssl.client.auth": "required"})
        >>> cfg.for_listener("INTERNAL", "ssl.client.auth"), cfg.for_listener("EXTERNAL", "ssl.client.auth")
        ('required', 'none')
        """
        prefixed = f"listener.name.{listener.lower()}.{name}"
        if prefixed in self.originals:
            return KEYS[name].parse(self.originals[prefixed], prefixed)
        return self[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    # --- derived values with Kafka's precedence rules ---
    @property
    def log_dirs(self) -> list[str]:
        return self[LOG_DIRS] or [self[LOG_DIR]]

    @property
    def log_retention_ms(self) -> int:
        if self[LOG_RETENTION_MS] is not None:
            return self[LOG_RETENTION_MS]
        if self[LOG_RETENTION_MINUTES] is not None:
            return self[LOG_RETENTION_MINUTES] * 60_000
        return self[LOG_RETENTION_HOURS] * HOUR_MS

    @property
    def log_roll_ms(self) -> int:
        if self[LOG_ROLL_MS] is not None:
            return self[LOG_ROLL_MS]
        return self[LOG_ROLL_HOURS] * HOUR_MS

    @property
    def log_flush_interval_ms(self) -> int:
        v = self[LOG_FLUSH_INTERVAL_MS]
        return self[LOG_FLUSH_SCHEDULER_INTERVAL_MS] if v is None else v


# Broker value of each topic-level key, after precedence (ms over minutes over hours...).
_BROKER_DEFAULT: dict[str, Callable[[KafkaConfig], Any]] = {
    "retention.ms": lambda c: c.log_retention_ms,
    "segment.ms": lambda c: c.log_roll_ms,
    "flush.ms": lambda c: c.log_flush_interval_ms,
    "segment.jitter.ms": lambda c: c[LOG_ROLL_JITTER_MS] if c[LOG_ROLL_JITTER_MS] is not None
    else c[LOG_ROLL_JITTER_HOURS] * HOUR_MS,
}


@dataclass(frozen=True)
class LogConfig:
    """One topic's log settings: attribute names are the topic-level names with ``_`` for ``.``.

    Example::

        >>> LogConfig().segment_bytes
        1073741824
        >>> LogConfig.from_broker(KafkaConfig(), {"cleanup.policy": "compact,delete"}).compact
        True
    """

    segment_bytes: int = KEYS[LOG_SEGMENT_BYTES].default
    segment_ms: int = 168 * HOUR_MS
    index_interval_bytes: int = KEYS[LOG_INDEX_INTERVAL_BYTES].default
    segment_index_bytes: int = KEYS[LOG_INDEX_SIZE_MAX_BYTES].default
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_ms: int = 168 * HOUR_MS
    retention_bytes: int = -1
    file_delete_delay_ms: int = KEYS[LOG_SEGMENT_DELETE_DELAY_MS].default
    cleanup_policy: tuple[str, ...] = ("delete",)
    delete_retention_ms: int = KEYS[LOG_CLEANER_DELETE_RETENTION_MS].default
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    message_timestamp_type: str = "CreateTime"
    max_message_bytes: int = KEYS[MESSAGE_MAX_BYTES].default
    preallocate: bool = False
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    message_downconversion_enable: bool = True
    message_format_version: str = KEYS[LOG_MESSAGE_FORMAT_VERSION].default
    max_compaction_lag_ms: int = LONG_MAX
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    segment_jitter_ms: int = 0
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()

    @classmethod
    def from_broker(cls, broker: KafkaConfig | None = None,
                    overrides: Mapping[str, Any] | None = None) -> "LogConfig":
        """Broker defaults overlaid with topic-level ``overrides`` (unknown topic keys raise)."""
        broker = broker if broker is not None else KafkaConfig()
        values: dict[str, Any] = {}
        for tname, key in TOPIC_KEYS.items():
            getter = _BROKER_DEFAULT.get(tname)
            values[tname] = getter(broker) if getter else broker.get(key.name, key.default)
        for tname, raw in (overrides or {}).items():
            key = TOPIC_KEYS.get(tname)
            if key is None:
                raise ConfigException(f"unknown topic configuration {tname}")
            v = key.parse(raw, tname)
            if v is None and tname in _BROKER_DEFAULT:
                v = _BROKER_DEFAULT[tname](broker)
            values[tname] = v
        fields = {t.replace(".", "_"): v for t, v in values.items()}
        for name in ("cleanup_policy", "leader_replication_throttled_replicas",
                     "follower_replication_throttled_replicas"):
            fields[name] = tuple(fields[name])
        return cls(**{k: v for k, v in fields.items() if k in cls.__dataclass_fields__})

    def with_overrides(self, **changes: Any) -> "LogConfig":
        """A copy with some attributes replaced (tests and topic config changes)."""
        from dataclasses import replace
        return replace(self, **changes)

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"


def topic_config_names() -> Iterable[str]:
    """Topic-level names topics may override (for CreateTopics / DescribeConfigs)."""
    return TOPIC_KEYS.keys()


def topic_configs_without_effect() -> dict[str, str]:
    """Topic-level names accepted and reported that change nothing yet, with the reason."""
    return {t: k.doc[len(NO_EFFECT_YET):] for t, k in sorted(TOPIC_KEYS.items())
            if k.doc.startswith(NO_EFFECT_YET)}
