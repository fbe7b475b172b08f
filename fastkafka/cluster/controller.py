"""The controller: one broker, elected on ``/controller``, that decides partition leadership.

Every broker runs a :class:`Controller`; kazoo's ``Election`` recipe makes exactly one of them
active. The active one bumps ``/controller_epoch`` and then *reconciles* — compares what the
znodes say with what they should say and writes the difference — whenever the cluster changes
(a broker comes or goes, a topic or partition is added, a deletion is requested) and once a
second as a safety net. Reconciling from scratch, rather than acting on individual events, makes
a new controller's take-over the same code as a steady-state change and makes missed or
repeated watch events harmless.

The rules per partition are :mod:`fastkafka.cluster.election`'s. The controller also

* treats a broker that asks for a controlled shutdown (an ephemeral
  ``/admin/controlled_shutdown/<id>``, see :class:`ControlledShutdown`) as not eligible: its
  partitions' leadership moves to another in-sync replica and it leaves every ISR, so it can
  stop without clients seeing more than a leader change;
* moves leadership back to the preferred replicas when a broker's share of partitions led by
  someone else exceeds ``leader.imbalance.per.broker.percentage``, checked every
  ``leader.imbalance.check.interval.seconds`` (``auto.leader.rebalance.enable``), and on
  request (:meth:`Controller.elect_leaders`, the ElectLeaders API);
* elects outside the ISR where ``unclean.leader.election.enable`` (topic, else broker) says so;
* on ``/admin/delete_topics/<t>`` deletes the topic's znodes, then the marker; brokers delete
  their logs when they see the topic vanish.

Every state write is a transaction that also checks ``/controller_epoch``'s version, so a
controller that lost its session without noticing yet (paused, partitioned) cannot overwrite
its successor's decisions.

Example (``zk_connect``: a ZooKeeper's ``host:port``, e.g. ``"127.0.0.1:2181"``)::

    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.cluster.metadata import ZkMetadata
    >>> from fastkafka.cluster.registration import BrokerRegistration
    >>> from fastkafka.cluster.session import cluster_id, connect, ensure_layout
    >>> client = connect(KafkaConfig({"zookeeper.connect": f"{zk_connect}/doc-controller"}))
    >>> ensure_layout(client); md = ZkMetadata(client, cluster_id(client)); md.start()
    >>> broker1 = BrokerRegistration(client, znodes.BrokerInfo(1, "127.0.0.1", 9092)); broker1.register()
    >>> c = Controller(client, broker_id=1, metadata=md); c.start()
    >>> md.wait_until(lambda: 1 in md.brokers(), 5)
    True
    >>> _ = md.create_topic("orders", 2)
    >>> md.wait_until(lambda: md.leaders_known("orders"), 10)      # the controller elected them
    True
    >>> c.active, c.epoch, md.leader("orders", 0), md.partition("orders", 1).isr
    (True, 1, 1, (1,))
    >>> c.stop(); md.stop(); broker1.deregister(); client.stop(); client.close()
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from fastkafka import errors
from fastkafka.config import ConfigException, KafkaConfig, LogConfig
from fastkafka.uuids import random_uuid
from fastkafka.config.definitions import (AUTO_LEADER_REBALANCE_ENABLE, LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
                                          LEADER_IMBALANCE_PER_BROKER_PERCENTAGE, UNCLEAN_LEADER_ELECTION_ENABLE)

from . import election, reassignment, znodes

__all__ = ["Controller"]

log = logging.getLogger("fastkafka.cluster.controller")

SAFETY_RECONCILE_S = 1.0


class Controller:
    """Thread-safe ``start``/``stop``; ``active`` and ``epoch`` describe this broker's role."""

    def __init__(self, client: KazooClient, broker_id: int, metadata, config: KafkaConfig | None = None):
        self.client = client
        self.config = config if config is not None else KafkaConfig({"broker.id": broker_id})
        self.broker_id = broker_id
        self.metadata = metadata
        self.active = False
        self.epoch = 0
        self._epoch_version = -1
        self._election = client.Election(znodes.CONTROLLER, znodes.ControllerInfo(broker_id).encode().decode())
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._lost = threading.Event()
        self._leading: object | None = None   # identifies the current term's watch
        self._mutex = threading.Lock()         # one decision at a time: reconcile or a requested election
        self._thread = threading.Thread(target=self._run, name=f"fastkafka-controller-{broker_id}", daemon=True)

    def start(self) -> None:
        self.metadata.add_listener(self._wake.set)
        self.client.add_listener(self._on_state)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopped.set()
        self._wake.set()
        self._election.cancel()
        self.client.remove_listener(self._on_state)
        self.metadata.remove_listener(self._wake.set)
        self._thread.join(timeout)

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:  # our election node is gone with the session: step down
            self._lost.set()
            self._wake.set()

    # --- election ---
    def _run(self) -> None:
        while not self._stopped.is_set():
            if not self.client.connected:
                self._stopped.wait(0.1)
                continue
            self._lost.clear()
            try:
                self._election.run(self._lead)
            except Exception:  # connection trouble while contending: contend again
                if not self._stopped.is_set():
                    log.exception("controller election failed; retrying")
                    self._stopped.wait(0.5)

    def _lead(self) -> None:
        if self._stopped.is_set() or self._lost.is_set():
            return
        self._bump_epoch()
        self.active = True
        log.info("broker %d is the controller (epoch %d)", self.broker_id, self.epoch)
        me = object()
        self._leading = me
        # deletion markers and controlled shutdowns are inputs the shared metadata cache does not watch
        for path in (znodes.DELETE_TOPICS, znodes.CONTROLLED_SHUTDOWN):
            self.client.ChildrenWatch(path, lambda _c: self._wake.set() or self._leading is me)
        rebalance_s = self.config[LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS]
        next_rebalance = time.monotonic() + rebalance_s
        try:
            self._wake.set()
            while not (self._stopped.is_set() or self._lost.is_set()):
                self._wake.wait(SAFETY_RECONCILE_S)
                self._wake.clear()
                if self._stopped.is_set() or self._lost.is_set():
                    break
                try:
                    self.reconcile()
                    if self.config[AUTO_LEADER_REBALANCE_ENABLE] and time.monotonic() >= next_rebalance:
                        next_rebalance = time.monotonic() + rebalance_s
                        self._rebalance_leaders()
                except KazooException as e:
                    log.warning("controller: ZooKeeper error while reconciling (%s); will retry", e)
                    self._stopped.wait(0.2)
                except Exception:
                    log.exception("controller: reconcile failed")
                    self._stopped.wait(0.2)
        finally:
            self._leading = None
            self.active = False
            log.info("broker %d is no longer the controller", self.broker_id)

    def _bump_epoch(self) -> None:
        c = self.client
        while True:
            try:
                data, stat = c.get(znodes.CONTROLLER_EPOCH)
            except NoNodeError:
                try:
                    c.create(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(1))
                    self.epoch, self._epoch_version = 1, 0
                    return
                except NodeExistsError:
                    continue
            epoch = znodes.decode_controller_epoch(data) + 1
            try:
                new = c.set(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(epoch), version=stat.version)
            except KazooException:
                continue
            self.epoch, self._epoch_version = epoch, new.version
            return

    # --- reconciling ---
    def reconcile(self) -> None:
        with self._mutex:
            live, eligible = self._brokers()
            for topic in self.client.get_children(znodes.DELETE_TOPICS):
                self._delete_topic(topic)
            for topic, assignment, version in self._assignments():
                if assignment.topic_id is None and self._give_topic_id(topic, assignment, version):
                    self._wake.set()    # the znode moved on: the next pass goes on from it
                    continue
                if assignment.adding or assignment.removing:
                    self._complete_reassignments(topic, assignment, version, eligible)
                for p, replicas in sorted(assignment.partitions.items()):
                    read = self._state(topic, p)
                    if read is None:
                        self._create_state(topic, p, election.initial(replicas, live, eligible, self.epoch))
                        continue
                    state, version = read
                    # the topic's config is read only when an election out of the ISR is the question
                    unclean = (state.leader not in live and not any(r in eligible for r in state.isr)
                               and self._unclean_enabled(topic))
                    new = election.reconciled(state, replicas, live, eligible, unclean, self.epoch)
                    if new is None:
                        continue
                    if unclean and new.leader != znodes.NO_LEADER:
                        log.warning("controller: unclean election of %d for %s-%d (ISR was %s): records "
                                    "only the ISR held are lost", new.leader, topic, p, list(state.isr))
                    self._write_state(topic, p, new, version)

    def _give_topic_id(self, topic: str, a: znodes.TopicAssignment, version: int) -> bool:
        """A topic written without an id (by Kafka before 2.8, or its old tools) gets one, as
        Kafka's controller gives them when it takes over; a concurrent change of the znode
        wins and the next pass tries again."""
        path = znodes.topic_path(topic)
        with_id = replace(a, topic_id=random_uuid())
        return self._commit(lambda t: t.set_data(path, with_id.encode(), version=version), f"{topic} topic id", None)

    def _brokers(self) -> tuple[set[int], set[int]]:
        """(live brokers, those of them not in controlled shutdown)."""
        c = self.client
        live = {int(b) for b in c.get_children(znodes.BROKER_IDS) if b.isdigit()}
        leaving = {int(b) for b in c.get_children(znodes.CONTROLLED_SHUTDOWN) if b.isdigit()}
        return live, live - leaving

    def _assignments(self, topics=None):
        """``(topic, TopicAssignment, znode version)`` for every topic (or those named), read from ZooKeeper."""
        c = self.client
        for topic in c.get_children(znodes.TOPICS) if topics is None else topics:
            try:
                data, stat = c.get(znodes.topic_path(topic))
                yield topic, znodes.TopicAssignment.decode(topic, data), stat.version
            except NoNodeError:
                continue
            except znodes.ZnodeDataError as e:
                log.warning("controller: skipping topic %s: %s", topic, e)

    def _state(self, topic: str, partition: int) -> tuple[znodes.PartitionState, int] | None:
        try:
            data, stat = self.client.get(znodes.state_path(topic, partition))
        except NoNodeError:
            return None
        return znodes.PartitionState.decode(data, znodes.state_path(topic, partition)), stat.version

    def _unclean_enabled(self, topic: str) -> bool:
        info = self.metadata.get(topic)
        try:
            return LogConfig.from_broker(self.config, info.configs if info else None).unclean_leader_election_enable
        except ConfigException:
            return self.config[UNCLEAN_LEADER_ELECTION_ENABLE]

    def _create_state(self, topic: str, partition: int, new: znodes.PartitionState) -> bool:
        path = znodes.state_path(topic, partition)
        self.client.ensure_path(znodes.partition_path(topic, partition))
        return self._commit(lambda t: t.create(path, new.encode()), f"{topic}-{partition}", new)

    def _write_state(self, topic: str, partition: int, new: znodes.PartitionState, version: int) -> bool:
        path = znodes.state_path(topic, partition)
        return self._commit(lambda t: t.set_data(path, new.encode(), version=version), f"{topic}-{partition}", new)

    # --- elections on request (ElectLeaders) and by policy (auto.leader.rebalance.enable) ---
    def elect_leaders(self, election_type: int, partitions=None) -> dict[tuple[str, int], object]:
        """Run a preferred (0) or unclean (1) election for ``partitions`` (``(topic, partition)``
        pairs; None: every partition). Returns per partition the new leader's id, or the Kafka
        error that kept it from being elected (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
        ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER). Asked for
        every partition anywhere but on the controller, raises NOT_CONTROLLER."""
        if not self.active:
            if partitions is None:
                raise election.not_controller()
            return {tp: election.not_controller()
                    for tp in partitions}
        with self._mutex:
            live, eligible = self._brokers()
            assignments = {t: a.partitions for t, a, _ in self._assignments()}
            wanted = partitions if partitions is not None else [
                (t, p) for t, a in assignments.items() for p in a]
            out: dict[tuple[str, int], object] = {}
            for tp in wanted:
                replicas = assignments.get(tp[0], {}).get(tp[1])
                read = self._state(*tp) if replicas else None
                if read is None:
                    out[tp] = election.no_such_partition()
                    continue
                state, version = read
                try:
                    if election_type == election.UNCLEAN:
                        new = election.unclean(state, replicas, live, eligible, self.epoch)
                    else:
                        new = election.preferred(state, replicas, eligible, self.epoch)
                except errors.KafkaError as e:
                    out[tp] = e
                    continue
                if self._write_state(*tp, new, version):
                    out[tp] = new.leader
                else:
                    out[tp] = errors.NotControllerError("The election lost a race with another state change; "
                                                        "retry.")
            return out

    def _rebalance_leaders(self) -> None:
        """Kafka's auto leader rebalance: per preferred broker, elect it back on its partitions
        when more than ``leader.imbalance.per.broker.percentage`` of them are led by others."""
        limit = self.config[LEADER_IMBALANCE_PER_BROKER_PERCENTAGE] / 100
        with self._mutex:
            _, eligible = self._brokers()
            by_preferred: dict[int, list] = {}
            for topic, assignment, _ in self._assignments():
                for p, replicas in assignment.partitions.items():
                    by_preferred.setdefault(replicas[0], []).append((topic, p))
            wanted = []
            for broker, tps in by_preferred.items():
                states = {tp: self.metadata.state(*tp) for tp in tps}
                away = [tp for tp, st in states.items() if st is not None and st.leader != broker]
                if len(away) / len(tps) > limit and broker in eligible:
                    wanted += away
        if wanted:
            moved = {tp: r for tp, r in self.elect_leaders(election.PREFERRED, wanted).items() if isinstance(r, int)}
            if moved:
                log.info("controller: leaders moved back to their preferred replicas: %s",
                         ", ".join(f"{t}-{p}" for t, p in sorted(moved)))

    # --- partition reassignment (AlterPartitionReassignments, ListPartitionReassignments) ---
    def alter_reassignments(self, wanted) -> dict[tuple[str, int], errors.KafkaError | None]:
        """Start (a replica tuple) or cancel (None) the reassignment of each ``(topic, partition)``
        in ``wanted``; per partition None or the Kafka error that refused it."""
        if not self.active:
            return {tp: election.not_controller()
                    for tp in wanted}
        out: dict[tuple[str, int], errors.KafkaError | None] = {}
        by_topic: dict[str, dict[int, tuple[int, ...] | None]] = {}
        for (t, p), target in wanted.items():
            by_topic.setdefault(t, {})[p] = target
        with self._mutex:
            live, _ = self._brokers()
            for topic, changes in by_topic.items():
                out.update(self._alter_topic(topic, changes, live))
        self._wake.set()
        return out

    def _alter_topic(self, topic, changes, live) -> dict:
        out: dict[tuple[str, int], errors.KafkaError | None] = {}
        for _ in range(5):       # a concurrent change of the topic znode: start over from it
            found = list(self._assignments([topic]))
            if not found:
                return {(topic, p): election.no_such_partition()
                        for p in changes}
            _, a, version = found[0]
            for p, target in changes.items():
                try:
                    if p not in a.partitions:
                        raise election.no_such_partition()
                    if target is None:
                        a = reassignment.cancel(a, p)
                    elif not set(target) <= live:
                        raise errors.InvalidReplicaAssignmentError(
                            f"The proposed replicas {list(target)} include brokers that are not alive.")
                    else:
                        a = reassignment.start(a, p, tuple(target))
                    out[(topic, p)] = None
                except errors.KafkaError as e:
                    out[(topic, p)] = e
            path = znodes.topic_path(topic)
            if self._commit(lambda t, a=a, v=version: t.set_data(path, a.encode(), version=v),
                            f"{topic} reassignment", None):
                return out
            if self._lost.is_set():
                break
        return {(topic, p): errors.NotControllerError("The reassignment lost a race; retry.") for p in changes}

    def list_reassignments(self, wanted=None) -> dict[tuple[str, int], tuple[tuple[int, ...], ...]]:
        """``{(topic, partition): (replicas, adding, removing)}`` of the reassignments under way
        (of ``wanted`` partitions, None: all). Raises NOT_CONTROLLER on any other broker."""
        if not self.active:
            raise election.not_controller()
        topics = None if wanted is None else sorted({t for t, _ in wanted})
        out = {}
        for topic, a, _ in self._assignments(topics):
            for p in sorted(set(a.adding) | set(a.removing)):
                if wanted is None or (topic, p) in wanted:
                    out[(topic, p)] = (a.partitions[p], a.adding.get(p, ()), a.removing.get(p, ()))
        return out

    def _complete_reassignments(self, topic, a, version, eligible) -> None:
        for p in sorted(set(a.adding) | set(a.removing)):
            read = self._state(topic, p)
            done = read and reassignment.completed(a, p, read[0], eligible, self.epoch)
            if not done:
                continue
            new_a, new_state = done
            tpath, spath = znodes.topic_path(topic), znodes.state_path(topic, p)

            def ops(t, new_a=new_a, new_state=new_state, sv=read[1]):
                t.set_data(tpath, new_a.encode(), version=version)
                t.set_data(spath, new_state.encode(), version=sv)
            if self._commit(ops, f"{topic}-{p} reassignment to {list(new_a.partitions[p])}", new_state):
                self._wake.set()    # one completion per topic and pass: the znode version moved
            return

    def _commit(self, op, what: str, new: znodes.PartitionState | None) -> bool:
        t = self.client.transaction()
        t.check(znodes.CONTROLLER_EPOCH, self._epoch_version)
        op(t)
        results = t.commit()
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            # a newer controller (epoch check) or a concurrent write (version): the next pass re-reads
            log.info("controller: state of %s not written (%s)", what, type(failed[0]).__name__)
            self._wake.set()
            if isinstance(results[0], BadVersionError):
                self._lost.set()  # /controller_epoch moved on: someone else controls the cluster
            return False
        if new is None:
            log.info("controller: %s written", what)
        else:
            log.info("controller: %s leader %d (epoch %d, isr %s)", what, new.leader, new.leader_epoch, list(new.isr))
        return True

    def _delete_topic(self, topic: str) -> None:
        c = self.client
        try:
            c.delete(znodes.topic_path(topic), recursive=True)
        except NoNodeError:
            pass
        try:
            c.delete(znodes.config_topic_path(topic))
        except NoNodeError:
            pass
        try:
            c.delete(znodes.delete_topic_path(topic))
        except NoNodeError:
            pass
        log.info("controller: deleted topic %s", topic)
