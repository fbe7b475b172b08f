"""Replication on one broker (cluster mode): which local replicas lead and which follow, the
leaders' ISR upkeep, the followers' fetchers, and produce requests waiting for acks=all.

Roles come from the controller's state znodes (the metadata cache): a replica whose broker is
the partition's leader *becomes leader* in that epoch (the leader-epoch cache records where the
epoch starts; followers' positions start unknown); one named in the replica list *becomes
follower* of the leader, handed to the fetcher of that leader (which truncates by epoch, then
copies). This is Kafka's LeaderAndIsr handling with the state znode as the message: every
broker watches the znodes the controller writes, so there is no separate controller-to-broker
channel to keep consistent with them.

A leader keeps its ISR (``replica.lag.time.max.ms``) with conditional writes of the state znode
(Kafka's ZooKeeper mode), checked every half lag period and whenever an out-of-sync follower
fetches. When a high watermark moves, produce requests waiting for acks=all and consumers'
fetches waiting for data are woken.

Thread-safe. Example (the metadata cache as the controller left it: broker 1 leads in epoch 2)::

    >>> import tempfile
    >>> from types import SimpleNamespace as NS
    >>> from fastkafka.cluster.metadata import PartitionView
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.log import Log
    >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(tmpdir.name + "/orders-0")
    >>> md = NS(partition=lambda t, p: PartitionView(1, 2, (1, 2, 3), (1, 2, 3)), state_version=lambda t, p: 0,
    ...         add_listener=lambda cb: None, remove_listener=lambda cb: None, brokers=lambda: {})
    >>> topics = NS(local_logs=lambda: {("orders", 0): log}, local_log=lambda t, p: log)
    >>> rm = ReplicaManager(KafkaConfig({"broker.id": 1}), topics, md, Purgatory("fetch")); rm.start()
    >>> rm.get("orders", 0), log.leader_epochs.entries(), log.high_watermark_follows_end
    (Partition(orders-0 leader epoch=2 isr=[1, 2, 3]), [(2, 0)], False)
    >>> rm.stop(); tmpdir.cleanup()
"""
from __future__ import annotations

import logging
import threading
import zlib

from kazoo.exceptions import KazooException

from fastkafka.cluster import znodes
from fastkafka.log.scheduler import wall_clock_ms
from fastkafka.config.definitions import BROKER_ID, NUM_REPLICA_FETCHERS, REPLICA_LAG_TIME_MAX_MS

from .listener_security import inter_broker_security
from .partition import FOLLOWER, LEADER, Partition
from .purgatory import Purgatory
from .replica_fetcher import ReplicaFetcher
from .replication_quota import FOLLOWER_RATE, LEADER_RATE, ReplicationQuota

__all__ = ["ReplicaManager"]

log = logging.getLogger("fastkafka.server.replication")


