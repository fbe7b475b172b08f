"""Options of the ``fastkafka`` data source, parsed and validated the way Spark's Kafka source does.

Spark-free and pure: a case-insensitive ``options`` mapping in, a frozen :class:`SourceOptions`
(or :class:`SinkOptions`) out, or :class:`KafkaOptionError` with the message Spark's
``KafkaSourceProvider`` gives for the same mistake, so a job moved from Spark's connector to this
one fails the same way. Offsets live in :class:`OffsetSpec`, which the planner resolves against
the broker's offsets (:mod:`fastkafka.spark.planning`).

Security: as Spark's source hands every ``kafka.``-prefixed option to the Kafka client, the
``kafka.security.protocol``, ``kafka.ssl.*`` and ``kafka.sasl.*`` options become the client's
``security.protocol``/``ssl.*``/``sasl.*`` (:data:`SECURITY_KEYS`: the ones
:data:`fastkafka.client.config.CLIENT_KEYS` knows, plus librdkafka's ``ssl.ca.location`` and
``sasl.mechanisms``). They are checked here, so a typo or a bad value fails the query when it is
planned; file options (``kafka.ssl.truststore.location``, ``kafka.ssl.keystore.location``) are
read where a client is built -- by the driver when it plans a read and by every executor -- so
the files must exist there, as with Spark's source. The PEM text options
(``kafka.ssl.truststore.certificates``, ``kafka.ssl.keystore.certificate.chain`` +
``kafka.ssl.keystore.key``) need no files. :func:`client_config` is the one place options
become a :class:`~fastkafka.client.config.ClientConfig`.

Example::

    >>> o = parse_source_options({"kafka.bootstrap.servers": "127.0.0.1:9092",
    ...                           "subscribe": "a, b", "startingOffsets": '{"a":{"0":5}}'},
    ...                          streaming=False)
    >>> o.topics, o.starting.kind, o.starting.offsets, o.ending.kind
    (('a', 'b'), 'offsets', {('a', 0): 5}, 'latest')
    >>> parse_source_options({"kafka.bootstrap.servers": "h:1"}, streaming=True)
    Traceback (most recent call last):
    ...
    fastkafka.spark.options.KafkaOptionError: One of the following options must be specified for Kafka source: subscribe, subscribePattern, assign. See the docs for more details.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Mapping

from fastkafka.client.config import ALIASES, CLIENT_KEYS, ClientConfig, ConfigException
from fastkafka.client.security import ClientSecurity

__all__ = ["KafkaOptionError", "OffsetSpec", "SourceOptions", "SinkOptions", "EARLIEST", "LATEST",
           "SECURITY_KEYS", "parse_source_options", "parse_sink_options", "parse_partition_offsets",
           "parse_assign", "time_string_as_ms", "client_config"]

# Kafka's sentinels, also accepted inside offset JSON as Spark documents ("-2 earliest, -1 latest").
EARLIEST = -2
LATEST = -1
STRATEGIES = ("subscribe", "subscribePattern", "assign")
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000   # Spark's maxTriggerDelay default, 15m
_OFFSETS_EXAMPLE = 'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got '
_TIMESTAMPS_EXAMPLE = ('Expected e.g. {"topicA": {"0": 123456789, "1": 123456789}, '
                       '"topicB": {"0": 123456789, "1": 123456789}}, got ')
_ASSIGN_EXAMPLE = 'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got '
# The client's security properties, taken from ``kafka.``-prefixed options: every name the client
# knows (its keys and their aliases) under these prefixes.
_SECURITY_PREFIXES = ("security.", "ssl.", "sasl.")
SECURITY_KEYS = frozenset(name for name in (*CLIENT_KEYS, *ALIASES)
                          if name.startswith(_SECURITY_PREFIXES))
# Files, read where the client is built (an executor may have them when the driver has not).
_FILE_KEYS = frozenset(name for name in SECURITY_KEYS if ALIASES.get(name, name).endswith(".location"))
_AUTO_OFFSET_RESET = (
    "Kafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingOffsets' to 'earliest' or 'latest'\n"
    "to specify where to start. Structured Streaming manages which offsets are consumed\n"
    "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
    "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
    "'startingOffsets' only applies when a new Streaming query is started, and\n"
    "that resuming will always pick up from where the query left off. See the docs for more\n"
    "details.")


class KafkaOptionError(ValueError):
    """An option Spark's Kafka source would reject (Spark raises IllegalArgumentException)."""


