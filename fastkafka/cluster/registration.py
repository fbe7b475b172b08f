"""A broker's ephemeral registration ``/brokers/ids/<id>``: its presence in the cluster.

The znode lives exactly as long as the broker's ZooKeeper session, which is how the controller
and every other broker learn that it died. Three cases matter:

* start-up with an id that a live broker holds: a clear start-up error, nothing overwritten;
* session expiry (the broker was paused, or cut off, longer than the session timeout): kazoo
  reconnects with a *new* session, whose ephemeral nodes are gone, so the broker registers again
  — detected by comparing session ids on every CONNECTED, since a reconnect within the session
  keeps the node and must not touch it;
* clean shutdown: the node is deleted at once, not left to time out.

Example (``zk_connect``: a ZooKeeper's ``host:port``, e.g. ``"127.0.0.1:2181"``)::

    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.cluster.session import connect
    >>> config = KafkaConfig({"zookeeper.connect": f"{zk_connect}/doc-registration"})
    >>> client = connect(config)
    >>> reg = BrokerRegistration(client, znodes.BrokerInfo(1, "127.0.0.1", 9092))
    >>> reg.register(); client.get_children("/brokers/ids")
    ['1']
    >>> other = connect(config)                  # a second broker configured with the same id
    >>> BrokerRegistration(other, znodes.BrokerInfo(1, "127.0.0.1", 9093)).register()
    Traceback (most recent call last):
    fastkafka.cluster.session.ClusterStartupError: broker.id 1 is already registered by 127.0.0.1:9092 ...
    >>> reg.deregister(); client.get_children("/brokers/ids")
    []
    >>> for c in (client, other):
    ...     c.stop(); c.close()
"""
from __future__ import annotations

import logging
import threading
from dataclasses import replace

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError

from . import znodes
from .session import ClusterStartupError

__all__ = ["BrokerRegistration"]

log = logging.getLogger("fastkafka.cluster")


class BrokerRegistration:
    """Thread-safe. ``on_new_session`` callbacks run (off kazoo's event thread) after re-registering."""

    def __init__(self, client: KazooClient, info: znodes.BrokerInfo):
        self.client = client
        self.info = info
        self.path = znodes.broker_path(info.id)
        self.on_new_session: list = []
        self._session: int | None = None
        self._lock = threading.Lock()
        self._closed = False

    def check_free(self) -> None:
        """ClusterStartupError if a live broker already holds this id."""
        try:
            data, _ = self.client.retry(self.client.get, self.path)
        except NoNodeError:
            return
        raise ClusterStartupError(self._in_use(data))

    def _in_use(self, data: bytes | None) -> str:
        try:
            other = znodes.BrokerInfo.decode(self.info.id, data)
            where = f" by {other.host}:{other.port}"
        except znodes.ZnodeDataError:
            where = ""
        return (f"broker.id {self.info.id} is already registered{where} in ZooKeeper ({self.path}); "
                "every broker of a cluster needs its own broker.id")

    def register(self) -> None:
        """Create the ephemeral node (start-up); ClusterStartupError if the id is taken."""
        with self._lock:
            try:
                self.client.retry(self.client.create, self.path, self.info.encode(), ephemeral=True,
                                  makepath=True)
            except NodeExistsError:
                data, stat = self.client.get(self.path)
                if stat.ephemeralOwner != self.client.client_id[0]:
                    raise ClusterStartupError(self._in_use(data)) from None
            self._session = self.client.client_id[0]
        self.client.add_listener(self._on_state)
        log.info("registered broker %d at %s", self.info.id, ",".join(self.info.endpoints))

    def _on_state(self, state: str) -> None:
        # runs on kazoo's event thread: never block it
        if state == KazooState.CONNECTED and not self._closed:
            self.client.handler.spawn(self._reregister_if_new_session)
        elif state == KazooState.LOST:
            log.warning("broker %d: ZooKeeper session expired; will re-register on reconnect", self.info.id)

    def _reregister_if_new_session(self) -> None:
        with self._lock:
            sid = self.client.client_id[0] if self.client.client_id else None
            if self._closed or sid is None or sid == self._session:
                return
            self.info = replace(self.info, timestamp=znodes.now_ms())
            try:
                self.client.retry(self.client.create, self.path, self.info.encode(), ephemeral=True,
                                  makepath=True)
            except NodeExistsError:
                data, stat = self.client.get(self.path)
                if stat.ephemeralOwner != sid:
                    log.error("broker %d: cannot re-register: %s", self.info.id, self._in_use(data))
                    return
            except Exception:  # the next CONNECTED retries
                log.exception("broker %d: re-registration failed", self.info.id)
                return
            self._session = sid
        log.info("broker %d re-registered with a new ZooKeeper session", self.info.id)
        for cb in list(self.on_new_session):
            try:
                cb()
            except Exception:
                log.exception("new-session callback failed")

    def deregister(self) -> None:
        """Delete our node (clean shutdown); a node of another session is left alone."""
        with self._lock:
            self._closed = True
            self.client.remove_listener(self._on_state)
            try:
                _, stat = self.client.get(self.path)
                if stat.ephemeralOwner == self.client.client_id[0]:
                    self.client.delete(self.path, version=stat.version)
            except Exception:  # noqa: BLE001 — closing the session removes it anyway
                pass
        log.info("deregistered broker %d", self.info.id)
