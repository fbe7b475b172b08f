"""The broker's group and transaction coordinators and producer-id manager: wiring, start-up
load, leadership and the timer.

:class:`CoordinationService` (built by :meth:`Broker.group_coordination` at start-up, or in
cluster mode by the first group request) creates the compacted internal topic
``__consumer_offsets`` when missing, builds the :class:`GroupCoordinator` over its logs, and
starts one thread that first loads every partition — groups answer COORDINATOR_LOAD_IN_PROGRESS
meanwhile — and then ticks the coordinator (session and rebalance timeouts, offset expiry) every
``TICK_S``. :meth:`CoordinationService.stop` answers the parked JoinGroup/SyncGroup requests with
NOT_COORDINATOR so the network layer can drain, then stops the thread. If the broker stops
without calling it (its ``stopped`` event is set), the thread notices.

Cluster mode, as Kafka's ZooKeeper mode:

* the topic has ``offsets.topic.replication.factor`` replicas (the embedded broker: 1). While
  fewer brokers are alive it is not created: FindCoordinator, and the group requests, answer
  COORDINATOR_NOT_AVAILABLE, and clients ask again until enough brokers have joined;
* the broker coordinates the groups of the partitions it leads, and follows that leadership
  both ways on every tick: a partition it became leader of is loaded from its (replicated) log;
  one it lost is unloaded — its groups forgotten, their parked JoinGroup/SyncGroup requests
  answered NOT_COORDINATOR (Kafka's onResignation). A group hashed onto another broker's
  partition gets NOT_COORDINATOR (so the client asks FindCoordinator again), one on a partition
  this broker is taking over gets COORDINATOR_LOAD_IN_PROGRESS;
* offset commits and group metadata are written through
  :class:`~fastkafka.server.coordinator_writer.CoordinatorPartitionWriter`: acknowledged once
  replicated (``offsets.commit.required.acks``, ``offsets.commit.timeout.ms``).

The same service runs the :class:`TransactionCoordinator` over the compacted
``__transaction_state`` (created on the first transactional FindCoordinator, as Kafka does) and
ticks it on a thread of its own: prepared transactions are completed, timed-out ones aborted,
idle ids expired. On the embedded broker it is loaded at start-up once the topic exists, its
markers go to the local logs and EndTxn is answered after them (they take a fraction of a
millisecond there, and a read_committed reader then sees a commit as soon as it returns). In
cluster mode a transaction's markers and Complete state are written on ``MARKER_THREADS``
threads of their own once its Prepare state is (EndTxn is answered then, as in Kafka: the
markers' replication is off the producer's path); the producer's next request waits
``COMPLETION_WAIT_MS`` at most for that. In cluster mode it is Kafka's ZooKeeper-mode coordinator: the topic
has ``transaction.state.log.replication.factor`` replicas (COORDINATOR_NOT_AVAILABLE while fewer
brokers are alive), the broker coordinates the transactional ids of the partitions it leads
(loaded and unloaded with that leadership, as the groups are), each state is acknowledged once
replicated, and the markers go to each partition's leader as WriteTxnMarkers
(:class:`~fastkafka.server.txn_marker_channel.RemoteMarkerWriter`), carrying the partition's
leader epoch as the coordinator epoch so that a deposed coordinator's markers are fenced.

Example::

    >>> import tempfile, threading
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.cluster.embedded import EmbeddedMetadata
    >>> from fastkafka.log import LogManager
    >>> from fastkafka.server.purgatory import Purgatory
    >>> from fastkafka.server.topics import TopicManager
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> cfg = KafkaConfig({"log.dirs": tmpdir.name, "offsets.topic.num.partitions": 2})
    >>> logs = LogManager(cfg)
    >>> topics = TopicManager(cfg, logs, EmbeddedMetadata(cfg.log_dirs[0]), Purgatory("fetch"))
    >>> topics.load()
    >>> svc = CoordinationService(cfg, topics, broker_id=0)
    >>> svc.loaded.wait(10)
    True
    >>> svc.groups.heartbeat("g", 1, "m")    # no such member
    25
    >>> svc.stop(); logs.shutdown(); tmpdir.cleanup()
"""
from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from fastkafka import errors
from fastkafka.coordinator import OFFSETS_TOPIC, GroupCoordinator, LogOffsetsStore
from fastkafka.coordinator.producer_ids import FileBlockStore, ProducerIdManager
from fastkafka.coordinator.transactions import TRANSACTION_STATE_TOPIC, MarkerWriter, TransactionCoordinator
from fastkafka.coordinator.coordinator import wall_clock_ms
from fastkafka.config.definitions import (OFFSETS_COMMIT_REQUIRED_ACKS, OFFSETS_COMMIT_TIMEOUT_MS,
                                          OFFSETS_LOAD_BUFFER_SIZE, OFFSETS_TOPIC_COMPRESSION_CODEC,
                                          OFFSETS_TOPIC_NUM_PARTITIONS, OFFSETS_TOPIC_SEGMENT_BYTES,
                                          PRODUCER_ID_BLOCK_SIZE, REQUEST_TIMEOUT_MS,
                                          TRANSACTION_STATE_LOG_LOAD_BUFFER_SIZE, TRANSACTION_STATE_LOG_MIN_ISR,
                                          TRANSACTION_STATE_LOG_NUM_PARTITIONS, TRANSACTION_STATE_LOG_SEGMENT_BYTES)