TopicPartition = tuple  # (topic: str, partition: int)


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends, before the broker is asked.

    ``kind`` is ``earliest`` | ``latest`` | ``offsets`` (``offsets`` maps (topic, partition) to
    an offset or -2/-1) | ``timestamp`` (one ``timestamp`` for every partition) | ``timestamps``
    (per-partition ``offsets`` map of timestamps in ms).
    """

    kind: str
    offsets: dict = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True)
class SourceOptions:
    """Validated reader options; ``strategy`` is one of :data:`STRATEGIES`."""

    bootstrap_servers: str
    strategy: str
    topics: tuple = ()
    pattern: str | None = None
    assign: tuple = ()                  # ((topic, partition), ...) in the order given
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    max_offsets_per_trigger: int | None = None
    # Streaming: hold a micro-batch back until this many new offsets exist, or until
    # max_trigger_delay_ms passed since the last one (Spark's default 15m).
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    # "error" (Spark's default) fails when no offset has a timestamp at or after the one asked
    # for; "latest" starts such partitions at their end.
    starting_timestamp_strategy: str = "error"
    fetch_max_bytes: int = 16 << 20
    request_timeout_ms: int = 30_000
    # kafka.isolation.level: 1 (read_committed) plans "latest" as the last stable offset and skips
    # aborted transactions' records, as Spark's source does with a read_committed consumer
    isolation_level: int = 0
    # Batch reads narrow their offset ranges by Spark's filters (spark/pushdown.py). Opt-in:
    # Spark refuses a reader that can push filters unless spark.sql.python.filterPushdown.enabled
    # is set (off by default), so an unconditional pushFilters would break every default read.
    push_filters: bool = False
    # Client security properties (``security.protocol``, ``ssl.*``, ``sasl.*``) -> string values,
    # pickled to the executors with the rest; kept out of repr (passwords).
    security: dict = field(default_factory=dict, repr=False)

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` belongs to the subscription (``assign`` is decided per partition)."""
        if self.strategy == "subscribe":
            return topic in self.topics
        if self.strategy == "subscribePattern":
            return re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.assign)


@dataclass(frozen=True)
class SinkOptions:
    """Validated writer options: ``topic`` is the default for rows without a topic column."""

    bootstrap_servers: str
    topic: str | None = None
    compression: str = "none"
    max_request_size: int = 1 << 20
    acks: int = -1
    request_timeout_ms: int = 30_000
    include_headers: bool = True
    security: dict = field(default_factory=dict, repr=False)   # as SourceOptions.security


ISOLATION_LEVELS = ("read_uncommitted", "read_committed")   # kafka.isolation.level; index = wire code


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    # Spark hands us a CaseInsensitiveDict; tests and the CLI pass plain dicts.
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _bool(opts: dict, key: str, default: bool) -> bool:
    v = opts.get(key.lower())
    if v is None:
        return default
    v = v.strip().lower()
    if v not in ("true", "false"):
        raise KafkaOptionError(f"Option '{key}' must be 'true' or 'false', got '{v}'")
    return v == "true"


def _int(opts: dict, key: str, default: int | None) -> int | None:
    v = opts.get(key.lower())
    if v is None:
        return default
    try:
        return int(v.strip())
    except ValueError:
        raise KafkaOptionError(f"Option '{key}' must be an integer, got '{v}'") from None


_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
                  "d": 86_400_000}
_TIME_ERROR = ("Time must be specified as seconds (s), milliseconds (ms), microseconds (us), "
               "minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or 250us.")


def time_string_as_ms(text: str) -> int:
    """A duration as Spark's configs write it (``JavaUtils.timeStringAsMs``): an integer with an
    optional unit us/ms/s/m/min/h/d, milliseconds when none; rejects what Spark rejects.

    >>> time_string_as_ms("15m"), time_string_as_ms(" 30S "), time_string_as_ms("100")
    (900000, 30000, 100)
    >>> time_string_as_ms("1.5s")
    Traceback (most recent call last):
    ...
    fastkafka.spark.options.KafkaOptionError: Time must be specified as seconds (s), milliseconds (ms), microseconds (us), minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or 250us.
    Failed to parse time string: 1.5s
    """
    m = re.fullmatch(r"(-?[0-9]+)([a-z]+)?", text.strip().lower())
    if m is None:
        raise KafkaOptionError(f"{_TIME_ERROR}\nFailed to parse time string: {text}")
    unit = m.group(2) or "ms"
    if unit not in _TIME_UNITS_MS:
        raise KafkaOptionError(f'{_TIME_ERROR}\nInvalid suffix: "{unit}"')
    scale = _TIME_UNITS_MS[unit]
    n = int(m.group(1))
    return n * scale if scale >= 1 else int(n / 1000)   # Java's TimeUnit truncates toward zero


