"""Topic management policy: what creating, growing and deleting a topic means for this broker.

The registry (:mod:`fastkafka.cluster.embedded`) records *that* a topic exists; the log
manager holds its partitions' data. This module keeps the two in step, applies Kafka's rules
(topic names, partition counts, replication factor on one broker, topic config names and
values) and logs one line per change. Lookups on the produce/fetch path are one dict access on
an immutable snapshot, no lock.

Example::

    >>> import tempfile
    >>> from fastkafka.log import LogManager
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> cfg = KafkaConfig({"log.dirs": tmpdir.name})
    >>> logs = LogManager(cfg)
    >>> tm = TopicManager(cfg, logs, EmbeddedMetadata(tmpdir.name))
    >>> tm.create("orders", num_partitions=3, replication_factor=-1, configs={"retention.ms": "60000"})
    TopicInfo(name='orders', partitions=3, configs=mappingproxy({'retention.ms': '60000'}))
    >>> tm.log("orders", 2), tm.log_config("orders").retention_ms
    (Log(orders-2, start=0, end=0), 60000)
    >>> tm.log("orders", 3)
    Traceback (most recent call last):
    fastkafka.errors.UnknownTopicOrPartitionError: orders-3 is not on this broker
    >>> logs.shutdown(); tmpdir.cleanup()
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Mapping

from fastkafka import errors
from fastkafka.cluster.embedded import EmbeddedMetadata, TopicInfo, validate_topic_name  # noqa: F401 (the example)
from fastkafka.config import ConfigException, KafkaConfig, LogConfig
from fastkafka.config.definitions import (AUTO_CREATE_TOPICS_ENABLE, BROKER_ID, DEFAULT_REPLICATION_FACTOR,
                                          DELETE_TOPIC_ENABLE, NUM_PARTITIONS)

if TYPE_CHECKING:
    from fastkafka.log import Log

    from .services import Metadata

__all__ = ["TopicManager", "INTERNAL_TOPICS"]

log = logging.getLogger("fastkafka.server")

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


EMBEDDED_LEADER_EPOCH = 0


class TopicManager:
    """Thread-safe: changes are serialised by one lock; reads use snapshots."""

    def __init__(self, config: KafkaConfig, logs, metadata: Metadata, purgatory=None):
        self.config = config
        self._logs = logs
        self._metadata = metadata
        self._purgatory = purgatory
        self._lock = threading.RLock()
        self._partitions: dict[tuple[str, int], Log] = {}   # (topic, partition) -> Log, copy-on-write
        self._log_configs: dict[str, LogConfig] = {}
        if purgatory is not None:  # every append wakes the fetches waiting on that partition
            check = purgatory.check
            logs.on_append(lambda lg: check((lg.topic, lg.partition)))

    # --- reads ---
    def log(self, topic: str, partition: int):
        """The partition's Log; UnknownTopicOrPartitionError if there is none."""
        lg = self._partitions.get((topic, partition))
        if lg is None:
            raise errors.UnknownTopicOrPartitionError(f"{topic}-{partition} is not on this broker")
        return lg

    def local_log(self, topic: str, partition: int):
        """This broker's replica of the partition, whatever its role (the replica fetcher's
        view; on one broker every log), or None."""
        return self._partitions.get((topic, partition))

    def live_brokers(self):
        """Brokers new replicas may be placed on: this one (cluster mode: every registered broker)."""
        return (self.config[BROKER_ID],)

    def get(self, topic: str) -> TopicInfo | None:
        return self._metadata.get(topic)

    def name_of(self, topic_id) -> str | None:
        """The name of the topic with this id (KIP-516), None if no topic has it."""
        return self._metadata.topic_name(topic_id)

    def all(self) -> Mapping[str, TopicInfo]:
        return self._metadata.topics()

    def log_config(self, topic: str) -> LogConfig:
        cfg = self._log_configs.get(topic)
        if cfg is None:
            info = self._metadata.get(topic)
            if info is None:
                raise errors.UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
            cfg = self._config_of(info)
        return cfg

    def _config_of(self, info: TopicInfo) -> LogConfig:
        """The topic's LogConfig. Overrides that do not parse (written by another tool straight
        into the registry) are logged, and the broker defaults used, rather than failing."""
        try:
            return LogConfig.from_broker(self.config, info.configs)
        except ConfigException as e:
            log.warning("topic %s: ignoring its configs (%s); using the broker defaults", info.name, e)
            return LogConfig.from_broker(self.config)

    # --- startup ---
    def load(self) -> None:
        """Open the log of every partition the registry lists."""
        with self._lock:
            parts = dict(self._partitions)
            for info in self._metadata.topics().values():
                cfg = self._config_of(info)
                self._log_configs[info.name] = cfg
                for p in range(info.partitions):
                    parts[(info.name, p)] = self._open(info, p, cfg)
            self._partitions = parts

    def _open(self, info: TopicInfo, partition: int, cfg: LogConfig):
        lg = self._logs.get_or_create_log(info.name, partition, cfg, info.topic_id)
        # one broker leads every partition in epoch 0 for ever: record it, so OffsetForLeaderEpoch
        # (KIP-320 consumers validating their position) has an answer
        lg.leader_epochs.assign(EMBEDDED_LEADER_EPOCH, lg.log_start_offset)
        return lg

    # --- changes ---
    def validate_configs(self, configs: Mapping[str, str | None]) -> LogConfig:
        """Parse topic-level overrides with Kafka's names; InvalidConfigError names the bad one."""
        try:
            return LogConfig.from_broker(self.config, {k: v for k, v in configs.items() if v is not None})
        except ConfigException as e:
            raise errors.InvalidConfigError(str(e)) from None

    def validate_create(self, name: str, num_partitions: int, replication_factor: int,
                        configs: Mapping[str, str | None], assignments=()) -> tuple[int, LogConfig]:
        """Check a CreateTopics entry; returns (partitions, LogConfig) or raises the Kafka error."""
        validate_topic_name(name)
        if self._metadata.get(name) is not None:
            raise errors.TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise errors.InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set.")
            live = self.live_brokers()
            for i, a in enumerate(sorted(assignments, key=lambda a: a.partition_index)):
                if a.partition_index != i:
                    raise errors.InvalidReplicaAssignmentError("partitions must be numbered 0..n-1")
                ids = list(a.broker_ids)
                if not ids or len(set(ids)) != len(ids) or any(b not in live for b in ids):
                    raise errors.InvalidReplicaAssignmentError(
                        f"replicas {ids} must be distinct live brokers (live: {sorted(live)})")
            num_partitions = len(assignments)
        else:
            if num_partitions == -1:
                num_partitions = self.config[NUM_PARTITIONS]
            if replication_factor == -1:
                replication_factor = self.config[DEFAULT_REPLICATION_FACTOR]
            if num_partitions <= 0:
                raise errors.InvalidPartitionsError("Number of partitions must be larger than 0.")
            if replication_factor <= 0:
                raise errors.InvalidReplicationFactorError("Replication factor must be larger than 0.")
            if replication_factor > len(self.live_brokers()):
                raise errors.InvalidReplicationFactorError(
                    f"Replication factor: {replication_factor} "
                    f"larger than available brokers: {len(self.live_brokers())}.")
        return num_partitions, self.validate_configs(configs)

    def create(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
               configs: Mapping[str, str | None] | None = None, assignments=()) -> TopicInfo:
        """Create a topic and its partition logs (raises the Kafka error on bad input)."""
        overrides = {k: v for k, v in (configs or {}).items() if v is not None}
        with self._lock:
            n, cfg = self.validate_create(name, num_partitions, replication_factor, overrides, assignments)
            info = self._metadata.create_topic(name, n, overrides)
            self._log_configs[name] = cfg
            parts = dict(self._partitions)
            for p in range(n):
                parts[(name, p)] = self._open(info, p, cfg)
            self._partitions = parts
        log.info("created topic %s with %d partition(s)%s", name, n,
                 f" and configs {overrides}" if overrides else "")
        return info

    def auto_create(self, name: str) -> TopicInfo | None:
        """Create ``name`` with the broker defaults if it is still missing; None if not allowed."""
        if not self.config[AUTO_CREATE_TOPICS_ENABLE] or name in INTERNAL_TOPICS:
            return None
        try:
            return self.create(name)
        except errors.TopicAlreadyExistsError:
            return self._metadata.get(name)

    def delete(self, name: str) -> None:
        if not self.config[DELETE_TOPIC_ENABLE]:
            raise errors.TopicDeletionDisabledError("Topic deletion is disabled.")
        with self._lock:
            info = self._metadata.delete_topic(name)
            parts = dict(self._partitions)
            for p in range(info.partitions):
                parts.pop((name, p), None)
            self._partitions = parts
            self._log_configs.pop(name, None)
            for p in range(info.partitions):
                self._logs.delete_log(name, p)
        log.info("deleted topic %s", name)

    def alter_configs(self, name: str, configs: Mapping[str, str], validate_only: bool = False) -> None:
        """Replace the topic's overrides with ``configs`` (Kafka's topic-level names); they take
        effect on its open logs at once, as Kafka's dynamic topic configs do."""
        with self._lock:
            if self._metadata.get(name) is None:
                raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            cfg = self.validate_configs(configs)
            if validate_only:
                return
            self._metadata.set_configs(name, configs)
            self._apply_configs(name, cfg)
        log.info("topic %s: configs now %s", name, dict(configs) or "the broker defaults")

    def reconfigure(self, config: KafkaConfig) -> None:
        """New broker defaults (dynamic broker configs): every topic's logs take them at once,
        except where the topic overrides them."""
        with self._lock:
            self.config = config
            for name, info in self._metadata.topics().items():
                if name in self._log_configs:
                    self._apply_configs(name, self._config_of(info))

    def _apply_configs(self, name: str, cfg: LogConfig) -> None:
        self._log_configs[name] = cfg
        for (topic, _), lg in self._partitions.items():
            if topic == name:
                lg.config = cfg

    def validate_add_partitions(self, name: str, count: int) -> TopicInfo:
        """Check a CreatePartitions entry; returns the topic's current TopicInfo or raises the Kafka error."""
        info = self._metadata.get(name)
        if info is None:
            raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if count <= info.partitions:
            raise errors.InvalidPartitionsError(
                f"Topic currently has {info.partitions} partitions, which is higher than or equal "
                f"to the requested {count}.")
        return info

    def add_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        """Grow ``name`` to ``count`` partitions (InvalidPartitionsError unless it grows)."""
        with self._lock:
            info = self.validate_add_partitions(name, count)
            if validate_only:
                return
            grown = self._metadata.set_partitions(name, count)
            cfg = self.log_config(name)
            parts = dict(self._partitions)
            for p in range(info.partitions, count):
                parts[(name, p)] = self._open(grown, p, cfg)
            self._partitions = parts
        log.info("topic %s now has %d partitions (was %d)", name, count, info.partitions)
