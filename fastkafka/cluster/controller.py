"""The controller: one broker, elected on ``/controller``, that decides partition leadership.

Every broker runs a :class:`Controller`; kazoo's ``Election`` recipe makes exactly one of them
active. The active one bumps ``/controller_epoch`` and then *reconciles* — compares what the
znodes say with what they should say and writes the difference — whenever the cluster changes
(a broker comes or goes, a topic or partition is added, a deletion is requested) and once a
second as a safety net. Reconciling from scratch, rather than acting on individual events, makes
a new controller's take-over the same code as a steady-state change and makes missed or
repeated watch events harmless.

The rules, per partition:

* no state znode → leader = first live replica (the preferred one when it is up), epoch 0,
  ISR = the live replicas;
* a follower's broker died → it leaves the ISR at once (acks=all then waits for the others
  only), leader and epoch unchanged; the leader adds it back once it has caught up;
* leader dead → the first live replica that is in the ISR leads (epoch + 1); if none is, the
  partition goes offline (leader -1, epoch + 1) keeping its ISR, so it comes back with that
  broker: choosing a replica outside the ISR would silently lose data (no unclean election);
* ``/admin/delete_topics/<t>`` → delete the topic's znodes, then the marker; brokers delete
  their logs when they see the topic vanish.

Every state write is a transaction that also checks ``/controller_epoch``'s version, so a
controller that lost its session without noticing yet (paused, partitioned) cannot overwrite
its successor's decisions.

Example::

    >>> c = Controller(client, broker_id=1, metadata=md); c.start()   # doctest: +SKIP
    >>> c.active, c.epoch                                             # doctest: +SKIP
    (True, 4)
"""
from __future__ import annotations

import logging
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from . import znodes

__all__ = ["Controller"]

log = logging.getLogger("fastkafka.cluster.controller")

SAFETY_RECONCILE_S = 1.0


class Controller:
    """Thread-safe ``start``/``stop``; ``active`` and ``epoch`` describe this broker's role."""

    def __init__(self, client: KazooClient, broker_id: int, metadata):
        self.client = client
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
        # deletion markers are the one input the shared metadata cache does not watch
        self.client.ChildrenWatch(znodes.DELETE_TOPICS, lambda _c: self._wake.set() or self._leading is me)
        try:
            self._wake.set()
            while not (self._stopped.is_set() or self._lost.is_set()):
                self._wake.wait(SAFETY_RECONCILE_S)
                self._wake.clear()
                if self._stopped.is_set() or self._lost.is_set():
                    break
                try:
                    self.reconcile()
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
        c = self.client
        live = {int(b) for b in c.get_children(znodes.BROKER_IDS) if b.isdigit()}
        for topic in c.get_children(znodes.DELETE_TOPICS):
            self._delete_topic(topic)
        for topic in c.get_children(znodes.TOPICS):
            try:
                data, _ = c.get(znodes.topic_path(topic))
                assignment = znodes.TopicAssignment.decode(topic, data)
            except NoNodeError:
                continue
            except znodes.ZnodeDataError as e:
                log.warning("controller: skipping topic %s: %s", topic, e)
                continue
            for p, replicas in sorted(assignment.partitions.items()):
                self._elect(topic, p, replicas, live)

    def _elect(self, topic: str, partition: int, replicas: tuple[int, ...], live: set[int]) -> None:
        c = self.client
        path = znodes.state_path(topic, partition)
        try:
            data, stat = c.get(path)
            state = znodes.PartitionState.decode(data, path)
        except NoNodeError:
            stat = state = None
        if state is None:
            leader = next((r for r in replicas if r in live), znodes.NO_LEADER)
            isr = tuple(r for r in replicas if r in live) or replicas[:1]
            new = znodes.PartitionState(leader, 0, isr, self.epoch)
            c.ensure_path(znodes.partition_path(topic, partition))
            self._commit(lambda t: t.create(path, new.encode()), f"{topic}-{partition}", new)
            return
        if state.leader in live:
            isr = tuple(r for r in state.isr if r in live)
            if isr != state.isr and state.leader in isr:
                new = znodes.PartitionState(state.leader, state.leader_epoch, isr, self.epoch)
                self._commit(lambda t: t.set_data(path, new.encode(), version=stat.version),
                             f"{topic}-{partition}", new)
            return
        in_sync = tuple(r for r in replicas if r in state.isr and r in live)
        if in_sync:
            new = znodes.PartitionState(in_sync[0], state.leader_epoch + 1, in_sync, self.epoch)
        elif state.leader != znodes.NO_LEADER:
            new = znodes.PartitionState(znodes.NO_LEADER, state.leader_epoch + 1, state.isr, self.epoch)
        else:
            return  # offline, and none of its ISR is back yet
        self._commit(lambda t: t.set_data(path, new.encode(), version=stat.version), f"{topic}-{partition}", new)

    def _commit(self, op, what: str, new: znodes.PartitionState) -> None:
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
            return
        log.info("controller: %s leader %d (epoch %d, isr %s)", what, new.leader, new.leader_epoch, list(new.isr))

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
