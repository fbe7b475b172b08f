"""A broker's controlled shutdown (``controlled.shutdown.enable``): hand its partitions'
leadership to other in-sync replicas before it stops, so clients see a leader change instead
of a dead leader (no wait for ZooKeeper's session timeout, no acks=all produce timing out).

Kafka's broker sends ControlledShutdown to the controller and retries while the answer lists
partitions it still leads. Here the request is an ephemeral ``/admin/controlled_shutdown/<id>``
znode — the controller watches it and treats the broker as not eligible (see
:mod:`fastkafka.cluster.election`) — and the answer is the state znodes themselves, which every
broker already watches: the broker waits until none of its partitions that has another live
in-sync replica is still led by it. The znode goes with the broker's session, so a controller
that fails over meanwhile still sees it, and nothing outlives the broker.

Up to ``controlled.shutdown.max.retries`` rounds of ``controlled.shutdown.retry.backoff.ms``
each; after the last the broker stops anyway, as Kafka's does ("unclean shutdown").

Example (what broker 2 still has to hand over: it leads p0 with 3 in sync; p1 has no one else)::

    >>> from types import SimpleNamespace as NS
    >>> from fastkafka.cluster.znodes import PartitionState
    >>> states = {("t", 0): PartitionState(2, 1, (2, 3), 5), ("t", 1): PartitionState(2, 1, (2,), 5)}
    >>> md = NS(brokers=lambda: {1: None, 2: None, 3: None}, topics=lambda: {"t": None},
    ...         assignment=lambda t: {0: (2, 3), 1: (2, 1)}, state=lambda t, p: states[(t, p)])
    >>> leadership_to_move(md, 2)
    [('t', 0)]
"""
from __future__ import annotations

import logging
import time

from kazoo.exceptions import NodeExistsError

from ..config.definitions import CONTROLLED_SHUTDOWN_MAX_RETRIES, CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS
from . import znodes

__all__ = ["ControlledShutdown", "leadership_to_move"]

log = logging.getLogger("fastkafka.cluster")

POLL_S = 0.05


def leadership_to_move(metadata, broker_id: int) -> list[tuple[str, int]]:
    """Partitions ``broker_id`` leads that another live in-sync replica could take over."""
    live = metadata.brokers()
    out = []
    for topic in list(metadata.topics()):
        for p in list(metadata.assignment(topic)):
            st = metadata.state(topic, p)
            if st is not None and st.leader == broker_id and any(r != broker_id and r in live for r in st.isr):
                out.append((topic, p))
    return out


class ControlledShutdown:
    def __init__(self, client, broker_id: int, metadata, config):
        self.client = client
        self.broker_id = broker_id
        self.metadata = metadata
        self.rounds = config[CONTROLLED_SHUTDOWN_MAX_RETRIES]
        self.round_s = config[CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS] / 1000

    def run(self) -> bool:
        """Ask, then wait; True when every movable leadership moved."""
        try:
            self.client.create(f"{znodes.CONTROLLED_SHUTDOWN}/{self.broker_id}", b"", ephemeral=True, makepath=True)
        except NodeExistsError:
            pass
        remaining = leadership_to_move(self.metadata, self.broker_id)
        for attempt in range(1, self.rounds + 1):
            deadline = time.monotonic() + self.round_s
            while remaining and time.monotonic() < deadline:
                time.sleep(POLL_S)
                remaining = leadership_to_move(self.metadata, self.broker_id)
            if not remaining:
                log.info("broker %d: controlled shutdown succeeded", self.broker_id)
                return True
            log.info("broker %d: controlled shutdown round %d: still leading %s", self.broker_id, attempt,
                     ", ".join(f"{t}-{p}" for t, p in remaining[:10]))
        log.warning("broker %d: proceeding to do an unclean shutdown as all the controlled shutdown attempts "
                    "failed", self.broker_id)
        return False
