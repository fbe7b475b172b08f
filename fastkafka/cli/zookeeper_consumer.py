"""The seeds' ZooKeeper consumer: a ``ConsumerConnector`` whose group lives in ZooKeeper.

``fastkafka.client`` and ``fastkafka.cluster`` sit on the same layer and do not import each
other, so the two meet here: :class:`ZkMembership` adapts
:class:`~fastkafka.cluster.zk_consumer.ZkConsumerGroup` (registration under
``/consumers/<group>/ids``, the seeds' range rebalance with owner znodes, offsets under
``/consumers/<group>/offsets/<topic>/<partition>``) to the membership interface the
connector is given, and :func:`create_consumer` picks the group kind from the config.

The two sides run in different threads: ZooKeeper watches start a rebalance in the group's
thread, the connector's thread fetches. A rebalance that would take partitions away waits
(``on_revoke``) until the connector has noticed (``rejoin_needed``), stopped handing those
partitions out and committed them — the seeds' "stop fetchers, commit offsets, release
owners" — then the group releases and claims, and the connector's ``join`` returns the
new assignment.

Example::

    connector = create_consumer({"zookeeper.connect": "127.0.0.1:2181/kafka",
                                 "bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                                 "auto.offset.reset": "smallest"})
    [stream] = connector.create_message_streams({"orders": 1})["orders"]
    for m in stream:
        print(m.partition, m.offset, m.message)
        connector.commit_offsets()      # -> /consumers/billing/offsets/orders/<partition>
"""
from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from typing import Mapping

from fastkafka.client.config import ClientConfig
from fastkafka.client.consumer_connector import ConsumerConnector
from fastkafka.client.consumer_connector import create_consumer as _broker_group_consumer
from fastkafka.cluster.zk_consumer import ZkConsumerGroup

__all__ = ["ZkMembership", "create_consumer"]

log = logging.getLogger("fastkafka.client")


class ZkMembership:
    """A ZooKeeper-registry group member with the connector's membership interface.

    Thread-safe between the connector's thread (``join``, ``commit``...) and the group's
    rebalance thread (``_on_revoke``).
    """

    def __init__(self, config: ClientConfig):
        self.config = c = config
        self._join_timeout = (c["rebalance.max.retries"] + 1) * (c["rebalance.backoff.ms"] / 1000) + 30
        self._revoke_timeout = c["zookeeper.session.timeout.ms"] / 1000
        self.member_id = f"{socket.gethostname()}:{uuid.uuid4()}"   # the seeds' consumer id
        self.group: ZkConsumerGroup | None = None   # its ZooKeeper session opens at the first join
        self.generation = -1          # the group's rebalance count this member last joined at
        self._subscription: dict[str, int] | None = None
        self._revoke_asked = threading.Event()
        self._revoked = threading.Event()

    @property
    def rejoin_needed(self) -> bool:
        """True when the group rebalanced, or wants to, since the last :meth:`join`."""
        return self._revoke_asked.is_set() or (
            self.group is not None and self.group.generation != self.generation)

    def heartbeat(self) -> bool:
        """ZooKeeper's session is the liveness; here only: does the member hold still?"""
        return not self.rejoin_needed

    def join(self, subscription: Mapping[str, int]) -> set[tuple[str, int]]:
        """Register (or update) ``{topic: streams}``, let a pending rebalance proceed, and
        return this member's partitions once the group has settled."""
        subscription = dict(subscription)
        want = self.generation + 1
        if self.group is None:
            c = self.config
            self.group = ZkConsumerGroup(
                c["zookeeper.connect"], c["group.id"], consumer_id=self.member_id,
                session_timeout_ms=c["zookeeper.session.timeout.ms"],
                rebalance_max_retries=c["rebalance.max.retries"],
                rebalance_backoff_ms=c["rebalance.backoff.ms"], on_revoke=self._on_revoke)
            self.group.start(subscription)
            want = 1
        elif subscription != self._subscription:
            self.group.resubscribe(subscription)
        elif not self._revoke_asked.is_set():
            want = self.group.generation     # rebalanced without taking anything from us
        self._subscription = subscription
        self._revoked.set()                  # the connector has let go: release and claim
        if not self.group.wait_for_generation(want, self._join_timeout):
            log.warning("zookeeper consumer %s: no rebalance within %.0f s; keeping %d partitions",
                        self.member_id, self._join_timeout, len(self.group.assignment))
        # generation first: if another rebalance lands in between, rejoin_needed stays True
        self.generation = self.group.generation
        return set(self.group.assignment)

    def _on_revoke(self, owned: dict) -> None:
        # The group's thread, before it releases ``owned``: hold it until the connector has
        # stopped handing those partitions out and committed them (or the wait runs out).
        self._revoked.clear()
        self._revoke_asked.set()
        deadline = time.monotonic() + self._revoke_timeout
        while not self._revoked.wait(0.05):
            if time.monotonic() > deadline:
                log.warning("zookeeper consumer %s: releasing %d partitions without the "
                            "connector's commit", self.member_id, len(owned))
                break
        self._revoke_asked.clear()

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self.group.commit(offsets)

    def committed(self, tps) -> dict[tuple[str, int], int]:
        """The offsets stored under /consumers/<group>/offsets for ``tps`` that have one."""
        out = {}
        for t, p in tps:
            off = self.group.committed(t, p)
            if off is not None:
                out[t, p] = off
        return out

    def leave(self) -> None:
        """Release the owned partitions and deregister: the others rebalance onto them."""
        self._revoked.set()
        if self.group is not None:
            self.group.shutdown()


def create_consumer(config: dict | ClientConfig) -> ConsumerConnector:
    """The seeds' ``Consumer.create``: ZooKeeper-registry group with ``zookeeper.connect``,
    else the broker's group coordinator."""
    config = config if isinstance(config, ClientConfig) else ClientConfig(config)
    if not config["zookeeper.connect"]:
        return _broker_group_consumer(config)
    return ConsumerConnector(config, membership=ZkMembership(config))