def _json_object(text: str, example: str) -> dict:
    try:
        obj = json.loads(text)
    except ValueError:
        raise KafkaOptionError(example + text) from None
    if not isinstance(obj, dict):
        raise KafkaOptionError(example + text)
    return obj


def parse_partition_offsets(text: str, *, timestamps: bool = False) -> dict:
    """``{"t":{"0":23}}`` -> ``{("t", 0): 23}`` (partition keys are strings in JSON).

    >>> parse_partition_offsets('{"t":{"1":-1,"0":-2}}')
    {('t', 1): -1, ('t', 0): -2}
    """
    example = _TIMESTAMPS_EXAMPLE if timestamps else _OFFSETS_EXAMPLE
    out = {}
    for topic, parts in _json_object(text, example).items():
        if not isinstance(parts, dict):
            raise KafkaOptionError(example + text)
        for p, off in parts.items():
            try:
                part = int(p)
            except (TypeError, ValueError):
                raise KafkaOptionError(example + text) from None
            if isinstance(off, bool) or not isinstance(off, int):
                raise KafkaOptionError(example + text)
            out[(topic, part)] = off
    return out


def parse_assign(text: str) -> tuple:
    """``{"t":[0,1]}`` -> ``(("t", 0), ("t", 1))``.

    >>> parse_assign('{"t":[1,0]}')
    (('t', 1), ('t', 0))
    """
    out = []
    for topic, parts in _json_object(text, _ASSIGN_EXAMPLE).items():
        if not isinstance(parts, list) or not all(
                isinstance(p, int) and not isinstance(p, bool) for p in parts):
            raise KafkaOptionError(_ASSIGN_EXAMPLE + text)
        out.extend((topic, p) for p in parts)
    return tuple(out)


def _offset_spec(opts: dict, ts_key: str, by_ts_key: str, offsets_key: str,
                 default: str) -> OffsetSpec:
    # Spark's order of preference: one global timestamp, then per-partition timestamps, then
    # earliest/latest/JSON offsets.
    if ts_key.lower() in opts:
        text = opts[ts_key.lower()].strip()
        try:
            return OffsetSpec("timestamp", timestamp=int(text))
        except ValueError:
            raise KafkaOptionError(f"Expected a single long value, got {text}") from None
    if by_ts_key.lower() in opts:
        return OffsetSpec("timestamps", parse_partition_offsets(opts[by_ts_key.lower()].strip(),
                                                                timestamps=True))
    text = opts.get(offsets_key.lower())
    if text is None:
        return OffsetSpec(default)
    text = text.strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    return OffsetSpec("offsets", parse_partition_offsets(text))


def _check_kafka_params(opts: dict, role: str) -> None:
    for key, what in (("key.deserializer", "keys"), ("value.deserializer", "values")):
        if "kafka." + key in opts and role == "consumer":
            raise KafkaOptionError(
                f"Kafka option '{key}' is not supported as {what} are deserialized as byte arrays "
                f"with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
                f"the {what}.")
    for key, what in (("key.serializer", "keys"), ("value.serializer", "value")):
        if "kafka." + key in opts and role == "producer":
            raise KafkaOptionError(
                f"Kafka option '{key}' is not supported as {what} are serialized with "
                f"ByteArraySerializer.")
    if role == "consumer":
        if "kafka.auto.offset.reset" in opts:
            raise KafkaOptionError(_AUTO_OFFSET_RESET)
        for key in ("enable.auto.commit", "interceptor.classes"):
            if "kafka." + key in opts:
                raise KafkaOptionError(f"Kafka option '{key}' is not supported")
    if not opts.get("kafka.bootstrap.servers", "").strip():
        raise KafkaOptionError(f"Option 'kafka.bootstrap.servers' must be specified for "
                               f"configuring Kafka {role}")


