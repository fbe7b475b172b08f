"""The broker's ZooKeeper session: connecting (with chroot), the persistent layout, the cluster id.

``zookeeper.connect`` is Kafka's ``host:port[,host:port...][/chroot]``. The chroot is created if
missing (a fresh ensemble needs no manual set-up), then the client works inside it. Start-up
waits ``zookeeper.connection.timeout.ms`` for a first session and fails with a message naming the
ensemble; after that kazoo reconnects on its own, to any server of the ensemble, retrying
forever with a short capped back-off so losing a ZooKeeper server costs well under a session.

Example (``zk_connect``: a ZooKeeper's ``host:port``, e.g. ``"127.0.0.1:2181"``)::

    >>> from fastkafka.config import KafkaConfig
    >>> client = connect(KafkaConfig({"zookeeper.connect": f"{zk_connect}/doc-session"}))
    >>> ensure_layout(client); sorted(client.get_children("/"))      # inside the chroot
    ['admin', 'brokers', 'cluster', 'config', 'consumers', 'controller']
    >>> first = cluster_id(client); first                           # the first broker creates it
    '...'
    >>> cluster_id(client) == first                                 # the others read it
    True
    >>> client.stop(); client.close()
"""
from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from ..config.definitions import ZOOKEEPER_CONNECT, ZOOKEEPER_CONNECTION_TIMEOUT_MS, ZOOKEEPER_SESSION_TIMEOUT_MS
from . import znodes
from .embedded import new_cluster_id

__all__ = ["ClusterStartupError", "split_connect", "connect", "ensure_layout", "cluster_id"]

log = logging.getLogger("fastkafka.cluster")

# reconnect quickly and forever: the session, not the socket, decides when a broker is gone
_CONNECTION_RETRY = {"max_tries": -1, "delay": 0.05, "backoff": 2, "max_delay": 1.0}
_COMMAND_RETRY = {"max_tries": 20, "delay": 0.05, "backoff": 2, "max_delay": 1.0}


class ClusterStartupError(RuntimeError):
    """Cluster mode cannot start (ZooKeeper unreachable, broker id in use); the message says why."""


def split_connect(connect: str) -> tuple[str, str]:
    """``"h1:1,h2:2/a/b"`` -> ``("h1:1,h2:2", "/a/b")``; no chroot gives ``""``.

    >>> split_connect("127.0.0.1:2181,127.0.0.1:2182/kafka/")
    ('127.0.0.1:2181,127.0.0.1:2182', '/kafka')
    >>> split_connect("127.0.0.1:2181")
    ('127.0.0.1:2181', '')
    """
    hosts, sep, chroot = connect.strip().partition("/")
    chroot = ("/" + chroot).rstrip("/") if sep else ""
    return hosts, chroot


def _start(hosts: str, session_s: float, connect_s: float) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=session_s, connection_retry=dict(_CONNECTION_RETRY),
                         command_retry=dict(_COMMAND_RETRY), logger=logging.getLogger("fastkafka.cluster.kazoo"))
    try:
        client.start(timeout=connect_s)
    except KazooTimeoutError:
        client.stop()
        client.close()
        raise ClusterStartupError(
            f"cannot connect to ZooKeeper at {hosts} within {connect_s * 1000:.0f} ms "
            "(zookeeper.connection.timeout.ms)") from None
    return client


def connect(config) -> KazooClient:
    """A started KazooClient inside ``zookeeper.connect``'s chroot (created if missing)."""
    hosts, chroot = split_connect(config[ZOOKEEPER_CONNECT])
    if not hosts:
        raise ClusterStartupError("zookeeper.connect names no ZooKeeper server")
    session_s = config[ZOOKEEPER_SESSION_TIMEOUT_MS] / 1000
    connect_ms = config[ZOOKEEPER_CONNECTION_TIMEOUT_MS] or config[ZOOKEEPER_SESSION_TIMEOUT_MS]
    connect_s = connect_ms / 1000
    if chroot:
        root = _start(hosts, session_s, connect_s)
        try:
            root.ensure_path(chroot)
        finally:
            root.stop()
            root.close()
    return _start(hosts + chroot, session_s, connect_s)


def ensure_layout(client: KazooClient) -> None:
    """Create the persistent parents every broker watches (idempotent, safe to race)."""
    for path in znodes.PERSISTENT_PATHS:
        client.retry(client.ensure_path, path)


def cluster_id(client: KazooClient) -> str:
    """The cluster id: read ``/cluster/id``, or create it if this is the first broker.

    Two first brokers may race; the loser's create fails and it reads the winner's id.
    """
    try:
        data, _ = client.retry(client.get, znodes.CLUSTER_ID)
        return znodes.ClusterId.decode(data).id
    except NoNodeError:
        pass
    new = new_cluster_id()
    try:
        client.retry(client.create, znodes.CLUSTER_ID, znodes.ClusterId(new).encode(), makepath=True)
        log.info("created cluster id %s", new)
        return new
    except NodeExistsError:
        data, _ = client.retry(client.get, znodes.CLUSTER_ID)
        return znodes.ClusterId.decode(data).id
