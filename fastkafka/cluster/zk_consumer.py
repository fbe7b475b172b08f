"""The seeds' ZooKeeper consumer group: registration, the range rebalance, owners and offsets.

What a ``ConsumerConnector`` configured with ``zookeeper.connect`` needs besides fetching:

* **registration** — ``/consumers/<g>/ids/<consumer id>`` (ephemeral, ``hostname:uuid``) with the
  streams wanted per topic; re-created after a session expiry;
* **watches** (kazoo ``ChildrenWatch``/``DataWatch``) on the group's consumers, on the brokers and
  on each subscribed topic's assignment: any change schedules a rebalance;
* **the rebalance** of the seeds, per topic: sort the partitions, sort the consumer *threads*
  (``<consumer id>-<stream>``) of every consumer subscribed to it, give thread ``i`` a contiguous
  range — ``n // c`` partitions, one more for the first ``n % c`` threads; then release every
  owner znode this consumer holds and claim the new ones as ephemeral
  ``/consumers/<g>/owners/<t>/<p>``. A claim that finds the node taken (its previous owner has
  not released it yet) undoes this round and retries after ``rebalance.backoff.ms``, at most
  ``rebalance.max.retries`` times;
* **offsets** — ``/consumers/<g>/offsets/<t>/<p>`` holds the next offset to read, as text.

The owned partitions (``assignment``: ``{(topic, partition): thread id}``) are handed to
``on_assignment`` after every successful rebalance, so the connector can point its fetcher
and streams at them. Thread-safe.

Example (``zk_connect``: a ZooKeeper's ``host:port``, e.g. ``"127.0.0.1:2181"``)::

    >>> from fastkafka.config import KafkaConfig
    >>> connect = f"{zk_connect}/doc-zk-consumer"
    >>> admin = session.connect(KafkaConfig({"zookeeper.connect": connect}))
    >>> orders = znodes.TopicAssignment({0: (1,), 1: (1,), 2: (1,)})       # a topic of 3 partitions
    >>> _ = admin.create(znodes.topic_path("orders"), orders.encode(), makepath=True)
    >>> g = ZkConsumerGroup(connect, "billing", consumer_id="c1")
    >>> g.start({"orders": 2}); g.wait_for_generation(1, 10)   # 2 streams: threads c1-0 and c1-1
    True
    >>> g.assignment
    {('orders', 0): 'c1-0', ('orders', 1): 'c1-0', ('orders', 2): 'c1-1'}
    >>> g.commit({("orders", 0): 42}); g.committed("orders", 0), g.committed("orders", 1)
    (42, None)
    >>> g.shutdown(); admin.get_children("/consumers/billing/ids")   # gone: the others rebalance
    []
    >>> admin.stop(); admin.close()
"""
from __future__ import annotations

import logging
import socket
import threading
import uuid
from typing import Callable, Mapping

from kazoo.client import KazooState
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from . import session, znodes

__all__ = ["ZkConsumerGroup", "range_assign"]

log = logging.getLogger("fastkafka.cluster.consumer")


def range_assign(partitions, threads, thread_ids) -> dict[int, str]:
    """The seeds' rule for one topic: ``{partition: thread}`` for the threads in ``thread_ids``.

    >>> range_assign([0, 1, 2, 3, 4], ["a-0", "b-0"], ["a-0", "b-0"])
    {0: 'a-0', 1: 'a-0', 2: 'a-0', 3: 'b-0', 4: 'b-0'}
    """
    parts, ths = sorted(partitions), sorted(threads)
    if not ths:
        return {}
    per, extra = divmod(len(parts), len(ths))
    out = {}
    for i, t in enumerate(ths):
        if t not in thread_ids:
            continue
        start = per * i + min(i, extra)
        for p in parts[start:start + per + (1 if i < extra else 0)]:
            out[p] = t
    return out


