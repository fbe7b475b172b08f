"""The broker's group and transaction coordinators and producer-id manager: wiring, start-up
load and the timer.

:class:`CoordinationService` (built by :meth:`Broker.group_coordination` at start-up, or in
cluster mode by the first group request) creates the compacted internal topic
``__consumer_offsets`` when missing, builds the :class:`GroupCoordinator` over its logs, and starts one thread that first loads every
partition — groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile — and then ticks the
coordinator (session and rebalance timeouts, offset expiry) every ``TICK_S``. In cluster mode
the broker coordinates only the groups of the partitions it leads: it loads those, and a group
hashed onto another broker's partition gets NOT_COORDINATOR (so the client asks FindCoordinator
again), while one on a led partition still loading gets COORDINATOR_LOAD_IN_PROGRESS.
:meth:`CoordinationService.stop` answers the parked JoinGroup/SyncGroup requests with
NOT_COORDINATOR so the network layer can drain, then stops the thread. If the broker stops
without calling it (its ``stopped`` event is set), the thread notices.

On the embedded broker the same service runs the :class:`TransactionCoordinator` over the
compacted ``__transaction_state`` (created on the first transactional request, as Kafka does;
loaded by the thread at start-up once it exists) and ticks it: prepared transactions are
completed, timed-out ones aborted, idle ids expired. Its markers go to the local logs. In cluster
mode there is none yet (markers to other brokers' partitions are not written), so FindCoordinator
for a transactional id is refused there.

Example::

    >>> import tempfile, threading
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.cluster.embedded import EmbeddedMetadata
    >>> from fastkafka.log import LogManager
    >>> from fastkafka.server.purgatory import Purgatory
    >>> from fastkafka.server.topics import TopicManager
    >>> cfg = KafkaConfig({"log.dirs": tempfile.mkdtemp(), "offsets.topic.num.partitions": 2})
    >>> logs = LogManager(cfg)
    >>> topics = TopicManager(cfg, logs, EmbeddedMetadata(cfg.log_dirs[0]), Purgatory("fetch"))
    >>> topics.load()
    >>> svc = CoordinationService(cfg, topics, broker_id=0)
    >>> svc.loaded.wait(10)
    True
    >>> svc.groups.heartbeat("g", 1, "m")    # no such member
    25
    >>> svc.stop(); logs.shutdown()
"""
from __future__ import annotations

import logging
import os
import threading

from fastkafka import errors
from fastkafka.coordinator import OFFSETS_TOPIC, GroupCoordinator, LogOffsetsStore
from fastkafka.coordinator.producer_ids import FileBlockStore, ProducerIdManager
from fastkafka.coordinator.transactions import TRANSACTION_STATE_TOPIC, TransactionCoordinator
from fastkafka.coordinator.coordinator import wall_clock_ms

from .txn_markers import LocalMarkerWriter

__all__ = ["CoordinationService"]

log = logging.getLogger("fastkafka.coordinator")

TICK_S = 0.05


