"""The client's view of the cluster: brokers, topics, partition leaders; connections per broker.

Bootstrap tries each of ``bootstrap.servers`` until one answers Metadata; from then on the
brokers the cluster advertises are used and the bootstrap address is only a fallback.
Metadata is refreshed when it is older than ``metadata.max.age.ms`` or when a caller saw a
stale-leader error (:meth:`Cluster.invalidate`). Retriable failures are retried with a
doubling backoff (``retries``, ``retry.backoff.ms``).

Thread-safety: metadata reads/refreshes are safe from any thread (a lock, and their own
connection); the per-broker connections handed out by :meth:`Cluster.connection` belong to
the one thread that drives requests (the producer's sender, a consumer's fetcher) — a second
thread needs its own :class:`Cluster`.

Example::

    cluster = Cluster(ClientConfig({"bootstrap.servers": "127.0.0.1:9092"}))
    cluster.partitions_for("orders")        # [0, 1, 2]
    cluster.leader_for("orders", 1)         # node id
    cluster.connection(cluster.leader_for("orders", 1)).request(ApiKey.FETCH, {...})
"""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field

from fastkafka import errors
from fastkafka.protocol import ApiKey
from fastkafka.uuids import UUID_ZERO

from .config import ClientConfig, parse_servers
from .security import ClientSecurity
from .connection import BrokerConnection, ConnectionError_

__all__ = ["Cluster", "TopicInfo", "PartitionInfo", "BrokerInfo", "retry_call"]


@dataclass
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class PartitionInfo:
    partition: int
    leader: int
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    error_code: int = 0


@dataclass
class TopicInfo:
    name: str
    error_code: int
    partitions: dict[int, PartitionInfo]
    is_internal: bool = False
    topic_id: uuid.UUID = UUID_ZERO      # KIP-516 (zero from brokers before Kafka 2.8)


def retry_call(fn, config: ClientConfig, on_retry=None):
    """Call ``fn()``; on a retriable KafkaError sleep ``retry.backoff.ms`` (doubling, capped at
    1 s), call ``on_retry(exc)`` and try again, up to ``retries`` times."""
    attempts = config["retries"]
    backoff = config["retry.backoff.ms"] / 1000
    for attempt in range(attempts + 1):
        try:
            return fn()
        except errors.KafkaError as e:
            if not e.retriable or attempt == attempts:
                raise
            if on_retry is not None:
                on_retry(e)
            time.sleep(min(backoff * (2 ** attempt), 1.0))
    raise AssertionError("unreachable")