def _security_options(opts: dict) -> dict:
    """The ``kafka.security.protocol``/``kafka.ssl.*``/``kafka.sasl.*`` options as client
    properties, checked as the client will check them (the files excepted: they are read where a
    client is built)."""
    props = {}
    for key, value in opts.items():
        name = key[len("kafka."):]
        if not (key.startswith("kafka.") and name.startswith(_SECURITY_PREFIXES)):
            continue
        if name not in SECURITY_KEYS:
            raise KafkaOptionError(f"Kafka option '{name}' is not supported: fastkafka's client "
                                   f"takes {', '.join(sorted(SECURITY_KEYS))}")
        props[name] = value
    if props:
        try:
            ClientSecurity.from_config(ClientConfig(
                {k: v for k, v in props.items() if k not in _FILE_KEYS}))
        except ConfigException as e:
            raise KafkaOptionError(f"Invalid Kafka security option: {e}") from None
    return props


def client_config(opts: "SourceOptions | SinkOptions", client_id: str, **props) -> ClientConfig:
    """The client configuration of ``opts`` (bootstrap servers, request timeout, security) plus
    ``props`` (Kafka's names): every client the data source builds is built from this.

    >>> o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t",
    ...     "kafka.security.protocol": "sasl_ssl", "kafka.sasl.mechanism": "SCRAM-SHA-512",
    ...     "kafka.sasl.username": "u", "kafka.sasl.password": "p",
    ...     "kafka.ssl.ca.location": "/on/every/executor/ca.pem"})
    >>> c = client_config(o, "fastkafka-spark", acks=1)
    >>> c["security.protocol"], c["ssl.truststore.location"], c["acks"]
    ('SASL_SSL', '/on/every/executor/ca.pem', 1)
    >>> parse_sink_options({"kafka.bootstrap.servers": "h:1",  # doctest: +ELLIPSIS
    ...                     "kafka.ssl.truststore.password": "x"})
    Traceback (most recent call last):
    ...
    fastkafka.spark.options.KafkaOptionError: Kafka option 'ssl.truststore.password' is not supported: ...
    >>> parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SASL_SSL",
    ...                     "kafka.sasl.mechanism": "GSSAPI"})
    Traceback (most recent call last):
    ...
    fastkafka.spark.options.KafkaOptionError: Invalid Kafka security option: sasl.mechanism=GSSAPI: fastkafka's client offers PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    """
    return ClientConfig({"bootstrap.servers": opts.bootstrap_servers, "client.id": client_id,
                         "request.timeout.ms": opts.request_timeout_ms, **opts.security, **props})


def _strategy(opts: dict) -> tuple[str, str]:
    given = [s for s in STRATEGIES if s.lower() in opts]
    names = ", ".join(STRATEGIES)
    if not given:
        raise KafkaOptionError(f"One of the following options must be specified for Kafka "
                               f"source: {names}. See the docs for more details.")
    if len(given) > 1:
        raise KafkaOptionError(f"Only one of the following options can be specified for Kafka "
                               f"source: {names}. See the docs for more details.")
    return given[0], opts[given[0].lower()]