class CoordinationService:
    """Owns the coordinators' thread; ``groups`` is the :class:`GroupCoordinator`,
    ``producer_ids`` the :class:`ProducerIdManager`, ``transactions`` the
    :class:`TransactionCoordinator` (None in cluster mode).

    Built from what it uses: the broker's config, its topic manager (``__consumer_offsets``
    lives there), and in cluster mode the ZooKeeper metadata (who leads which offsets
    partition) and client (producer-id blocks); ``stopped`` is the broker's stop event."""

    def __init__(self, config, topics, *, broker_id: int, metadata=None, zk_client=None,
                 stopped: threading.Event | None = None):
        self.config, self.topics, self.broker_id = config, topics, broker_id
        self.metadata = metadata
        cfg = config
        n = self._ensure_topic(OFFSETS_TOPIC, cfg["offsets.topic.num.partitions"],
                               cfg["offsets.topic.segment.bytes"])
        store = LogOffsetsStore(n, lambda p: topics.log(OFFSETS_TOPIC, p),
                                compression=cfg["offsets.topic.compression.codec"],
                                read_chunk=cfg["offsets.load.buffer.size"])
        self.groups = GroupCoordinator.from_config(cfg, store, load=False)
        self.producer_ids = ProducerIdManager(self._producer_id_store(zk_client),
                                              block_size=cfg["producer.id.block.size"])
        self.transactions: TransactionCoordinator | None = None
        self._transactions_lock = threading.Lock()
        if zk_client is None and topics.get(TRANSACTION_STATE_TOPIC) is not None:
            self.transactions = self._build_transactions()      # loaded by the thread below
        self.loaded = threading.Event()
        self._cluster = zk_client is not None
        self._broker_stopped = stopped
        self._loaded_partitions: set[int] = set()
        self._leadership_changed = threading.Event()
        if self._cluster:
            self.groups.owns_partition = self._leads
            metadata.add_listener(self._leadership_changed.set)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fastkafka-group-coordinator",
                                        daemon=True)
        self._thread.start()

    def transaction_coordinator(self) -> TransactionCoordinator | None:
        """The transaction coordinator, built (with ``__transaction_state``) on first use as Kafka
        creates the topic on the first transactional FindCoordinator; None in cluster mode."""
        if self.transactions is None and not self._cluster:
            with self._transactions_lock:
                if self.transactions is None:
                    tc = self._build_transactions()
                    tc.load_all()               # a topic just created: nothing to replay
                    self.transactions = tc
        return self.transactions

    def _build_transactions(self) -> TransactionCoordinator:
        cfg, topics = self.config, self.topics
        n = self._ensure_topic(TRANSACTION_STATE_TOPIC, cfg["transaction.state.log.num.partitions"],
                               cfg["transaction.state.log.segment.bytes"],
                               {"min.insync.replicas": str(cfg["transaction.state.log.min.isr"])})
        store = LogOffsetsStore(n, lambda p: topics.log(TRANSACTION_STATE_TOPIC, p),
                                read_chunk=cfg["transaction.state.log.load.buffer.size"])
        return TransactionCoordinator.from_config(cfg, store, self.producer_ids,
                                                  LocalMarkerWriter(topics, self.groups),
                                                  clock=wall_clock_ms)

    def _producer_id_store(self, zk_client):
        """Cluster mode: the ``/latest_producer_id_block`` znode all brokers share; else a file."""
        if zk_client is not None:
            from fastkafka.cluster.producer_ids import ZkBlockStore  # noqa: PLC0415 (needs kazoo)
            return ZkBlockStore(zk_client, self.broker_id)
        return FileBlockStore(os.path.join(self.config.log_dirs[0], "producer_id_block"))

    def _ensure_topic(self, name: str, partitions: int, segment_bytes: int, extra=None) -> int:
        """Create the compacted internal topic ``name`` when missing; its partition count."""
        topics = self.topics
        info = topics.get(name)
        if info is None:
            try:
                info = topics.create(name, partitions, 1, {
                    "cleanup.policy": "compact", "segment.bytes": str(segment_bytes), **(extra or {})})
            except errors.TopicAlreadyExistsError:
                info = topics.get(name)
        # the count is fixed once the topic exists: ids hash onto the partitions it has
        return info.partitions

    def _leads(self, partition: int) -> bool:
        """Cluster mode: whether this broker leads ``__consumer_offsets-<partition>`` (and coordinates its groups)."""
        return self.metadata.leader(OFFSETS_TOPIC, partition) == self.broker_id

    def _led_partitions(self) -> set[int]:
        return {p for p in range(self.groups.manager.num_partitions) if self._leads(p)}

    def _load_led(self) -> None:
        # without replication a partition's leader never changes to another live broker, so
        # partitions are only ever gained (at start, or when their broker comes back): load those
        self._leadership_changed.clear()
        new = self._led_partitions() - self._loaded_partitions
        self.groups.load_partitions(sorted(new))
        self._loaded_partitions |= new

    def _run(self) -> None:
        try:
            if self._cluster:
                self._load_led()
            else:
                self.groups.load_all()
                with self._transactions_lock:
                    if self.transactions is not None:
                        self.transactions.load_all()
        except Exception:
            log.exception("loading %s failed; groups stay unavailable", OFFSETS_TOPIC)
            return
        finally:
            self.loaded.set()
        log.info("group coordinator loaded %d group(s)", len(self.groups.manager.groups))
        broker_stopped = self._broker_stopped
        while not self._stop.wait(TICK_S):
            if broker_stopped is not None and broker_stopped.is_set():
                self.groups.shutdown()
                return
            try:
                if self._cluster and self._leadership_changed.is_set():
                    self._load_led()
                self.groups.tick()
                if self.transactions is not None:
                    self.transactions.tick()
            except Exception:  # a bug in one tick must not stop the timeouts for good
                log.exception("group coordinator tick failed")

    def stop(self) -> None:
        self.groups.shutdown()
        self._stop.set()
        if self._cluster:
            self.metadata.remove_listener(self._leadership_changed.set)
        if threading.current_thread() is not self._thread:
            self._thread.join(5.0)

