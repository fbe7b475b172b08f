"""One broker: configuration, logs, topic registry, handlers and the network server, started and
stopped in the right order.

Start: check every log dir is writable (a clear error otherwise), reserve the listeners' ports (a
busy port is a clear error, before any log is loaded), load the logs (recovery runs here) and the
topic registry, then open the ports (as Kafka, only once the logs are recovered: a client
connecting meanwhile is refused and tries another broker or again, rather than waiting out the
recovery on a silent connection), then accept.
Stop (in cluster mode after a controlled shutdown moved its leaderships): stop accepting and
finish in-flight requests (waiting fetches are answered), stop the handler threads, flush the
logs and write the clean-shutdown marker.

Example (in-process, as the tests run it)::

    >>> import tempfile
    >>> from fastkafka.config import KafkaConfig
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> b = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": tmpdir.name}))
    >>> b.startup(); b.port > 0
    True
    >>> b.shutdown(); tmpdir.cleanup()
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import TYPE_CHECKING

from fastkafka import errors
from fastkafka import protocol as P
from fastkafka.cluster.election import election_not_needed, no_such_partition
from fastkafka.cluster.embedded import EmbeddedMetadata
from fastkafka.config import ConfigException, KafkaConfig
from fastkafka.log import LogManager
from fastkafka.security import ScramCredential
from fastkafka.config.definitions import (ADVERTISED_LISTENERS, BROKER_ID, CONNECTIONS_MAX_IDLE_MS,
                                          CONTROLLED_SHUTDOWN_ENABLE, LISTENERS, MAX_CONNECTIONS,
                                          MAX_CONNECTIONS_PER_IP, MAX_CONNECTIONS_PER_IP_OVERRIDES, METRICS_HOST,
                                          METRICS_PORT, NUM_IO_THREADS, NUM_NETWORK_THREADS,
                                          SOCKET_REQUEST_MAX_BYTES, ZOOKEEPER_CONNECT)

from .authorizer import Authorizer, authorizer_from_config
from .coordination import CoordinationService
from .dispatch import Dispatcher
from .dynamic_config import DynamicBrokerConfig
from .fetch_sessions import FetchSessionCache
from .handlers import HANDLERS, advertised_apis
from .listener_security import ListenerSecurity, SecurityConfigError, inter_broker_security, listener_security
from .metrics import BrokerMetrics
from .purgatory import Purgatory
from .quotas import ClientQuotas
from .request_channel import RequestChannel
from .services import BrokerServices
from .socket_server import ListenerError, SocketServer, parse_listener
from .cluster_topics import ClusterTopicManager
from .topics import INTERNAL_TOPICS, TopicManager

if TYPE_CHECKING:
    from fastkafka.cluster.node import ClusterNode

    from .metrics_export import MetricsExporter
    from .replica_manager import ReplicaManager
    from .services import Metadata

__all__ = ["Broker", "BrokerStartupError"]

log = logging.getLogger("fastkafka.server")


class BrokerStartupError(RuntimeError):
    """The broker cannot start (port busy, log dir unwritable, bad listener); the message says why."""


def _check_writable(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".fastkafka-probe-{os.getpid()}")
        with open(probe, "wb") as f:
            f.write(b"ok")
        os.unlink(probe)
    except OSError as e:
        raise BrokerStartupError(f"log dir {path} is not writable: {e.strerror}") from None


class Broker:
    """Thread-safe ``startup``/``shutdown``; ``shutdown`` is idempotent."""

    def __init__(self, config: KafkaConfig):
        self.config = config
        self.broker_id: int = config[BROKER_ID]
        self.logs: LogManager | None = None
        self.metadata: Metadata | None = None
        self.cluster: ClusterNode | None = None  # when zookeeper.connect is set (cluster mode)
        self.topics: TopicManager | None = None
        self.dynamic_config: DynamicBrokerConfig | None = None   # server.properties + dynamic broker configs
        self.fetch_purgatory: Purgatory | None = None
        self.fetch_sessions = FetchSessionCache.from_config(config)   # incremental fetch sessions (KIP-227)
        self.replicas: ReplicaManager | None = None   # cluster mode: roles, ISR, followers' fetchers, acks=all
        self.coordination: CoordinationService | None = None  # see group_coordination()
        self.services: BrokerServices | None = None   # what handlers reach, once all of it exists
        self.socket_server: SocketServer | None = None
        self.listener_security: dict[str, ListenerSecurity] = {}   # per listener name, from startup
        self.authorizer: Authorizer | None = None   # authorizer.class.name set: ACLs decide every request
        self.quotas: ClientQuotas | None = None     # client quotas, charged by the dispatcher
        self.metrics: BrokerMetrics | None = None   # metrics.port set: what the request path counts
        self._metrics_exporter: MetricsExporter | None = None   # metrics.port set: the HTTP endpoint
        self._channel: RequestChannel | None = None
        self._dispatcher: Dispatcher | None = None
        self._stopped = threading.Event()
        self._started = False
        self._lock = threading.Lock()
        self._coordination_lock = threading.Lock()
        self._coordination_starting = False

    # --- lifecycle ---
    def startup(self) -> None:
        cfg = self.config
        try:
            listeners = [parse_listener(s) for s in cfg[LISTENERS]]
            for spec in cfg[ADVERTISED_LISTENERS] or []:
                parse_listener(spec)
        except ListenerError as e:
            raise BrokerStartupError(str(e)) from None
        if not listeners:
            raise BrokerStartupError("listeners is empty")
        try:
            self.listener_security = listener_security(cfg, listeners, self.scram_credential)
            if cfg[ZOOKEEPER_CONNECT]:
                inter_broker_security(cfg)     # followers will log in to leaders with it
        except (SecurityConfigError, ConfigException) as e:
            raise BrokerStartupError(str(e)) from None
        for d in cfg.log_dirs:
            _check_writable(d)
        self.advertised = P.Advertised(ranges=advertised_apis())
        # client quotas follow the metadata store, which exists once requests arrive
        self.quotas = ClientQuotas.from_config(cfg, lambda: self.metadata)
        # cluster mode: the transaction coordinator's requests wait on other brokers (Dispatcher)
        if (metrics_port := cfg[METRICS_PORT]) is not None:
            # the library missing fails here
            self._metrics_exporter = self._metrics_endpoint(listeners[0][1], metrics_port)
        self._dispatcher = dispatcher = Dispatcher(HANDLERS, self.advertised, self.quotas,
                                                   waiting_threads=4 if cfg[ZOOKEEPER_CONNECT] else 0,
                                                   metrics=self.metrics)
        self._channel = RequestChannel(dispatcher.handle, cfg[NUM_IO_THREADS])
        try:
            self.socket_server = SocketServer(
                cfg[LISTENERS], self._channel.submit,
                num_network_threads=cfg[NUM_NETWORK_THREADS], max_connections=cfg[MAX_CONNECTIONS],
                max_connections_per_ip=cfg[MAX_CONNECTIONS_PER_IP],
                max_connections_per_ip_overrides=cfg[MAX_CONNECTIONS_PER_IP_OVERRIDES],
                max_request_bytes=cfg[SOCKET_REQUEST_MAX_BYTES], idle_ms=cfg[CONNECTIONS_MAX_IDLE_MS],
                security=self.listener_security, quotas=self.quotas)
            self.socket_server.bind()  # before loading logs: a busy port fails fast (listen() below)
        except ListenerError as e:
            raise BrokerStartupError(str(e)) from None
        try:
            if self._metrics_exporter is not None:
                self._start_metrics(self._metrics_exporter)    # a busy metrics port fails fast too
            if cfg[ZOOKEEPER_CONNECT]:
                self._join_cluster()  # fails fast: ZooKeeper unreachable, broker.id in use
            try:
                self.logs = LogManager(cfg)
            except errors.KafkaStorageError as e:   # a log dir locked by another broker, unreadable
                raise BrokerStartupError(str(e)) from None
            self.fetch_purgatory = Purgatory("fetch")
            zk_metadata = self.cluster.metadata if self.cluster is not None else None
            assert self.cluster is None or zk_metadata is not None, "_join_cluster's connect() started it"
            self.metadata = metadata = EmbeddedMetadata(cfg.log_dirs[0]) if zk_metadata is None else zk_metadata
            self.dynamic_config = DynamicBrokerConfig(cfg, metadata, self.broker_id)
            self.dynamic_config.refresh()
            current = self.dynamic_config.current
            self.topics = (TopicManager(current, self.logs, metadata, self.fetch_purgatory) if zk_metadata is None
                           else ClusterTopicManager(current, self.logs, zk_metadata, self.fetch_purgatory))
            metadata.add_listener(self._follow_dynamic_config)
            self.topics.load()
            self.authorizer = authorizer_from_config(cfg, metadata.acls)
            try:
                self.socket_server.listen()   # the logs are recovered: connections may come
            except ListenerError as e:
                raise BrokerStartupError(str(e)) from None
            if self.cluster is not None:
                from .replica_manager import ReplicaManager  # noqa: PLC0415 (needs kazoo)
                self.replicas = ReplicaManager(cfg, self.topics, self.metadata, self.fetch_purgatory, self.metrics)
                self.replicas.reconfigure(self.dynamic_config.current)
                self.replicas.start()
                self._register(self.cluster)
        except BaseException:
            self.socket_server.shutdown(0.1)
            if self._metrics_exporter is not None:
                self._metrics_exporter.stop()
            if self.replicas is not None:
                self.replicas.stop()
            if self.cluster is not None:
                self.cluster.stop()
            if self.logs is not None:
                self.logs.shutdown()
            raise
        if self.cluster is None:
            # group coordinator: __consumer_offsets, loads in the background. In cluster mode
            # it starts on the first group request, so the topic spreads over the brokers up by
            # then, or once an internal topic exists (see _coordinate_internal_topics)
            self.group_coordination()
        else:
            metadata.add_listener(self._coordinate_internal_topics)
            self._coordinate_internal_topics()
        self.services = dispatcher.services = BrokerServices(
            self.config, self.broker_id, self.logs, metadata, self.topics, self.dynamic_config,
            self.fetch_purgatory, self.fetch_sessions, self.advertised, self.authorizer, self.replicas, self.cluster,
            self.group_coordination, self.endpoint, self.elect_leaders)
        self.socket_server.start()
        self._started = True
        log.info("broker %d started (cluster id %s, %d topics, log dirs %s)", self.broker_id,
                 metadata.cluster_id, len(metadata.topics()), ",".join(cfg.log_dirs))

    def shutdown(self, timeout: float = 30.0) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
        if not self._started:
            return
        purgatory, server, channel, dispatcher, logs = (self.fetch_purgatory, self.socket_server, self._channel,
                                                        self._dispatcher, self.logs)
        assert (purgatory is not None and server is not None and channel is not None and dispatcher is not None
                and logs is not None), "started: startup built them all"
        log.info("broker %d shutting down", self.broker_id)
        if self.cluster is not None and self.config[CONTROLLED_SHUTDOWN_ENABLE]:
            assert self.replicas is not None, "cluster mode: startup built the replica manager"
            self.replicas.leave()           # no longer follows, so no leader takes it back into an ISR
            self.cluster.controlled_shutdown()
        # answer waiting fetches first so draining processors are not held by them
        purgatory.shutdown()
        with self._coordination_lock:
            if self.coordination is not None:
                self.coordination.stop()  # parked JoinGroup/SyncGroup answer NOT_COORDINATOR
        if self.cluster is not None:
            self.cluster.stop()  # step down and deregister first: clients move on at once
        if self.replicas is not None:
            self.replicas.stop()  # fetchers stop before the logs close; acks=all waits answer
        server.shutdown(timeout)
        channel.shutdown(timeout)
        dispatcher.shutdown(timeout)
        logs.shutdown()
        if self._metrics_exporter is not None:
            self._metrics_exporter.stop()
        log.info("broker %d stopped", self.broker_id)

    # --- metrics (metrics.port) ---
    def _metrics_endpoint(self, listener_host: str, port: int) -> MetricsExporter:
        """The metrics endpoint, not yet listening. It binds ``metrics.host``, else the first
        listener's host (a loopback broker does not publish its metrics to the network); an
        empty host means every interface."""
        from .metrics_export import MetricsError, MetricsExporter   # noqa: PLC0415 (needs prometheus_client)
        cfg = self.config
        host = cfg[METRICS_HOST] if cfg[METRICS_HOST] is not None else listener_host
        self.metrics = BrokerMetrics()
        try:
            return MetricsExporter(self, self.metrics, host or "0.0.0.0", port)
        except MetricsError as e:
            raise BrokerStartupError(str(e)) from None

    def _start_metrics(self, exporter: MetricsExporter) -> None:
        from .metrics_export import MetricsError   # noqa: PLC0415
        try:
            exporter.start()
        except MetricsError as e:
            raise BrokerStartupError(str(e)) from None

    @property
    def metrics_port(self) -> int | None:
        """The metrics endpoint's bound port (None: metrics.port unset)."""
        return None if self._metrics_exporter is None else self._metrics_exporter.port

    # --- cluster mode ---
    def _join_cluster(self) -> None:
        from fastkafka.cluster.node import ClusterNode, ClusterStartupError  # noqa: PLC0415 (needs kazoo)
        node = ClusterNode(self.config)
        try:
            node.connect()
        except ClusterStartupError as e:
            raise BrokerStartupError(str(e)) from None
        self.cluster = node

    def _register(self, node: ClusterNode) -> None:
        from fastkafka.cluster.node import ClusterStartupError  # noqa: PLC0415
        endpoints = []
        for name, _, _ in (parse_listener(s) for s in self.config[LISTENERS]):
            host, port = self.endpoint(name)
            endpoints.append(f"{name}://{host}:{port}")
        try:
            node.register(endpoints, {name: sec.protocol for name, sec in self.listener_security.items()})
        except ClusterStartupError as e:
            raise BrokerStartupError(str(e)) from None

    # --- services built on demand ---
    def group_coordination(self) -> CoordinationService:
        """The group coordinator and producer-id manager, built on first use (thread-safe): at
        start-up on a single broker; in cluster mode on the first group request, so that
        ``__consumer_offsets`` spreads over the brokers up by then."""
        svc = self.coordination
        if svc is None:
            with self._coordination_lock:
                svc = self.coordination
                if svc is None:
                    cluster = self.cluster
                    svc = self.coordination = CoordinationService(
                        self.config, self.topics, broker_id=self.broker_id,
                        metadata=self.metadata if cluster is not None else None,
                        zk_client=cluster.client if cluster is not None else None,
                        replicas=self.replicas, stopped=self._stopped)
        return svc

    def _follow_dynamic_config(self) -> None:
        # a metadata change: dynamic broker configs altered through any broker take effect here
        dynamic, topics = self.dynamic_config, self.topics
        assert dynamic is not None and topics is not None, "startup adds this listener once both exist"
        if dynamic.refresh():
            topics.reconfigure(dynamic.current)
            if self.replicas is not None:
                self.replicas.reconfigure(dynamic.current)

    def _coordinate_internal_topics(self) -> None:
        """Cluster mode: once ``__consumer_offsets`` or ``__transaction_state`` exists, this
        broker coordinates what it leads of them without waiting for a client to ask (a
        prepared transaction completes, a timed-out one aborts, after its coordinator moved
        here). Called on kazoo's thread: the service is built on one of its own."""
        if self.coordination is not None or self._coordination_starting:
            return
        topics = self.topics
        assert topics is not None, "startup adds this listener once the topic manager exists"
        if any(topics.get(t) is not None for t in INTERNAL_TOPICS):
            self._coordination_starting = True
            threading.Thread(target=self.group_coordination, name="fastkafka-coordination-start",
                             daemon=True).start()

    # --- what handlers ask the broker ---
    @property
    def controller(self):
        """This broker's Controller in cluster mode (active or not), None when embedded."""
        return self.cluster.controller if self.cluster is not None else None

    def elect_leaders(self, election_type: int, partitions,
                      timeout_ms: int) -> dict[tuple[str, int], int | errors.KafkaError]:
        """ElectLeaders: per ``(topic, partition)`` (None: all) the elected leader's id or the
        Kafka error that prevented it; an elected leader is awaited in this broker's metadata
        (as Kafka's DelayedElectLeader does) until ``timeout_ms`` (then REQUEST_TIMED_OUT)."""
        if self.cluster is None:       # one broker leads everything: there is never anyone to elect
            assert self.metadata is not None, "handlers run once startup built the metadata"
            topics = self.metadata.topics()
            wanted = partitions if partitions is not None else [
                (t, p) for t, info in topics.items() for p in range(info.partitions)]
            return {(t, p): election_not_needed() if t in topics and 0 <= p < topics[t].partitions
                    else no_such_partition() for t, p in wanted}
        zk_metadata = self.cluster.metadata
        assert zk_metadata is not None, "the node connected in startup"
        results = self.controller.elect_leaders(election_type, partitions)
        deadline = time.monotonic() + timeout_ms / 1000
        for tp, leader in results.items():
            if not isinstance(leader, int):
                continue
            while (view := zk_metadata.partition(*tp)) is None or view.leader != leader:
                if time.monotonic() >= deadline:
                    results[tp] = errors.RequestTimedOutError("The elected leader was not seen in time.")
                    break
                time.sleep(0.01)
        return results

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """``user``'s stored SCRAM credential for ``mechanism`` (None: none, or not loaded yet)."""
        metadata = self.metadata
        text = metadata.user_configs(user).get(mechanism) if metadata is not None else None
        return ScramCredential.from_kafka_string(text) if text else None

    @property
    def port(self) -> int:
        """The first listener's bound port (useful with port 0)."""
        return next(iter(self._bound().values()))[1]

    def endpoint(self, listener: str) -> tuple[str, int]:
        """(host, port) clients should use for ``listener``: advertised.listeners, else the bound address."""
        for spec in self.config[ADVERTISED_LISTENERS] or []:
            name, host, port = parse_listener(spec)
            if name == listener:
                return host or socket.getfqdn(), port
        host, port = self._bound()[listener]
        return (host if host not in ("", "0.0.0.0", "::") else socket.getfqdn()), port

    def _bound(self) -> dict[str, tuple[str, int]]:
        assert self.socket_server is not None, "startup binds the listeners first"
        return self.socket_server.bound

    @property
    def cluster_id(self) -> str:
        assert self.metadata is not None, "startup reads the cluster id with the metadata"
        return self.metadata.cluster_id