from .coordinator_writer import CoordinatorPartitionWriter
from .partition import ACKS_ALL, LEADER
from .topics import INTERNAL_TOPICS
from .txn_marker_channel import RemoteMarkerWriter
from .txn_markers import LocalMarkerWriter

__all__ = ["CoordinationService"]

log = logging.getLogger("fastkafka.coordinator")

TICK_S = 0.05
# Lock.acquire's arguments for a tick's wait: one tuple for every wait (threading.Event.wait(TICK_S)
# made a lock and an argument tuple per wait, 20 times a second; kept across the wait, they
# pinned memory a wave of connections gave back: bench/RESULTS.md, "Idle connections")
_TICK_WAIT = (True, TICK_S)
# transactions completing at once (markers, then the Complete state): each waits on its leaders
MARKER_THREADS = 4
# how long the producer's next request waits for its previous transaction's completion before it
# gets CONCURRENT_TRANSACTIONS (a completion takes milliseconds; librdkafka backs off 20 ms on it)
COMPLETION_WAIT_MS = 100
_LOADING = errors.CoordinatorLoadInProgressError.code
_NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code
_NOT_COORDINATOR = errors.NotCoordinatorError.code


class CoordinationService:
    """Owns the coordinators' threads; ``groups`` is the :class:`GroupCoordinator`,
    ``producer_ids`` the :class:`ProducerIdManager`, ``transactions`` the
    :class:`TransactionCoordinator` (None until ``__transaction_state`` exists).

    Built from what it uses: the broker's config, its topic manager (``__consumer_offsets``
    lives there), and in cluster mode the ZooKeeper metadata (who leads which offsets
    partition), client (producer-id blocks) and replica manager (which replicas lead, and
    writes waiting for acks); ``stopped`` is the broker's stop event."""

    def __init__(self, config, topics, *, broker_id: int, metadata=None, zk_client=None, replicas=None,
                 stopped: threading.Event | None = None):
        self.config, self.topics, self.broker_id = config, topics, broker_id
        self.metadata, self.replicas = metadata, replicas
        self._cluster = zk_client is not None
        cfg = config
        self._unavailable_logged: str | None = None
        n = self._offsets_partitions()
        writer = CoordinatorPartitionWriter(
            topics, replicas, OFFSETS_TOPIC, required_acks=cfg[OFFSETS_COMMIT_REQUIRED_ACKS],
            timeout_ms=cfg[OFFSETS_COMMIT_TIMEOUT_MS]) if self._cluster else None
        store = LogOffsetsStore(n, lambda p: topics.log(OFFSETS_TOPIC, p),
                                compression=cfg[OFFSETS_TOPIC_COMPRESSION_CODEC],
                                read_chunk=cfg[OFFSETS_LOAD_BUFFER_SIZE], writer=writer)
        self.groups = GroupCoordinator.from_config(cfg, store, load=False)
        self.groups.topic_metadata = self._topic_metadata        # what consumer groups are assigned
        # what regex subscriptions match: internal topics never (as consumers exclude them by default)
        self.groups.topic_names = lambda: [n for n in topics.all() if n not in INTERNAL_TOPICS]
        self.producer_ids = ProducerIdManager(self._producer_id_store(zk_client),
                                              block_size=cfg[PRODUCER_ID_BLOCK_SIZE])
        self.transactions: TransactionCoordinator | None = None
        self._transactions_lock = threading.Lock()
        self._markers: RemoteMarkerWriter | None = None
        self._completions = ThreadPoolExecutor(MARKER_THREADS, thread_name_prefix="fastkafka-txn-markers")
        self.loaded = threading.Event()
        self._broker_stopped = stopped
        # cluster mode: per internal topic, the leader epoch each partition was (or is being) loaded in
        self._epochs: dict[str, dict[int, int]] = {OFFSETS_TOPIC: {}, TRANSACTION_STATE_TOPIC: {}}
        if self._cluster:
            self.groups.partition_error = self._partition_error
        self._stop = threading.Event()
        # held until stop(): the tick threads wait on it (see _stopped_within_tick)
        self._stopping = threading.Lock()
        self._stopping.acquire()
        self._acquire_stopping = self._stopping.acquire    # bound once: no method object per wait
        self._thread = threading.Thread(target=self._run, name="fastkafka-group-coordinator",
                                        daemon=True)
        self._txn_thread = threading.Thread(target=self._tick_transactions,
                                            name="fastkafka-txn-coordinator", daemon=True)
        if topics.get(TRANSACTION_STATE_TOPIC) is not None:
            # embedded: loaded by the thread below; cluster mode: with each partition's leadership
            self.transactions = self._build_transactions()
        self._thread.start()

    def _topic_metadata(self, name: str) -> tuple | None:
        """A topic's ``(topic_id, partition count)``, None while it does not exist (or has no
        id yet: KIP-848 assignments name topics by id)."""
        info = self.topics.get(name)
        if info is None or not info.topic_id.int:
            return None
        return info.topic_id, info.partitions

    def transaction_coordinator(self) -> TransactionCoordinator | None:
        """The transaction coordinator, built on first use: on one broker with
        ``__transaction_state``, as Kafka creates the topic on the first transactional
        FindCoordinator; in cluster mode once the topic exists (see
        :meth:`transaction_state_unavailable`), None before."""
        if self.transactions is None:
            with self._transactions_lock:
                if self.transactions is None:
                    if self._cluster and self.topics.get(TRANSACTION_STATE_TOPIC) is None:
                        return None
                    tc = self._build_transactions()
                    if not self._cluster:
                        tc.load_all()           # a topic just created: nothing to replay
                    self.transactions = tc
        return self.transactions

    def _build_transactions(self) -> TransactionCoordinator:
        cfg, topics = self.config, self.topics
        if self._cluster:       # created by transaction_state_unavailable, replicated
            n = topics.get(TRANSACTION_STATE_TOPIC).partitions
        else:                   # one broker, one replica (whatever the factor says)
            n = self._ensure_topic(TRANSACTION_STATE_TOPIC, cfg[TRANSACTION_STATE_LOG_NUM_PARTITIONS],
                                   1, cfg[TRANSACTION_STATE_LOG_SEGMENT_BYTES],
                                   {"min.insync.replicas": str(cfg[TRANSACTION_STATE_LOG_MIN_ISR])})
        extra = {}
        markers: MarkerWriter
        if self._cluster:
            writer = CoordinatorPartitionWriter(topics, self.replicas, TRANSACTION_STATE_TOPIC,
                                                required_acks=ACKS_ALL, timeout_ms=cfg[REQUEST_TIMEOUT_MS])
            self._markers = markers = RemoteMarkerWriter(self.broker_id, self.metadata, self.replicas.address,
                                                         self.replicas.security, cfg[REQUEST_TIMEOUT_MS])
            extra = dict(owns_partition=self._leads_transactions, coordinator_epoch=self._transactions_epoch,
                         complete_in=self._complete_later, completion_wait_ms=COMPLETION_WAIT_MS)
        else:
            writer, markers = None, LocalMarkerWriter(topics, self.groups)
        store = LogOffsetsStore(n, lambda p: topics.log(TRANSACTION_STATE_TOPIC, p),
                                read_chunk=cfg[TRANSACTION_STATE_LOG_LOAD_BUFFER_SIZE], writer=writer)
        tc = TransactionCoordinator.from_config(cfg, store, self.producer_ids, markers, clock=wall_clock_ms,
                                                **extra)
        self._txn_thread.start()
        return tc

    def _complete_later(self, work) -> None:
        """The coordinator's ``complete_in``: a prepared transaction's markers, on a marker thread
        (RuntimeError once stopped)."""
        self._completions.submit(self._logged, work)

    @staticmethod
    def _logged(work) -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 — the transaction stays prepared; the tick tries again
            log.exception("completing a transaction failed")

    def _leads_transactions(self, partition: int) -> bool:
        """Cluster mode: this broker coordinates the ids of ``__transaction_state-<partition>``
        (it leads it, and what it loaded is of this term)."""
        part = self.replicas.get(TRANSACTION_STATE_TOPIC, partition)
        if part is None or part.role != LEADER:
            return False
        epoch = self._epochs[TRANSACTION_STATE_TOPIC].get(partition)
        return epoch is None or epoch == part.leader_epoch

    def _transactions_epoch(self, partition: int) -> int:
        """The coordinator epoch markers carry: the leader epoch of the id's state partition."""
        part = self.replicas.get(TRANSACTION_STATE_TOPIC, partition)
        return 0 if part is None else max(part.leader_epoch, 0)

    def _producer_id_store(self, zk_client):
        """Cluster mode: the ``/latest_producer_id_block`` znode all brokers share; else a file."""
        if zk_client is not None:
            from fastkafka.cluster.producer_ids import ZkBlockStore  # noqa: PLC0415 (needs kazoo)
            return ZkBlockStore(zk_client, self.broker_id)
        return FileBlockStore(os.path.join(self.config.log_dirs[0], "producer_id_block"))

    def _ensure_topic(self, name: str, partitions: int, replication_factor: int, segment_bytes: int,
                      extra=None) -> int:
        """Create the compacted internal topic ``name`` when missing; its partition count."""
        topics = self.topics
        info = topics.get(name)
        if info is None:
            try:
                info = topics.create(name, partitions, replication_factor, {
                    "cleanup.policy": "compact", "segment.bytes": str(segment_bytes), **(extra or {})})
            except errors.TopicAlreadyExistsError:
                info = topics.get(name)
        # the count is fixed once the topic exists: ids hash onto the partitions it has
        return info.partitions

    def _offsets_partitions(self) -> int:
        """The partition count of ``__consumer_offsets``, created first where it can be."""
        cfg = self.config
        if not self._cluster:     # one broker, one replica (Kafka's single-broker setups set 1)
            return self._ensure_topic(OFFSETS_TOPIC, cfg[OFFSETS_TOPIC_NUM_PARTITIONS], 1,
                                      cfg[OFFSETS_TOPIC_SEGMENT_BYTES])
        self.offsets_topic_unavailable()
        info = self.topics.get(OFFSETS_TOPIC)
        # not created yet: it will be, with this count (Kafka's partitionFor falls back to it too)
        return info.partitions if info is not None else cfg[OFFSETS_TOPIC_NUM_PARTITIONS]

    def offsets_topic_unavailable(self) -> str | None:
        """Cluster mode: create ``__consumer_offsets`` if it is missing and enough brokers are
        alive for ``offsets.topic.replication.factor``, as Kafka's FindCoordinator does. None
        when the topic exists; else why not, for COORDINATOR_NOT_AVAILABLE's message."""
        cfg = self.config
        return self._internal_topic_unavailable(
            OFFSETS_TOPIC, "offsets topic", "offsets.topic.replication.factor",
            lambda rf: self._ensure_topic(OFFSETS_TOPIC, cfg[OFFSETS_TOPIC_NUM_PARTITIONS], rf,
                                          cfg[OFFSETS_TOPIC_SEGMENT_BYTES]))

    def transaction_state_unavailable(self) -> str | None:
        """Cluster mode: the same for ``__transaction_state`` and
        ``transaction.state.log.replication.factor`` (a transactional FindCoordinator)."""
        cfg = self.config
        return self._internal_topic_unavailable(
            TRANSACTION_STATE_TOPIC, "transaction state topic", "transaction.state.log.replication.factor",
            lambda rf: self._ensure_topic(TRANSACTION_STATE_TOPIC, cfg[TRANSACTION_STATE_LOG_NUM_PARTITIONS],
                                          rf, cfg[TRANSACTION_STATE_LOG_SEGMENT_BYTES],
                                          {"min.insync.replicas": str(cfg[TRANSACTION_STATE_LOG_MIN_ISR])}))

    def _internal_topic_unavailable(self, topic: str, what: str, rf_name: str, create) -> str | None:
        if self.topics.get(topic) is not None:
            return None
        rf, alive = self.config[rf_name], len(self.topics.live_brokers())
        if alive < rf:
            why = (f"Number of alive brokers '{alive}' does not meet the required replication factor "
                   f"'{rf}' for the {what} (configured via '{rf_name}'). "
                   "This error can be ignored if the cluster is starting up and not all brokers are up yet.")
        else:
            try:
                create(rf)
                return None
            except errors.KafkaError as e:     # e.g. a broker left meanwhile
                why = f"cannot create {topic}: {e}"
        if why != self._unavailable_logged:    # once per cause, not once per client retry
            self._unavailable_logged = why
            log.error("%s", why)
        return why

    def _partition_error(self, partition: int) -> int:
        """Cluster mode: the error the groups of ``__consumer_offsets-<partition>`` get here (0
        when this broker coordinates them; see GroupCoordinator.partition_error)."""
        part = self.replicas.get(OFFSETS_TOPIC, partition)
        if part is not None and part.role == LEADER:
            epoch = self._epochs[OFFSETS_TOPIC].get(partition)
            # loaded in an earlier term: stale until the thread loads it again
            return 0 if epoch is None or epoch == part.leader_epoch else _LOADING
        if self.metadata.leader(OFFSETS_TOPIC, partition) == self.broker_id:
            return _LOADING            # elected: the replica manager is making it the leader
        if self.topics.get(OFFSETS_TOPIC) is None:
            return _NOT_AVAILABLE
        return _NOT_COORDINATOR

    def _follow_leadership(self) -> None:
        """Load the internal partitions this broker now leads, unload those it stopped leading
        (or leads in a new epoch: another leader may have written in between)."""
        self._follow(OFFSETS_TOPIC, self.groups.manager.num_partitions, self.groups, "group")
        tc = self.transaction_coordinator()
        if tc is not None:
            self._follow(TRANSACTION_STATE_TOPIC, tc.num_partitions, tc, "transaction")

    def _follow(self, topic: str, partitions: int, coordinator, kind: str) -> None:
        epochs = self._epochs[topic]
        led = {}
        for p in range(partitions):
            part = self.replicas.get(topic, p)
            if part is not None and part.role == LEADER:
                led[p] = part.leader_epoch
        lost = sorted(p for p, epoch in epochs.items() if led.get(p) != epoch)
        if lost:
            # unloaded first, forgotten second: no request sees a stale partition as served
            coordinator.unload_partitions(lost)
            for p in lost:
                del epochs[p]
            log.info("resigned as the %s coordinator of %s partitions %s", kind, topic, lost)
        gained = sorted(set(led) - set(epochs))
        for p in gained:
            epochs[p] = led[p]   # first, so a term that ends while it loads shows as stale
            try:
                coordinator.load_partitions([p])
            except errors.KafkaError as e:      # lost again meanwhile: the next tick decides
                del epochs[p]
                log.warning("loading %s-%d failed: %s", topic, p, e)
        if gained:
            log.info("elected as the %s coordinator of %s partitions %s", kind, topic,
                     {p: led[p] for p in gained})

    def _run(self) -> None:
        try:
            if self._cluster:
                self._follow_leadership()
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
        groups = self.groups
        while not self._stopped_within_tick():
            if broker_stopped is not None and broker_stopped.is_set():
                self.groups.shutdown()
                return
            try:
                if self._cluster:
                    self._follow_leadership()
                # no group, nothing to time out: an idle embedded broker's tick makes no object
                if groups.manager.groups or groups.consumer_groups:
                    groups.tick()
            except Exception:  # a bug in one tick must not stop the timeouts for good
                log.exception("group coordinator tick failed")

    def _tick_transactions(self) -> None:
        """The transaction coordinator's timer, apart from the groups': completing a transaction
        waits for its markers, in cluster mode on other brokers."""
        self.loaded.wait()
        broker_stopped = self._broker_stopped
        while not self._stopped_within_tick():
            if broker_stopped is not None and broker_stopped.is_set():
                return
            try:
                tc = self.transactions      # set just after this thread started
                if tc is not None:
                    tc.tick()
            except Exception:  # noqa: BLE001 — as the groups' tick
                log.exception("transaction coordinator tick failed")

    def _stopped_within_tick(self) -> bool:
        """Wait up to ``TICK_S``; True once :meth:`stop` was called. The wait allocates nothing:
        a lock held until stop, acquired with a timeout through a method and an argument tuple
        made once."""
        if self._acquire_stopping(*_TICK_WAIT):
            self._stopping.release()         # for the other tick thread
            return True
        return False

    def stop(self) -> None:
        self.groups.shutdown()
        if not self._stop.is_set():
            self._stop.set()
            self._stopping.release()
        for thread in (self._thread, self._txn_thread):
            if thread.is_alive() and threading.current_thread() is not thread:
                thread.join(5.0)
        self._completions.shutdown(wait=False, cancel_futures=True)
        if self._markers is not None:
            self._markers.close()

