"""Client configuration with Kafka's property names (and the seeds' older names as aliases).

A client takes a plain dict; :class:`ClientConfig` parses it against the table below, fills
defaults and rejects names it does not know (a typo in a property name should fail loudly,
not silently fall back to a default). The seeds' names map onto today's:
``broker.list``/``metadata.broker.list`` -> ``bootstrap.servers``, ``queue.time`` ->
``linger.ms``, ``compression.codec`` -> ``compression.type``, ``queue.size`` ->
``queue.buffering.max.messages``, ``fetch.size`` -> ``fetch.message.max.bytes``,
``autocommit.enable`` -> ``enable.auto.commit``.

Example::

    >>> c = ClientConfig({"broker.list": "h1:9092,h2:9093", "queue.time": 20, "acks": "all"})
    >>> c["bootstrap.servers"], c["linger.ms"], c["acks"]
    (['h1:9092', 'h2:9093'], 20, -1)
    >>> ClientConfig({"lingr.ms": 1})
    Traceback (most recent call last):
    ...
    fastkafka.config.ConfigException: unknown client configuration 'lingr.ms'
"""
from __future__ import annotations

from typing import Any, Mapping

from fastkafka.config import (BOOLEAN, INT, LIST, PASSWORD, STRING, ConfigException, ConfigKey, at_least,
                              one_of)

__all__ = ["ClientConfig", "ConfigException", "CLIENT_KEYS", "ALIASES", "parse_servers"]


def _acks(v: Any) -> int:
    if isinstance(v, str) and v.strip().lower() == "all":
        return -1
    n = INT(v)
    if n not in (-1, 0, 1):
        raise ValueError("acks must be all, -1, 0 or 1")
    return n


def _any(v: Any) -> Any:
    return v


def _k(name, type_, default, validator, doc) -> ConfigKey:
    return ConfigKey(name, type_, default, validator, doc)


_OFFSET_RESET = {"smallest": "earliest", "largest": "latest", "earliest": "earliest",
                 "latest": "latest", "none": "none"}