def _check_batch_range(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.kind == "latest":
        raise KafkaOptionError("starting offset can't be latest for batch queries on Kafka")
    if starting.kind == "offsets":
        for (t, p), off in starting.offsets.items():
            if off == LATEST:
                raise KafkaOptionError(f"startingOffsets for {t}-{p} can't be latest for batch "
                                       f"queries on Kafka")
    if ending.kind == "earliest":
        raise KafkaOptionError("ending offset can't be earliest for batch queries on Kafka")
    if ending.kind == "offsets":
        for (t, p), off in ending.offsets.items():
            if off == EARLIEST:
                raise KafkaOptionError(f"ending offset for {t}-{p} can't be earliest for batch "
                                       f"queries on Kafka")


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate reader ``options`` for a batch (``streaming=False``) or streaming query."""
    opts = _lower(options)
    starting = _offset_spec(opts, "startingTimestamp", "startingOffsetsByTimestamp",
                            "startingOffsets", "latest" if streaming else "earliest")
    if streaming:
        if "endingoffsets" in opts:
            raise KafkaOptionError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in opts or "endingtimestamp" in opts:
            raise KafkaOptionError("ending timestamp not valid in streaming queries")
        ending = OffsetSpec("latest")
    else:
        ending = _offset_spec(opts, "endingTimestamp", "endingOffsetsByTimestamp",
                              "endingOffsets", "latest")
        _check_batch_range(starting, ending)

    strategy, value = _strategy(opts)
    topics, pattern, assign = (), None, ()
    if strategy == "assign":
        if not value.strip().startswith("{"):
            raise KafkaOptionError(f"No topicpartitions to assign as specified value for option "
                                   f"'assign' is '{value}'")
        assign = parse_assign(value)
    elif strategy == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise KafkaOptionError(f"No topics to subscribe to as specified value for option "
                                   f"'subscribe' is '{value}'")
    else:
        pattern = value.strip()
        if not pattern:
            raise KafkaOptionError(f"Pattern to subscribe is empty as specified value for option "
                                   f"'subscribePattern' is '{value}'")
        try:
            re.compile(pattern)
        except re.error as e:
            raise KafkaOptionError(f"Invalid subscribePattern '{value}': {e}") from None

    min_partitions = _int(opts, "minPartitions", None)
    if min_partitions is not None and min_partitions <= 0:
        raise KafkaOptionError("minPartitions must be positive")
    max_per_trigger = _int(opts, "maxOffsetsPerTrigger", None)
    if max_per_trigger is not None and max_per_trigger <= 0:
        raise KafkaOptionError("maxOffsetsPerTrigger must be positive")
    min_per_trigger = _int(opts, "minOffsetsPerTrigger", None)
    if min_per_trigger is not None and min_per_trigger <= 0:
        raise KafkaOptionError("minOffsetsPerTrigger must be positive")
    max_delay = opts.get("maxtriggerdelay")
    max_delay_ms = DEFAULT_MAX_TRIGGER_DELAY_MS if max_delay is None else time_string_as_ms(max_delay)
    ts_strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if ts_strategy not in ("error", "latest"):
        raise KafkaOptionError(f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', "
                               f"got '{ts_strategy}'")
    _check_kafka_params(opts, "consumer")
    fetch_max = _int(opts, "kafka.fetch.max.bytes", 16 << 20)
    isolation = opts.get("kafka.isolation.level", "read_uncommitted").strip().lower()
    if isolation not in ISOLATION_LEVELS:
        raise KafkaOptionError(f"Invalid value {isolation!r} for Kafka option 'isolation.level': "
                               f"one of {', '.join(ISOLATION_LEVELS)}")
    return SourceOptions(
        bootstrap_servers=opts["kafka.bootstrap.servers"].strip(), strategy=strategy,
        topics=topics, pattern=pattern, assign=assign, starting=starting, ending=ending,
        max_offsets_per_trigger=max_per_trigger, min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=max_delay_ms, min_partitions=min_partitions,
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", False),
        starting_timestamp_strategy=ts_strategy, fetch_max_bytes=fetch_max,
        request_timeout_ms=_int(opts, "kafka.request.timeout.ms", 30_000),
        push_filters=_bool(opts, "pushFilters", False), security=_security_options(opts),
        isolation_level=ISOLATION_LEVELS.index(isolation))


_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate writer ``options`` (``topic``, ``kafka.*`` producer settings).

    >>> parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t",
    ...                     "kafka.compression.type": "LZ4"}).compression
    'lz4'
    """
    opts = _lower(options)
    _check_kafka_params(opts, "producer")
    codec = opts.get("kafka.compression.type", "none").strip().lower()
    if codec not in _CODECS:
        raise KafkaOptionError(f"Invalid value {codec} for configuration compression.type: "
                               f"String must be one of: {', '.join(_CODECS)}")
    acks = opts.get("kafka.acks", "all").strip().lower()
    if acks not in ("all", "-1", "0", "1"):
        raise KafkaOptionError(f"Invalid value {acks} for configuration acks: "
                               f"String must be one of: all, -1, 0, 1")
    topic = opts.get("topic")
    return SinkOptions(bootstrap_servers=opts["kafka.bootstrap.servers"].strip(),
                       topic=topic.strip() if topic else None, compression=codec,
                       max_request_size=_int(opts, "kafka.max.request.size", 1 << 20),
                       acks=-1 if acks == "all" else int(acks),
                       request_timeout_ms=_int(opts, "kafka.request.timeout.ms", 30_000),
                       include_headers=_bool(opts, "includeHeaders", True),
                       security=_security_options(opts))