class Cluster:
    """Brokers and topic metadata for one client, plus one connection per broker."""

    def __init__(self, config: ClientConfig | dict | None = None):
        self.config = config if isinstance(config, ClientConfig) else ClientConfig(config)
        self.bootstrap = parse_servers(self.config["bootstrap.servers"])
        self.security = ClientSecurity.from_config(self.config)   # one TLS context for every connection
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self._lock = threading.RLock()
        self._meta_conn: BrokerConnection | None = None
        self._conns: dict[int, BrokerConnection] = {}
        self._updated = 0.0
        self._stale = True
        # Bumped by every refresh: callers caching derived facts (the producer's partition
        # counts) compare it instead of paying for topic()'s freshness check per record.
        self.generation = 0

    # -- connections --------------------------------------------------------------------

    def new_connection(self, host: str, port: int, node_id: int = -1) -> BrokerConnection:
        """A connection of this client's settings that nothing else shares (not yet connected)."""
        c = self.config
        return BrokerConnection(host, port, node_id=node_id, client_id=c["client.id"],
                                request_timeout_ms=c["request.timeout.ms"],
                                connect_timeout_ms=c["socket.connection.setup.timeout.ms"],
                                security=self.security)

    def connection(self, node_id: int) -> BrokerConnection:
        """The (connected) connection to broker ``node_id``; see the thread-safety note."""
        conn = self._conns.get(node_id)
        if conn is None or not conn.connected:
            with self._lock:
                if node_id not in self.brokers:
                    self.refresh()
                b = self.brokers.get(node_id)
                if b is None:
                    raise errors.BrokerNotAvailableError(f"no broker with id {node_id}")
                conn = self.new_connection(b.host, b.port, node_id)
            conn.connect()
            self._conns[node_id] = conn
        return conn

    def any_connection(self) -> BrokerConnection:
        """A connection to some broker (the metadata one, for admin-style requests)."""
        with self._lock:
            return self._metadata_connection()

    def _metadata_connection(self) -> BrokerConnection:
        if self._meta_conn is not None and self._meta_conn.connected:
            return self._meta_conn
        # Known brokers first (the cluster may have moved on), then the bootstrap list.
        candidates = [(b.host, b.port, b.node_id) for b in self.brokers.values()]
        candidates += [(h, p, -1) for h, p in self.bootstrap]
        last: Exception | None = None
        for host, port, node in candidates:
            conn = self.new_connection(host, port, node)
            try:
                conn.connect()
            except errors.KafkaError as e:
                if not e.retriable:   # refused credentials or certificate: another broker would too
                    raise
                last = e
                continue
            self._meta_conn = conn
            return conn
        raise ConnectionError_(f"no broker reachable (tried {', '.join(f'{h}:{p}' for h, p, _ in candidates)}): "
                               f"{last}")

    def close(self) -> None:
        with self._lock:
            for conn in list(self._conns.values()) + [self._meta_conn]:
                if conn is not None:
                    conn.close()
            self._conns.clear()
            self._meta_conn = None

    # -- metadata -----------------------------------------------------------------------

    def invalidate(self) -> None:
        """Mark metadata stale (a leader moved, a topic appeared); the next lookup refreshes."""
        self._stale = True

    def refresh(self, topics: list[str] | None = None, allow_auto_create: bool = True) -> None:
        """Fetch metadata for ``topics`` (None: every topic), merging it into the cache."""
        with self._lock:
            def once():
                conn = self._metadata_connection()
                try:
                    return conn.request(ApiKey.METADATA, {
                        "topics": None if topics is None else [{"name": t} for t in topics],
                        "allow_auto_topic_creation": allow_auto_create})
                except ConnectionError_:
                    self._meta_conn = None
                    raise
            resp = retry_call(once, self.config)
            self.brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack)
                            for b in resp.brokers}
            self.cluster_id = resp.cluster_id
            self.controller_id = resp.controller_id
            if topics is None:
                self.topics = {}
            for t in resp.topics:
                self.topics[t.name] = TopicInfo(t.name, t.error_code, {
                    p.partition_index: PartitionInfo(p.partition_index, p.leader_id,
                                                     list(p.replica_nodes), list(p.isr_nodes),
                                                     p.error_code)
                    for p in t.partitions}, bool(t.is_internal), t.topic_id)
            self._updated = time.monotonic()
            self._stale = False
            self.generation += 1

    def _fresh(self) -> bool:
        age_ms = (time.monotonic() - self._updated) * 1000
        return not self._stale and age_ms < self.config["metadata.max.age.ms"]

    def topic(self, name: str, allow_auto_create: bool = True) -> TopicInfo:
        """Metadata of ``name``, fetching it if unknown or stale. Raises the topic's error
        (UnknownTopicOrPartitionError, ...) after retrying retriable ones."""
        def lookup():
            info = self.topics.get(name)
            if info is None or info.error_code or not info.partitions or not self._fresh():
                self.refresh([name], allow_auto_create)
                info = self.topics[name]
            if info.error_code:
                self._stale = True
                raise errors.for_code(info.error_code)(f"topic {name!r}")
            return info
        return retry_call(lookup, self.config)

    def partitions_for(self, topic: str) -> list[int]:
        """The sorted partition ids of ``topic``."""
        return sorted(self.topic(topic).partitions)

    def leader_for(self, topic: str, partition: int) -> int:
        """The node id leading ``topic``-``partition``; retries while there is no leader."""
        def lookup():
            info = self.topic(topic)
            p = info.partitions.get(partition)
            if p is None:
                self._stale = True
                raise errors.UnknownTopicOrPartitionError(f"{topic}-{partition}")
            if p.leader < 0:
                self._stale = True
                raise errors.LeaderNotAvailableError(f"{topic}-{partition} has no leader")
            return p.leader
        return retry_call(lookup, self.config)

    def all_topics(self) -> dict[str, TopicInfo]:
        """Every topic (refreshes first)."""
        self.refresh(None)
        return dict(self.topics)