CLIENT_KEYS: dict[str, ConfigKey] = {k.name: k for k in [
    # --- every client ---
    _k("bootstrap.servers", LIST, "127.0.0.1:9092", None, "host:port pairs to fetch metadata from."),
    _k("client.id", STRING, "fastkafka", None, "Sent with every request (broker logs, quotas)."),
    _k("request.timeout.ms", INT, 30_000, at_least(1), "How long to wait for any one response."),
    _k("socket.connection.setup.timeout.ms", INT, 10_000, at_least(1), "TCP connect timeout."),
    _k("retries", INT, 5, at_least(0), "Resends of a request that failed with a retriable error."),
    _k("retry.backoff.ms", INT, 100, at_least(0), "Pause before a retry (doubles each attempt)."),
    _k("metadata.max.age.ms", INT, 300_000, at_least(0), "Refresh metadata at least this often."),
    # --- security (fastkafka.client.security) ---
    _k("security.protocol", lambda v: str(v).strip().upper(), "PLAINTEXT",
       one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), "How to reach the brokers."),
    _k("ssl.truststore.location", STRING, None, None, "PEM file of the CAs the broker's certificate "
       "is checked against (default: the system's)."),
    _k("ssl.truststore.certificates", PASSWORD, None, None, "Those CAs as PEM text."),
    _k("ssl.truststore.type", STRING, "PEM", one_of("PEM"), "PEM only."),
    _k("ssl.keystore.location", STRING, None, None, "PEM file with our key and certificate (a "
       "client certificate, for ssl.client.auth)."),
    _k("ssl.keystore.certificate.chain", PASSWORD, None, None, "Our certificate chain as PEM text."),
    _k("ssl.keystore.key", PASSWORD, None, None, "Our private key as PEM text."),
    _k("ssl.keystore.type", STRING, "PEM", one_of("PEM"), "PEM only."),
    _k("ssl.key.password", PASSWORD, None, None, "Password of an encrypted private key."),
    _k("ssl.endpoint.identification.algorithm", STRING, "https", None, "https: the broker's "
       "certificate must name the host we connect to; empty: not checked."),
    _k("ssl.enabled.protocols", LIST, "TLSv1.2,TLSv1.3", None, "TLS versions we accept."),
    _k("ssl.cipher.suites", LIST, "", None, "TLS 1.2 cipher suites (OpenSSL names)."),
    _k("sasl.mechanism", lambda v: str(v).strip().upper(), "PLAIN", None,
       "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."),
    _k("sasl.username", STRING, None, None, "SASL user (librdkafka's name; or sasl.jaas.config)."),
    _k("sasl.password", PASSWORD, None, None, "SASL password."),
    _k("sasl.jaas.config", PASSWORD, None, None, "The Java client's form: "
       "'...LoginModule required username=\"u\" password=\"p\";'."),
    # --- producer ---
    _k("producer.type", STRING, "sync", one_of("sync", "async"),
       "sync: send() returns when acknowledged; async: a background thread sends batches."),
    _k("acks", _acks, -1, None, "0: no response, 1: leader wrote it, all/-1: in-sync replicas wrote it."),
    _k("compression.type", STRING, "none", one_of("none", "gzip", "snappy", "lz4", "zstd"),
       "Codec for each record batch."),
    _k("compression.level", INT, None, None, "Codec level (gzip 1-9, lz4 0-12, zstd 1-22)."),
    _k("linger.ms", INT, 5, at_least(0), "Async: wait this long for more records before sending."),
    _k("batch.size", INT, 16_384, at_least(1), "Target bytes of one partition's batch."),
    _k("max.request.size", INT, 1_048_576, at_least(1), "Largest Produce request we send."),
    _k("queue.buffering.max.messages", INT, 100_000, at_least(1),
       "Async: records queued before send() blocks."),
    _k("queue.enqueue.timeout.ms", INT, -1, None,
       "Async: how long send() blocks on a full queue (-1 forever, 0 fail at once)."),
    _k("max.in.flight.requests.per.connection", INT, 5, at_least(1), "Unacknowledged requests per broker."),
    _k("enable.idempotence", BOOLEAN, True, None,
       "Ask for a producer id and sequence batches (only if the broker offers InitProducerId)."),
    _k("transactional.id", STRING, None, None, "Makes the producer transactional (begin_transaction, "
       "commit_transaction, ...); needs enable.idempotence and acks=all."),
    _k("transaction.timeout.ms", INT, 60_000, at_least(1), "The coordinator aborts a transaction open "
       "longer than this."),
    _k("partitioner.class", _any, "murmur2", None,
       "murmur2 (Java's), hash (the seeds' hash(key) % n), random, or a Partitioner."),
    _k("serializer.class", _any, None, None, "Encoder for values (to_message(obj) -> bytes)."),
    _k("key.serializer.class", _any, None, None, "Encoder for keys."),
    _k("callback.handler", _any, None, None, "CallbackHandler with hooks around the queue and acks."),
    # --- consumers ---
    _k("group.id", STRING, None, None, "Consumer group (ConsumerConnector)."),
    _k("auto.offset.reset", lambda v: _OFFSET_RESET[str(v).strip().lower()], "latest", None,
       "Where to start without a committed offset: earliest|smallest, latest|largest, none."),
    _k("enable.auto.commit", BOOLEAN, True, None, "Commit consumed offsets periodically."),
    _k("auto.commit.interval.ms", INT, 5_000, at_least(0), "How often to auto-commit."),
    _k("fetch.message.max.bytes", INT, 1_048_576, at_least(1), "Bytes per partition per fetch."),
    _k("fetch.max.bytes", INT, 52_428_800, at_least(1), "Bytes per fetch response."),
    _k("fetch.min.bytes", INT, 1, at_least(0), "Broker waits for this many bytes ..."),
    _k("fetch.wait.max.ms", INT, 100, at_least(0), "... or this long."),
    _k("consumer.timeout.ms", INT, -1, None,
       "A stream's iterator raises ConsumerTimeout after this long without a message (-1: never)."),
    _k("queued.max.message.chunks", INT, 4, at_least(1), "Fetched chunks buffered per stream."),
    _k("session.timeout.ms", INT, 10_000, at_least(1), "Group member declared dead after this."),
    _k("rebalance.timeout.ms", INT, 30_000, at_least(1), "How long a rebalance may take."),
    _k("heartbeat.interval.ms", INT, 3_000, at_least(1), "Heartbeats to the group coordinator."),
    _k("metadata.refresh.interval.ms", INT, 2_000, at_least(1),
       "ConsumerConnector: how often a topic filter looks for new topics."),
    # --- the seeds' ZooKeeper-registry consumer (fastkafka.cli.zookeeper_consumer) ---
    _k("zookeeper.connect", STRING, "", None,
       "host:port[/chroot] of ZooKeeper: group membership and offsets in /consumers/<group>."),
    _k("zookeeper.session.timeout.ms", INT, 6_000, at_least(1),
       "A consumer whose ZooKeeper session lapses this long is out of the group."),
    _k("rebalance.max.retries", INT, 4, at_least(0), "ZooKeeper rebalance attempts after the first."),
    _k("rebalance.backoff.ms", INT, 2_000, at_least(0), "Pause between ZooKeeper rebalance attempts."),
]}