class ZkConsumerGroup:
    def __init__(self, connect: str, group_id: str, *, session_timeout_ms: int = 6000,
                 rebalance_max_retries: int = 4, rebalance_backoff_ms: int = 2000,
                 on_assignment: Callable[[dict], None] | None = None, consumer_id: str | None = None,
                 on_revoke: Callable[[dict], None] | None = None):
        self.group_id = group_id
        self.consumer_id = consumer_id or f"{socket.gethostname()}:{uuid.uuid4()}"
        self.on_assignment = on_assignment
        # Called with the owned partitions before a rebalance releases them: the seeds stop the
        # fetchers and commit offsets here, so the next owner starts where this one stopped.
        self.on_revoke = on_revoke
        self.assignment: dict[tuple[str, int], str] = {}
        self.generation = 0   # successful rebalances so far
        self._retries, self._backoff = rebalance_max_retries, rebalance_backoff_ms / 1000
        self._client = session.connect({"zookeeper.connect": connect,
                                        "zookeeper.session.timeout.ms": session_timeout_ms,
                                        "zookeeper.connection.timeout.ms": None})
        self._subscription: dict[str, int] = {}
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._cond = threading.Condition()
        self._watched: set[str] = set()
        self._thread = threading.Thread(target=self._run, name=f"zk-consumer-{group_id}", daemon=True)

    # --- lifecycle ---
    def start(self, subscription: Mapping[str, int]) -> None:
        """Register with ``{topic: streams}`` and rebalance in the background from now on."""
        self._subscription = dict(subscription)
        c = self._client
        c.ensure_path(znodes.consumer_ids_path(self.group_id))
        self._register()
        c.add_listener(self._on_state)
        c.ChildrenWatch(znodes.consumer_ids_path(self.group_id), self._poke)
        c.ChildrenWatch(znodes.BROKER_IDS, self._poke)
        for topic in self._subscription:
            c.DataWatch(znodes.topic_path(topic), self._poke)
        self._thread.start()

    def _poke(self, *_) -> bool:
        """A watched znode changed: rebalance. Returning False ends the watch after shutdown."""
        self._wake.set()
        return not self._stopped.is_set()

    def resubscribe(self, subscription: Mapping[str, int]) -> None:
        """Change ``{topic: streams}`` (a whitelist matched a new topic): re-register, rebalance."""
        new = set(subscription) - set(self._subscription)
        self._subscription = dict(subscription)
        self._register()
        for topic in new:
            self._client.DataWatch(znodes.topic_path(topic), self._poke)
        self._wake.set()

    def _register(self) -> None:
        path = znodes.consumer_id_path(self.group_id, self.consumer_id)
        data = znodes.ConsumerRegistration(self._subscription).encode()
        try:
            self._client.create(path, data, ephemeral=True)
        except NodeExistsError:
            self._client.set(path, data)

    def _on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED and not self._stopped.is_set():
            # after a session expiry our ephemeral registration and owners are gone: redo both
            self._client.handler.spawn(self._reregister)

    def _reregister(self) -> None:
        try:
            if not self._client.exists(znodes.consumer_id_path(self.group_id, self.consumer_id)):
                self._register()
                self._wake.set()
        except KazooException:
            log.warning("consumer %s: re-registration failed; retried on the next reconnect", self.consumer_id)

    def shutdown(self) -> None:
        """Release owned partitions, deregister, close the session (the others rebalance)."""
        self._stopped.set()
        self._wake.set()
        self._thread.join(10)
        try:
            self._release()
            self._client.delete(znodes.consumer_id_path(self.group_id, self.consumer_id))
        except KazooException:
            pass
        self._client.stop()
        self._client.close()

    # --- rebalance ---
    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stopped.is_set():
                return
            for attempt in range(self._retries + 1):
                try:
                    if self._rebalance():
                        break
                except KazooException as e:
                    log.warning("consumer %s: rebalance hit %s", self.consumer_id, e)
                if self._stopped.wait(self._backoff):
                    return
            else:
                log.error("consumer %s: could not rebalance after %d retries", self.consumer_id, self._retries)

    def _threads_of(self) -> dict[str, list[str]]:
        """Per subscribed topic, the sorted thread ids of every consumer in the group subscribed to it."""
        c, g = self._client, self.group_id
        out: dict[str, list[str]] = {t: [] for t in self._subscription}
        for cid in c.get_children(znodes.consumer_ids_path(g)):
            try:
                reg = znodes.ConsumerRegistration.decode(c.get(znodes.consumer_id_path(g, cid))[0])
            except (NoNodeError, znodes.ZnodeDataError):
                continue
            for topic, n in reg.subscription.items():
                if topic in out:
                    out[topic] += [f"{cid}-{i}" for i in range(n)]
        return {t: sorted(ths) for t, ths in out.items()}

    def _rebalance(self) -> bool:
        c = self._client
        mine = {f"{self.consumer_id}-{i}" for n in self._subscription.values() for i in range(n)}
        wanted: dict[tuple[str, int], str] = {}
        for topic, threads in self._threads_of().items():
            try:
                parts = znodes.TopicAssignment.decode(topic, c.get(znodes.topic_path(topic))[0]).partitions
            except NoNodeError:
                continue
            for p, t in range_assign(parts, threads, mine).items():
                wanted[(topic, p)] = t
        if self.on_revoke is not None and self.assignment:
            self.on_revoke(dict(self.assignment))
        self._release()
        claimed = {}
        for (topic, p), t in sorted(wanted.items()):
            try:
                c.create(znodes.owner_path(self.group_id, topic, p), t.encode(), ephemeral=True, makepath=True)
                claimed[(topic, p)] = t
            except NodeExistsError:  # its previous owner has not released it yet
                with self._cond:
                    self.assignment = claimed
                self._release()
                log.info("consumer %s: %s-%d still owned; retrying the rebalance", self.consumer_id, topic, p)
                return False
        with self._cond:
            self.assignment = claimed
            self.generation += 1
            self._cond.notify_all()
        log.info("consumer %s owns %s", self.consumer_id, sorted(claimed))
        if self.on_assignment is not None:
            self.on_assignment(dict(claimed))
        return True

    def _release(self) -> None:
        with self._cond:
            owned, self.assignment = self.assignment, {}
        for topic, p in owned:
            try:
                self._client.delete(znodes.owner_path(self.group_id, topic, p))
            except NoNodeError:
                pass

    def wait_for_generation(self, generation: int, timeout: float) -> bool:
        """Block until at least ``generation`` rebalances have succeeded."""
        with self._cond:
            return self._cond.wait_for(lambda: self.generation >= generation, timeout)

    # --- offsets ---
    def committed(self, topic: str, partition: int) -> int | None:
        try:
            data, _ = self._client.get(znodes.offset_path(self.group_id, topic, partition))
        except NoNodeError:
            return None
        return znodes.decode_offset(data)

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Store the next offset to read for each ``(topic, partition)``."""
        for (topic, p), off in offsets.items():
            path, data = znodes.offset_path(self.group_id, topic, p), znodes.encode_offset(off)
            try:
                self._client.set(path, data)
            except NoNodeError:
                self._client.create(path, data, makepath=True)
