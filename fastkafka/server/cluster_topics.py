"""Topic management in cluster mode: the topic manager over ZooKeeper metadata.

The same policy as :class:`TopicManager` (names, configs, counts) with three differences:

* **Which logs live here**: the partitions whose replica list names this broker. They are
  opened when the assignment appears (new topic, added partitions) and deleted when the
  controller deletes the topic — both learned from the metadata watches, so a change made
  through any broker reaches every broker the same way.
* **Who serves them**: only the partition's current leader. ``log()``, which Produce, Fetch,
  ListOffsets and DeleteRecords go through, answers NOT_LEADER_OR_FOLLOWER elsewhere, which
  sends clients back to Metadata to find the leader.
* **Changes are asynchronous**: CreateTopics and CreatePartitions write the assignment and then
  wait (up to ``cluster.metadata.wait.ms``) for the controller to elect the new partitions'
  leaders, so a client that creates a topic can produce to it right away; DeleteTopics waits
  until the topic has gone from the cache.

Example (``zk_connect``: a ZooKeeper's ``host:port``, e.g. ``"127.0.0.1:2181"``; broker 1 runs
here, broker 2 is only registered)::

    >>> import tempfile
    >>> from fastkafka.cluster import znodes
    >>> from fastkafka.cluster.node import ClusterNode
    >>> from fastkafka.cluster.registration import BrokerRegistration
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.log import LogManager
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> cfg = KafkaConfig({"zookeeper.connect": f"{zk_connect}/doc-cluster-topics", "broker.id": 1,
    ...                    "log.dirs": tmpdir.name})
    >>> node = ClusterNode(cfg); node.connect(); node.register(["PLAINTEXT://127.0.0.1:9092"], {})
    >>> broker2 = BrokerRegistration(node.client, znodes.BrokerInfo(2, "127.0.0.1", 9093)); broker2.register()
    >>> md = node.metadata; md.wait_until(lambda: len(md.brokers()) == 2, 10)
    True
    >>> logs = LogManager(cfg); tm = ClusterTopicManager(cfg, logs, md); tm.load()
    >>> tm.create("orders", 2, 2, {})          # returns once the controller elected the leaders
    TopicInfo(name='orders', partitions=2, configs=mappingproxy({}))
    >>> sorted(tm.local_logs())                # a replica of both partitions lives here
    [('orders', 0), ('orders', 1)]
    >>> led_by = {md.leader("orders", p): p for p in range(2)}; sorted(led_by)   # one leader each
    [1, 2]
    >>> tm.log("orders", led_by[1])
    Log(orders-..., start=0, end=0)
    >>> tm.log("orders", led_by[2])            # the client asks Metadata for the leader again
    Traceback (most recent call last):
    fastkafka.errors.NotLeaderOrFollowerError: orders-... is led by broker 2, not 1
    >>> broker2.deregister(); node.stop(); logs.shutdown(); tmpdir.cleanup()
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Mapping

from fastkafka import errors
from fastkafka.cluster.embedded import TopicInfo
from fastkafka.config.definitions import (BROKER_ID, CLUSTER_METADATA_WAIT_MS, DEFAULT_REPLICATION_FACTOR,
                                          DELETE_TOPIC_ENABLE)

from .topics import TopicManager

if TYPE_CHECKING:
    from fastkafka.cluster.metadata import ZkMetadata

__all__ = ["ClusterTopicManager"]

log = logging.getLogger("fastkafka.server")


class ClusterTopicManager(TopicManager):
    """Thread-safe like its base: changes under the lock, reads on snapshots."""

    _metadata: ZkMetadata      # the cluster's view: partition states, assignments, live brokers

    def __init__(self, config, logs, metadata: ZkMetadata, purgatory=None):
        super().__init__(config, logs, metadata, purgatory)
        self.broker_id = config[BROKER_ID]
        self._wait_s = config[CLUSTER_METADATA_WAIT_MS] / 1000
        self._applied: dict[str, Mapping[str, str]] = {}   # topic -> overrides its logs run with

    # --- reads ---
    def log(self, topic: str, partition: int):
        """The partition's Log if this broker leads it; NOT_LEADER_OR_FOLLOWER or
        UNKNOWN_TOPIC_OR_PARTITION otherwise."""
        view = self._metadata.partition(topic, partition)
        if view is None:
            raise errors.UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
        if view.leader != self.broker_id:
            raise errors.NotLeaderOrFollowerError(
                f"{topic}-{partition} is led by broker {view.leader}, not {self.broker_id}")
        lg = self._partitions.get((topic, partition))
        if lg is None:  # leadership arrived before the watch that opens the log ran
            self.sync()
            lg = self._partitions.get((topic, partition))
            if lg is None:
                raise errors.NotLeaderOrFollowerError(f"{topic}-{partition} is not open here yet")
        return lg

    def local_logs(self) -> Mapping[tuple[str, int], object]:
        """Every partition log on this broker, leader or follower (a snapshot)."""
        return self._partitions

    def _open(self, info, partition: int, cfg):
        # leader epochs are the controller's here (the replica manager records them)
        return self._logs.get_or_create_log(info.name, partition, cfg, info.topic_id)

    # --- keeping the local logs in step with the assignment ---
    def load(self) -> None:
        self.sync()
        self._metadata.add_listener(self.sync)

    def sync(self) -> None:
        """Open logs newly assigned here; delete those of topics that no longer exist and of
        partitions no longer assigned here."""
        me = self.broker_id
        md = self._metadata
        with self._lock:
            topics = md.topics()
            parts = dict(self._partitions)
            opened = []
            for name, info in topics.items():
                mine = [p for p, replicas in md.assignment(name).items() if me in replicas]
                if not mine:
                    continue
                cfg = self._log_configs.get(name)
                if cfg is None or self._applied.get(name) != info.configs:
                    # new here, or its overrides changed (AlterConfigs through any broker)
                    cfg = self._config_of(info)
                    self._applied[name] = info.configs
                    self._apply_configs(name, cfg)
                for p in mine:
                    if (name, p) not in parts:
                        parts[(name, p)] = self._open(info, p, cfg)
                        opened.append((name, p))
            # the topic was deleted, or a reassignment moved the partition off this broker
            gone = [tp for tp in parts if tp[0] not in topics
                    or me not in md.assignment(tp[0]).get(tp[1], (me,))]
            for tp in gone:
                del parts[tp]
            self._partitions = parts
            for tp in gone:
                if tp[0] not in topics:
                    self._log_configs.pop(tp[0], None)
                    self._applied.pop(tp[0], None)
                self._logs.delete_log(*tp)
        if opened:
            log.info("opened %d partition log(s) assigned to broker %d", len(opened), me)
        for t, p in gone:
            log.info("deleted the log of %s-%d (topic deleted or replica moved away)", t, p)

    # --- changes ---
    def live_brokers(self):
        return self._metadata.brokers()

    def create(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
               configs: Mapping[str, str | None] | None = None, assignments=()) -> TopicInfo:
        overrides = {k: v for k, v in (configs or {}).items() if v is not None}
        n, _ = self.validate_create(name, num_partitions, replication_factor, overrides, assignments)
        rf = replication_factor if replication_factor != -1 else self.config[DEFAULT_REPLICATION_FACTOR]
        given = {a.partition_index: tuple(a.broker_ids) for a in assignments} if assignments else None
        try:
            info = self._metadata.create_topic(name, n, overrides, replication_factor=rf, assignment=given)
        except errors.TopicAlreadyExistsError:
            # created meanwhile through another broker: let our cache catch up so callers that
            # fall back to get() (auto-creation, __consumer_offsets) find it
            self._metadata.wait_until(lambda: self._metadata.get(name) is not None, self._wait_s)
            raise
        self._wait_leaders(name, range(n))
        log.info("created topic %s with %d partition(s)%s", name, n, f" and configs {overrides}" if overrides else "")
        return info

    def add_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        info = self.validate_add_partitions(name, count)
        if validate_only:
            return
        self._metadata.set_partitions(name, count)
        self._wait_leaders(name, range(info.partitions, count))
        log.info("topic %s now has %d partitions (was %d)", name, count, info.partitions)

    def delete(self, name: str) -> None:
        if not self.config[DELETE_TOPIC_ENABLE]:
            raise errors.TopicDeletionDisabledError("Topic deletion is disabled.")
        self._metadata.delete_topic(name)
        self._metadata.wait_until(lambda: self._metadata.get(name) is None, self._wait_s)
        log.info("deleted topic %s", name)

    def _wait_leaders(self, name: str, partitions) -> None:
        # best effort: on timeout the topic exists and Metadata reports LEADER_NOT_AVAILABLE until elected
        parts = list(partitions)
        self._metadata.wait_until(lambda: self._metadata.leaders_known(name, parts), self._wait_s)
