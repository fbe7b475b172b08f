"""BrokerServices: what request handlers reach, typed, built once by the broker before the first
request is read (``RequestContext.services``).

The broker is the composition root: it builds its services in order (logs, metadata, topics,
authorizer, replica manager in cluster mode) and hands handlers this one frozen record instead of
itself, so a handler can use only what is declared here and a type checker knows what each is.
``replicas``, ``cluster`` and ``authorizer`` are None where the broker runs without them (one
broker; no ``authorizer.class.name``). The group and transaction coordinators are built on first
use in cluster mode (``group_coordination``), so they are reached through that call.

Example::

    >>> import tempfile
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.server.broker import Broker
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> broker = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": tmpdir.name}))
    >>> broker.startup()
    >>> svc = broker.services
    >>> svc.broker_id, svc.replicas is None, svc.endpoint("PLAINTEXT")[1] == broker.port
    (0, True, True)
    >>> broker.shutdown(); tmpdir.cleanup()
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Union, cast

if TYPE_CHECKING:
    from fastkafka import protocol as P
    from fastkafka.errors import KafkaError
    from fastkafka.cluster.embedded import EmbeddedMetadata
    from fastkafka.cluster.metadata import ZkMetadata
    from fastkafka.cluster.node import ClusterNode
    from fastkafka.config import KafkaConfig
    from fastkafka.log import LogManager

    from .authorizer import Authorizer
    from .coordination import CoordinationService
    from .dynamic_config import DynamicBrokerConfig
    from .fetch_sessions import FetchSessionCache
    from .purgatory import Purgatory
    from .replica_manager import ReplicaManager
    from .topics import TopicManager

    Metadata = Union[EmbeddedMetadata, ZkMetadata]

__all__ = ["BrokerServices"]


@dataclass(frozen=True)
class BrokerServices:
    """The broker's services as handlers see them (see the module docstring)."""

    config: KafkaConfig
    broker_id: int
    logs: LogManager
    metadata: Metadata
    topics: TopicManager
    dynamic_config: DynamicBrokerConfig
    fetch_purgatory: Purgatory
    fetch_sessions: FetchSessionCache
    advertised: P.Advertised
    authorizer: Authorizer | None
    replicas: ReplicaManager | None
    cluster: ClusterNode | None
    #: the group coordinator and producer ids (and the transaction coordinator), built on first use
    group_coordination: Callable[[], CoordinationService]
    #: (host, port) clients should use for a listener
    endpoint: Callable[[str], tuple[str, int]]
    #: ElectLeaders: per (topic, partition) the elected leader's id or the error that prevented it
    elect_leaders: Callable[[int, object, int], dict[tuple[str, int], int | KafkaError]]

    @property
    def cluster_id(self) -> str:
        return self.metadata.cluster_id

    def zk_metadata(self) -> ZkMetadata:
        """``metadata`` as cluster mode has it (live brokers, partition leaders, the controller),
        for cluster-mode paths only: one broker has no such view (RuntimeError)."""
        if self.cluster is None:
            raise RuntimeError("a broker without zookeeper.connect has no cluster metadata")
        return cast("ZkMetadata", self.metadata)

    @property
    def controller(self):
        """This broker's Controller in cluster mode (active or not), None when embedded."""
        return self.cluster.controller if self.cluster is not None else None