ALIASES = {
    "broker.list": "bootstrap.servers", "metadata.broker.list": "bootstrap.servers",
    "queue.time": "linger.ms", "queue.buffering.max.ms": "linger.ms",
    "compression.codec": "compression.type", "queue.size": "queue.buffering.max.messages",
    "fetch.size": "fetch.message.max.bytes", "max.partition.fetch.bytes": "fetch.message.max.bytes",
    "autocommit.enable": "enable.auto.commit", "auto.commit.enable": "enable.auto.commit",
    "autocommit.interval.ms": "auto.commit.interval.ms", "request.required.acks": "acks",
    "message.send.max.retries": "retries", "retry.backoff": "retry.backoff.ms",
    "partitioner": "partitioner.class", "encoder": "serializer.class",
    "socket.timeout.ms": "request.timeout.ms",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    # librdkafka's spellings
    "ssl.ca.location": "ssl.truststore.location", "sasl.mechanisms": "sasl.mechanism",
}


class ClientConfig(Mapping[str, Any]):
    """Parsed client properties: every key of :data:`CLIENT_KEYS`, defaults filled in."""

    def __init__(self, props: Mapping[str, Any] | None = None, **kw: Any):
        given = dict(props or {})
        given.update({k.replace("_", "."): v for k, v in kw.items()})
        values: dict[str, Any] = {}
        for raw, value in given.items():
            name = ALIASES.get(raw, raw)
            key = CLIENT_KEYS.get(name)
            if key is None:
                raise ConfigException(f"unknown client configuration {raw!r}")
            values[name] = key.parse(value, raw)
        for name, key in CLIENT_KEYS.items():
            if name not in values:
                values[name] = key.default if key.default is None else key.parse(key.default)
        self._values = values

    def __getitem__(self, name: str) -> Any:
        return self._values[ALIASES.get(name, name)]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def with_overrides(self, **kw: Any) -> "ClientConfig":
        """A copy with ``kw`` (``_`` for ``.``) replacing values."""
        out = ClientConfig.__new__(ClientConfig)
        out._values = dict(self._values)
        for k, v in kw.items():
            name = k.replace("_", ".")
            out._values[name] = CLIENT_KEYS[name].parse(v)
        return out


def parse_servers(servers: list[str]) -> list[tuple[str, int]]:
    """``["h:9092", "[::1]:9093", "h"]`` -> ``[("h", 9092), ("::1", 9093), ("h", 9092)]``."""
    out = []
    for s in servers:
        s = s.strip()
        if "://" in s:
            s = s.split("://", 1)[1]
        host, sep, port = s.rpartition(":")
        if not sep or "]" in port:
            host, port = s, "9092"
        host = host.strip("[]")
        try:
            out.append((host, int(port)))
        except ValueError:
            raise ConfigException(f"bootstrap.servers: bad address {s!r}") from None
    if not out:
        raise ConfigException("bootstrap.servers is empty")
    return out
