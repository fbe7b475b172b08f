"""A broker's membership of a ZooKeeper cluster, started and stopped in the right order.

Start-up is split in two so the broker can fail fast and register last:

1. :meth:`ClusterNode.connect` — session (``zookeeper.connection.timeout.ms``), persistent
   layout, cluster id, *refuse a broker.id a live broker holds*, metadata watches;
2. :meth:`ClusterNode.register` — once the logs are loaded and the listeners bound:
   ``/brokers/ids/<id>`` (clients may be sent here from now on), then the controller election.

:meth:`ClusterNode.controlled_shutdown` hands this broker's leaderships to other in-sync replicas;
:meth:`ClusterNode.stop` steps down from the election (another broker takes over at once),
deletes the registration and closes the session.

Example (``zk_connect``: a ZooKeeper's ``host:port``, e.g. ``"127.0.0.1:2181"``)::

    >>> from fastkafka.config import KafkaConfig
    >>> config = KafkaConfig({"zookeeper.connect": f"{zk_connect}/doc-node", "broker.id": 1})
    >>> node = ClusterNode(config)
    >>> node.connect(); node.register(["PLAINTEXT://127.0.0.1:9092"], {"PLAINTEXT": "PLAINTEXT"})
    >>> md = node.metadata
    >>> md.wait_until(lambda: 1 in md.brokers() and md.controller_id == 1, 10)   # the only broker
    True
    >>> md.brokers()[1].endpoints
    ('PLAINTEXT://127.0.0.1:9092',)
    >>> ClusterNode(config).connect()          # a second broker with the same id fails fast
    Traceback (most recent call last):
    fastkafka.cluster.session.ClusterStartupError: broker.id 1 is already registered by 127.0.0.1:9092 ...
    >>> node.stop()
"""
from __future__ import annotations

import logging

from ..config.definitions import BROKER_ID, BROKER_RACK, ZOOKEEPER_CONNECT
from . import session, znodes
from .controlled_shutdown import ControlledShutdown
from .controller import Controller
from .metadata import ZkMetadata
from .registration import BrokerRegistration

__all__ = ["ClusterNode", "ClusterStartupError"]

ClusterStartupError = session.ClusterStartupError

log = logging.getLogger("fastkafka.cluster")


class ClusterNode:
    def __init__(self, config):
        self.config = config
        self.broker_id: int = config[BROKER_ID]
        self.client = None
        self.cluster_id = ""
        self.metadata: ZkMetadata | None = None
        self.registration: BrokerRegistration | None = None
        self.controller: Controller | None = None

    def connect(self) -> None:
        """Session, layout, cluster id, broker id check, metadata cache (ClusterStartupError on failure)."""
        self.client = session.connect(self.config)
        try:
            session.ensure_layout(self.client)
            self.cluster_id = session.cluster_id(self.client)
            probe = BrokerRegistration(self.client, znodes.BrokerInfo(self.broker_id, "", -1))
            probe.check_free()
            self.metadata = ZkMetadata(self.client, self.cluster_id)
            self.metadata.start()
        except BaseException:
            self._close()
            raise
        log.info("broker %d joined cluster %s via ZooKeeper %s", self.broker_id, self.cluster_id,
                 self.config[ZOOKEEPER_CONNECT])

    def register(self, endpoints: list[str], security_protocols: dict[str, str]) -> None:
        """Publish ``endpoints`` (``NAME://host:port``) with each listener's security protocol in
        ``/brokers/ids/<id>``, then contend for controller."""
        first = endpoints[0].split("://", 1)[1]
        host, _, port = first.rpartition(":")
        info = znodes.BrokerInfo(self.broker_id, host, int(port), tuple(endpoints),
                                 rack=self.config[BROKER_RACK] or None,
                                 security_protocols=tuple(sorted(security_protocols.items())))
        self.registration = BrokerRegistration(self.client, info)
        self.registration.register()
        self.controller = Controller(self.client, self.broker_id, self.metadata, self.config)
        self.controller.start()

    def controlled_shutdown(self) -> bool:
        """Hand this broker's leaderships over before stopping (see :class:`ControlledShutdown`)."""
        if self.registration is None:
            return True
        return ControlledShutdown(self.client, self.broker_id, self.metadata, self.config).run()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
        if self.registration is not None:
            self.registration.deregister()
        if self.metadata is not None:
            self.metadata.stop()
        self._close()

    def _close(self) -> None:
        if self.client is not None:
            try:
                self.client.stop()
                self.client.close()
            except Exception:  # noqa: BLE001 — closing is best effort; the session expires anyway
                log.debug("closing the ZooKeeper client failed", exc_info=True)