class ReplicaManager:
    """Owns a :class:`Partition` per local log and the fetcher threads."""

    def __init__(self, config, topics, metadata, fetch_purgatory: Purgatory, metrics=None):
        self.config = config
        self.metrics = metrics      # BrokerMetrics (metrics.port) or None
        self.broker_id = config[BROKER_ID]
        self.topics = topics
        self.metadata = metadata
        self.fetch_purgatory = fetch_purgatory
        self.produce_purgatory = Purgatory("produce")
        self.delete_records_purgatory = Purgatory("delete-records")
        self._lag_ms = config[REPLICA_LAG_TIME_MAX_MS]
        self._fetchers_per_leader = config[NUM_REPLICA_FETCHERS]
        self._listener, self.security = inter_broker_security(config)   # how this broker reaches the others
        self._partitions: dict[tuple[str, int], Partition] = {}
        self.isr_shrinks = self.isr_expands = 0     # ISR changes this leader wrote (metrics)
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        # replication throttles (KIP-73): what this broker sends as a leader, fetches as a follower
        self.leader_quota = ReplicationQuota.from_config(config, LEADER_RATE)
        self.follower_quota = ReplicationQuota.from_config(config, FOLLOWER_RATE)
        self._lock = threading.Lock()
        self._leaving = False      # controlled shutdown: lead until the controller moves it, follow nothing
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"fastkafka-replicas-{self.broker_id}", daemon=True)

    # --- lifecycle ---
    def start(self) -> None:
        self.metadata.add_listener(self._wake.set)
        self._reconcile()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        self.metadata.remove_listener(self._wake.set)
        self._thread.join(10)
        with self._lock:
            fetchers, self._fetchers = list(self._fetchers.values()), {}
        for f in fetchers:
            f.stop()
        self.produce_purgatory.shutdown()
        self.delete_records_purgatory.shutdown()

    def reconfigure(self, config) -> None:
        """The dynamic broker configs changed: take their replication throttle rates."""
        self.leader_quota.set_bound(config[LEADER_RATE])
        self.follower_quota.set_bound(config[FOLLOWER_RATE])

    def leave(self) -> None:
        """Controlled shutdown: stop following, so that no leader re-admits this broker to an ISR
        the controller is taking it out of; leaderships stay until the controller moves them."""
        self._leaving = True
        self._reconcile()

    # --- what handlers ask ---
    def get(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def partitions(self) -> list[Partition]:
        """This broker's replicas, a snapshot."""
        return list(self._partitions.values())

    def follower_fetched(self, topic: str, partition: int, replica_id: int, fetch_offset: int,
                         log_start_offset: int = -1) -> None:
        """A follower's fetch (handler thread): its position moves the high watermark, its log
        start offset (Fetch v5+) the low watermark that DeleteRecords waits for."""
        p = self._partitions.get((topic, partition))
        if p is None:
            return
        if p.follower_fetched(replica_id, fetch_offset, wall_clock_ms()):
            self.high_watermark_moved(topic, partition)
        if log_start_offset >= 0 and p.follower_log_start(replica_id, log_start_offset):
            self.delete_records_purgatory.check((topic, partition))
        if replica_id not in p.isr and p.role == LEADER:
            self._wake.set()     # it may be back in sync: the manager's thread writes the ISR

    def holds_back(self, topic: str, partition: int, replica_id: int) -> bool:
        """Does the leader throttle keep this throttled partition's data from follower
        ``replica_id`` now? Only a follower out of the ISR, and only while the rate is over."""
        p = self._partitions.get((topic, partition))
        return p is not None and replica_id not in p.isr and self.leader_quota.exceeded()

    def low_watermark(self, part: Partition) -> int:
        """``part``'s low watermark over the live brokers (see :meth:`Partition.low_watermark`)."""
        return part.low_watermark(self.metadata.brokers())

    def high_watermark_moved(self, topic: str, partition: int) -> None:
        key = (topic, partition)
        self.produce_purgatory.check(key)
        self.fetch_purgatory.check(key)

    # --- the manager's thread ---
    def _run(self) -> None:
        period = max(0.05, min(self._lag_ms / 2000, 1.0))
        while not self._stopped.is_set():
            self._wake.wait(period)
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                self._reconcile()
                self._maintain_isr()
            except KazooException as e:
                log.warning("replica manager: ZooKeeper error (%s); will retry", e)
            except Exception:
                log.exception("replica manager: pass failed")

    def _reconcile(self) -> None:
        """Bring every local replica's role in line with the state znodes."""
        md, me, now = self.metadata, self.broker_id, wall_clock_ms()
        logs = self.topics.local_logs()
        led = []
        with self._lock:
            parts = dict(self._partitions)
            for tp in [tp for tp in parts if tp not in logs]:
                del parts[tp]
                self._unfollow(tp)
            for tp, lg in logs.items():
                p = parts.get(tp)
                if p is None or p.log is not lg:
                    p = parts[tp] = Partition(tp[0], tp[1], me, lg)
                view = md.partition(*tp)
                if view is None:
                    continue
                version = md.state_version(*tp)
                if view.leader == me:
                    if (p.role != LEADER or p.leader_epoch != view.leader_epoch or version > p.zk_version
                            or p.replicas != view.replicas):      # a reassignment adds followers
                        was_leader = p.role == LEADER
                        # Kafka's order: the fetcher lets go first (waiting out an answer it is
                        # applying), so no copied batch lands after the new epoch's start or
                        # beside a produced retry of the same batch
                        self._unfollow(tp)
                        p.become_leader(view.leader_epoch, view.replicas, view.isr, version, now)
                        led.append(tp)
                        if not was_leader:
                            log.info("%s-%d: leader in epoch %d, isr %s", tp[0], tp[1], view.leader_epoch,
                                     list(view.isr))
                elif view.leader >= 0 and me in view.replicas and not self._leaving:
                    if p.become_follower(view.leader, view.leader_epoch, view.replicas, view.isr, version):
                        self._unfollow(tp)
                        log.info("%s-%d: following %d in epoch %d", tp[0], tp[1], view.leader, view.leader_epoch)
                    self._fetcher_for(view.leader, tp).add(tp[0], tp[1], view.leader_epoch)
                elif p.role in (LEADER, FOLLOWER):
                    p.become_offline()
                    self._unfollow(tp)
            self._partitions = parts
        for tp, p in parts.items():
            if p.role != LEADER:   # requests waiting on a leadership this broker lost answer now
                self.produce_purgatory.check(tp)
            # a lost leadership answers, a dead follower no longer holds the low watermark back
            self.delete_records_purgatory.check(tp)
        for tp in led:   # a new ISR (the controller dropped a dead follower) may have moved the high watermark
            self.high_watermark_moved(*tp)

    def _fetcher_for(self, leader: int, tp) -> ReplicaFetcher:
        index = zlib.crc32(f"{tp[0]}-{tp[1]}".encode()) % self._fetchers_per_leader
        f = self._fetchers.get((leader, index))
        if f is None:
            f = self._fetchers[(leader, index)] = ReplicaFetcher(
                self.broker_id, leader, lambda: self.address(leader), self.topics.local_log, self.config,
                index=index, security=self.security, quota=self.follower_quota, metrics=self.metrics)
            f.start()
        return f

    def _unfollow(self, tp) -> None:
        for f in self._fetchers.values():
            f.remove(*tp)

    def address(self, broker_id: int) -> tuple[str, int] | None:
        """A live broker's address on the inter-broker listener (None: not registered)."""
        info = self.metadata.brokers().get(broker_id)
        return None if info is None else info.endpoint(self._listener)

    def _maintain_isr(self) -> None:
        now = wall_clock_ms()
        live = self.metadata.brokers()
        for tp, p in list(self._partitions.items()):
            if p.role != LEADER:
                continue
            new = p.isr_to_shrink(now, self._lag_ms) or p.isr_to_expand(live)
            if new is None:
                continue
            st = self.metadata.state(*tp)
            if st is None or st.leader != self.broker_id or st.leader_epoch != p.leader_epoch:
                continue     # the controller moved on: the next reconcile follows it
            version = self.metadata.update_isr(
                tp[0], tp[1], znodes.PartitionState(self.broker_id, p.leader_epoch, new, st.controller_epoch),
                p.zk_version)
            if version is None:
                log.info("%s-%d: ISR change to %s lost to a concurrent write; re-reading", tp[0], tp[1], list(new))
                self._wake.set()
                continue
            log.info("%s-%d: ISR %s -> %s", tp[0], tp[1], list(p.isr), list(new))
            if len(new) < len(p.isr):
                self.isr_shrinks += 1
            else:
                self.isr_expands += 1
            p.isr_written(new, version)
            self.high_watermark_moved(*tp)
