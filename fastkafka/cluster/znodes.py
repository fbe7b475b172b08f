"""Every znode fastkafka uses in cluster mode: its path and its JSON, in one place (DESIGN §6).

The layout is the seeds' ("ZooKeeper directories") with the JSON Kafka 2.x writes, so the
documents below read the same to a person who knows Kafka::

    /cluster/id                                 {"version":"1","id":"q1Sh-9_ISia_zwGINzRvyQ"}
    /brokers/ids/<id>              ephemeral    {"version":4,"host":"h","port":9092,"jmx_port":-1,
                                                 "timestamp":"1700000000000",
                                                 "endpoints":["PLAINTEXT://h:9092"],
                                                 "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}}
    /brokers/topics/<t>                         {"version":3,"topic_id":"vB3F7cJzQ0-2HQ5NhtoQ1A",
                                                 "partitions":{"0":[1,2],"1":[2,3]},
                                                 "adding_replicas":{},"removing_replicas":{}}
    /brokers/topics/<t>/partitions/<p>/state    {"version":1,"controller_epoch":3,"leader":1,
                                                 "leader_epoch":0,"isr":[1]}
    /controller/<election contender>  ephemeral {"version":1,"brokerid":1,"timestamp":"..."}
    /controller_epoch                           3
    /config/topics/<t>                          {"version":1,"config":{"retention.ms":"60000"}}
    /config/users/<user>                        {"version":1,"config":{"SCRAM-SHA-256":
                                                 "salt=...,stored_key=...,server_key=...,iterations=4096",
                                                 "producer_byte_rate":"1048576"}}
    /config/users/<user>/clients/<client-id>    {"version":1,"config":{"consumer_byte_rate":"2097152"}}
    /config/clients/<client-id>                 {"version":1,"config":{"request_percentage":"50.0"}}
    /config/brokers/<id>|<default>              {"version":1,"config":{"log.retention.ms":"3600000"}}
    /kafka-acl/<Type>/<name>                    {"version":1,"acls":[{"principal":"User:alice",
                                                 "host":"*","operation":"Read","permissionType":"Allow"}]}
    /kafka-acl-extended/prefixed/<Type>/<name>  the same, for PREFIXED patterns
    /admin/delete_topics/<t>                    (empty: the controller deletes <t>, then the marker)
    /consumers/<g>/ids/<consumer id>  ephemeral {"version":1,"subscription":{"t":1},
                                                 "pattern":"static","timestamp":"..."}
    /consumers/<g>/owners/<t>/<p>     ephemeral  "<consumer id>-<stream>"
    /consumers/<g>/offsets/<t>/<p>               "42"
    /latest_producer_id_block                   {"version":1,"broker":2,"block_start":"1000",
                                                 "block_end":"1999"}

User and client-id names are URL-encoded as Kafka's ``Sanitizer`` does (``alice@example.com``
is ``alice%40example.com``); ``<default>`` names the default user or client of a quota.

``/controller`` is the one departure: the controller is elected with kazoo's ``Election``
recipe, whose contenders are ephemeral sequential children of ``/controller`` carrying the JSON
above, and the controller is the first contender (see :func:`controller_id`).

Every document has a ``version``; a decoder accepts the versions it knows and raises
:class:`ZnodeDataError` (naming the path) for anything else, so a newer writer is a clear error
rather than a misread.

Example::

    >>> state = PartitionState(leader=2, leader_epoch=0, isr=(2,), controller_epoch=1)
    >>> PartitionState.decode(state.encode()) == state
    True
    >>> state_path("orders", 3)
    '/brokers/topics/orders/partitions/3/state'
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Mapping

from fastkafka.uuids import parse_uuid, uuid_text
from fastkafka.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from fastkafka.security.client_quotas import QuotaEntity, znode_name

__all__ = [
    "ZnodeDataError", "CLUSTER_ID", "BROKER_IDS", "TOPICS", "CONTROLLER", "CONTROLLER_EPOCH",
    "CONFIG_TOPICS", "CONFIG_USERS", "CONFIG_BROKERS", "config_broker_path", "DELETE_TOPICS", "CONSUMERS",
    "LATEST_PRODUCER_ID_BLOCK", "PERSISTENT_PATHS",
    "broker_path", "topic_path", "partitions_path", "partition_path", "state_path",
    "config_topic_path", "config_user_path", "CONFIG_CLIENTS", "config_client_path", "config_user_clients_path",
    "config_user_client_path", "quota_entity_path", "delete_topic_path", "consumer_ids_path", "consumer_id_path",
    "owners_path", "owner_path", "offsets_path", "offset_path",
    "ClusterId", "BrokerInfo", "TopicAssignment", "PartitionState", "ControllerInfo",
    "EntityConfig", "ConsumerRegistration", "ACL_ROOTS", "acl_type_path", "acl_path", "acl_pattern", "AclDocument", "ProducerIdBlock", "encode_controller_epoch",
    "decode_controller_epoch", "encode_offset", "decode_offset", "controller_id", "NO_LEADER", "now_ms",
]

NO_LEADER = -1

CLUSTER_ID = "/cluster/id"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"
CONFIG_BROKERS = "/config/brokers"
DELETE_TOPICS = "/admin/delete_topics"
# fastkafka's own: a broker in controlled shutdown holds an ephemeral child named by its id
CONTROLLED_SHUTDOWN = "/admin/controlled_shutdown"
CONSUMERS = "/consumers"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
#: where each ACL pattern type's documents live (Kafka's LiteralAclStore / ExtendedAclStore)
ACL_ROOTS = {PatternType.LITERAL: "/kafka-acl", PatternType.PREFIXED: "/kafka-acl-extended/prefixed"}

#: created (empty) by every broker at start-up so watches have a parent to watch
PERSISTENT_PATHS = (BROKER_IDS, TOPICS, CONFIG_TOPICS, DELETE_TOPICS, CONTROLLED_SHUTDOWN, CONTROLLER, CONSUMERS,
                    "/cluster")


class ZnodeDataError(ValueError):
    """A znode's data is not the JSON (or version) this module writes."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{int(broker_id)}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{int(partition)}"


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{int(partition)}/state"


def config_topic_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def config_user_path(user: str) -> str:
    """``/config/users/<user>`` (the user's SCRAM credentials and quotas; ``<default>``: the
    default user's quotas).

    >>> config_user_path("CN=app,O=example")
    '/config/users/CN%3Dapp%2CO%3Dexample'
    """
    return f"{CONFIG_USERS}/{znode_name(user)}"


def config_broker_path(entity: str) -> str:
    """``/config/brokers/<id>`` (one broker's dynamic configs) or ``/config/brokers/<default>``
    (the cluster-wide ones).

    >>> config_broker_path("<default>")
    '/config/brokers/<default>'
    """
    return f"{CONFIG_BROKERS}/{entity}"


def config_client_path(client_id: str) -> str:
    return f"{CONFIG_CLIENTS}/{znode_name(client_id)}"


def config_user_clients_path(user: str) -> str:
    return f"{config_user_path(user)}/clients"


def config_user_client_path(user: str, client_id: str) -> str:
    return f"{config_user_clients_path(user)}/{znode_name(client_id)}"


def quota_entity_path(entity: QuotaEntity) -> str:
    """Where the quotas of ``(user, client_id)`` live.

    >>> quota_entity_path(("<default>", "etl"))
    '/config/users/<default>/clients/etl'
    """
    user, client = entity
    if user is None:
        return config_client_path(client)
    return config_user_path(user) if client is None else config_user_client_path(user, client)


def acl_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    return f"{ACL_ROOTS[pattern_type]}/{resource_type.kafka_name}"


def acl_path(pattern_type: PatternType, resource_type: ResourceType, name: str) -> str:
    return f"{acl_type_path(pattern_type, resource_type)}/{name}"


def acl_pattern(path: str) -> tuple[ResourceType, str, PatternType]:
    """The resource pattern an ACL document's path names (the inverse of :func:`acl_path`).

    >>> acl_pattern(acl_path(PatternType.PREFIXED, ResourceType.TOPIC, "pay"))
    (<ResourceType.TOPIC: 2>, 'pay', <PatternType.PREFIXED: 4>)
    """
    for ptype, root in ACL_ROOTS.items():
        if path.startswith(root + "/"):
            type_name, _, name = path[len(root) + 1:].partition("/")
            return ResourceType.parse(type_name), name, ptype
    raise ZnodeDataError(f"{path}: not an ACL path")


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def consumer_ids_path(group: str) -> str:
    return f"{CONSUMERS}/{group}/ids"


def consumer_id_path(group: str, consumer_id: str) -> str:
    return f"{CONSUMERS}/{group}/ids/{consumer_id}"


def owners_path(group: str, topic: str) -> str:
    return f"{CONSUMERS}/{group}/owners/{topic}"


def owner_path(group: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group}/owners/{topic}/{int(partition)}"


def offsets_path(group: str, topic: str) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic}"


def offset_path(group: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic}/{int(partition)}"


# --- JSON helpers ---

def _dump(doc) -> bytes:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def _load(data: bytes | None, what: str, versions: tuple) -> dict:
    if not data:
        raise ZnodeDataError(f"{what}: empty znode")
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise ZnodeDataError(f"{what}: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ZnodeDataError(f"{what}: expected a JSON object")
    if doc.get("version") not in versions:
        raise ZnodeDataError(f"{what}: unsupported version {doc.get('version')!r} (know {versions})")
    return doc


def now_ms() -> str:
    # Kafka writes timestamps as strings of epoch milliseconds
    return str(int(time.time() * 1000))


# --- documents ---

@dataclass(frozen=True)
class ClusterId:
    """``/cluster/id``: created once by the first broker (``version`` is a string, as Kafka writes it)."""

    id: str

    def encode(self) -> bytes:
        return _dump({"version": "1", "id": self.id})

    @classmethod
    def decode(cls, data: bytes | None) -> "ClusterId":
        doc = _load(data, CLUSTER_ID, ("1", 1))
        return cls(str(doc["id"]))


@dataclass(frozen=True)
class BrokerInfo:
    """``/brokers/ids/<id>``: where clients reach a live broker.

    >>> b = BrokerInfo(1, "127.0.0.1", 9092, endpoints=("PLAINTEXT://127.0.0.1:9092",))
    >>> BrokerInfo.decode(1, b.encode()).endpoint("PLAINTEXT")
    ('127.0.0.1', 9092)
    """

    id: int
    host: str
    port: int
    endpoints: tuple[str, ...] = ()
    jmx_port: int = -1
    timestamp: str = field(default_factory=now_ms, compare=False)
    rack: str | None = None
    # (listener, security protocol) per endpoint; a listener missing here is PLAINTEXT
    security_protocols: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    VERSION = 4

    def encode(self) -> bytes:
        protocols = dict(self.security_protocols)
        doc = {"version": self.VERSION, "host": self.host, "port": self.port, "jmx_port": self.jmx_port,
               "timestamp": self.timestamp, "endpoints": list(self.endpoints),
               "listener_security_protocol_map": {
                   name: protocols.get(name, "PLAINTEXT")
                   for name in (e.split("://", 1)[0] for e in self.endpoints)}}
        if self.rack is not None:
            doc["rack"] = self.rack
        return _dump(doc)

    @classmethod
    def decode(cls, broker_id: int, data: bytes | None) -> "BrokerInfo":
        doc = _load(data, broker_path(broker_id), (1, 2, 3, 4))
        return cls(int(broker_id), doc.get("host") or "", int(doc.get("port", -1)),
                   tuple(doc.get("endpoints", ())), int(doc.get("jmx_port", -1)),
                   str(doc.get("timestamp", "")), doc.get("rack"),
                   tuple(sorted((doc.get("listener_security_protocol_map") or {}).items())))

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        """(host, port) of the named listener, or None if this broker has none by that name."""
        for spec in self.endpoints:
            name, _, rest = spec.partition("://")
            if name == listener:
                host, _, port = rest.rpartition(":")
                return host.strip("[]"), int(port)
        return None


@dataclass(frozen=True)
class TopicAssignment:
    """``/brokers/topics/<t>``: the replica list of every partition (the first is the preferred
    leader) and, while a partition is being reassigned (KIP-455, version 2), the replicas being
    added and removed: ``partitions`` then holds the target and the original replicas together.
    Version 3 (Kafka 2.8+) adds the topic's id (KIP-516) in Kafka's text form; the controller
    gives one to a topic written without it.

    >>> a = TopicAssignment({0: (1,), 1: (2, 3, 1)}, adding={1: (2, 3)}, removing={1: (1,)})
    >>> b = TopicAssignment.decode("t", a.encode())
    >>> b.partitions[1], b.target(1), b.target(0), b.topic_id
    ((2, 3, 1), (2, 3), (1,), None)
    >>> import uuid
    >>> TopicAssignment.decode("t", TopicAssignment({0: (1,)}, topic_id=uuid.UUID(int=9)).encode()).topic_id.int
    9
    """

    partitions: Mapping[int, tuple[int, ...]]
    adding: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: uuid.UUID | None = None

    def encode(self) -> bytes:
        doc = {"version": 1, "partitions": {str(p): list(r) for p, r in sorted(self.partitions.items())}}
        if self.adding or self.removing or self.topic_id is not None:
            doc.update(version=2, adding_replicas={str(p): list(r) for p, r in sorted(self.adding.items())},
                       removing_replicas={str(p): list(r) for p, r in sorted(self.removing.items())})
        if self.topic_id is not None:
            doc.update(version=3, topic_id=uuid_text(self.topic_id))
        return _dump(doc)

    @classmethod
    def decode(cls, topic: str, data: bytes | None) -> "TopicAssignment":
        doc = _load(data, topic_path(topic), (1, 2, 3))
        try:
            maps = [{int(p): tuple(int(b) for b in r) for p, r in (doc.get(k) or {}).items()}
                    for k in ("partitions", "adding_replicas", "removing_replicas")]
            topic_id = parse_uuid(doc["topic_id"]) if doc.get("topic_id") is not None else None
        except (TypeError, ValueError, AttributeError):
            raise ZnodeDataError(f"{topic_path(topic)}: bad partitions map or topic id") from None
        if "partitions" not in doc:
            raise ZnodeDataError(f"{topic_path(topic)}: bad partitions map")
        return cls(*maps, topic_id=topic_id)

    @property
    def count(self) -> int:
        return len(self.partitions)

    def reassigning(self, partition: int) -> bool:
        return partition in self.adding or partition in self.removing

    def target(self, partition: int) -> tuple[int, ...]:
        """The replicas the partition will have once its reassignment completes."""
        removing = self.removing.get(partition, ())
        return tuple(r for r in self.partitions[partition] if r not in removing)

    def original(self, partition: int) -> tuple[int, ...]:
        """The replicas the partition had before its reassignment (what a cancellation restores)."""
        adding = self.adding.get(partition, ())
        return tuple(r for r in self.partitions[partition] if r not in adding)


@dataclass(frozen=True)
class PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state``, written by the controller."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def encode(self) -> bytes:
        return _dump({"version": 1, "controller_epoch": self.controller_epoch, "leader": self.leader,
                      "leader_epoch": self.leader_epoch, "isr": list(self.isr)})

    @classmethod
    def decode(cls, data: bytes | None, what: str = "partition state") -> "PartitionState":
        doc = _load(data, what, (1,))
        return cls(int(doc["leader"]), int(doc["leader_epoch"]), tuple(int(b) for b in doc["isr"]),
                   int(doc["controller_epoch"]))


@dataclass(frozen=True)
class ControllerInfo:
    """The data of a ``/controller`` election contender: which broker it is."""

    broker_id: int
    timestamp: str = field(default_factory=now_ms, compare=False)

    def encode(self) -> bytes:
        return _dump({"version": 1, "brokerid": self.broker_id, "timestamp": self.timestamp})

    @classmethod
    def decode(cls, data: bytes | None) -> "ControllerInfo":
        doc = _load(data, CONTROLLER, (1,))
        return cls(int(doc["brokerid"]), str(doc.get("timestamp", "")))


def encode_controller_epoch(epoch: int) -> bytes:
    return str(int(epoch)).encode()


def decode_controller_epoch(data: bytes | None) -> int:
    try:
        return int(data or b"0")
    except ValueError:
        raise ZnodeDataError(f"{CONTROLLER_EPOCH}: not an integer: {data!r}") from None


def controller_id(contenders: list[str]) -> int:
    """The controller's broker id from kazoo ``Election.contenders()`` (first = holder), or -1.

    >>> controller_id([ControllerInfo(3).encode().decode()])
    3
    >>> controller_id([])
    -1
    """
    if not contenders:
        return NO_LEADER
    try:
        return ControllerInfo.decode(contenders[0].encode()).broker_id
    except (ZnodeDataError, KeyError, ValueError):
        return NO_LEADER


@dataclass(frozen=True)
class EntityConfig:
    """``/config/topics/<t>`` (a topic's config overrides, Kafka's topic-level names),
    ``/config/users/<user>`` (a user's SCRAM credentials, by mechanism, and its client quotas),
    ``/config/clients/<client-id>`` and ``/config/users/<user>/clients/<client-id>`` (client
    quotas), ``/config/brokers/<id>|<default>`` (dynamic broker configs): one document shape."""

    config: Mapping[str, str]

    def encode(self) -> bytes:
        return _dump({"version": 1, "config": dict(self.config)})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "EntityConfig":
        doc = _load(data, path, (1,))
        return cls({str(k): str(v) for k, v in (doc.get("config") or {}).items()})

    @classmethod
    def configs_of(cls, path: str, data: bytes | None) -> Mapping[str, str]:
        return cls.decode(path, data).config


@dataclass(frozen=True)
class AclDocument:
    """``/kafka-acl/<Type>/<name>`` and ``/kafka-acl-extended/prefixed/<Type>/<name>``: the ACLs
    of one resource pattern, with Kafka's names (so kafka-acls.sh could read them).

    >>> acl = AclBinding(ResourceType.GROUP, "etl", PatternType.LITERAL, "User:alice", "*",
    ...                  AclOperation.READ, AclPermissionType.ALLOW)
    >>> AclDocument((acl,)).encode()
    b'{"acls":[{"host":"*","operation":"Read","permissionType":"Allow","principal":"User:alice"}],"version":1}'
    >>> path = acl_path(PatternType.LITERAL, ResourceType.GROUP, "etl")
    >>> AclDocument.decode(path, AclDocument((acl,)).encode()).acls == (acl,)
    True
    """

    acls: tuple[AclBinding, ...]

    def encode(self) -> bytes:
        return _dump({"version": 1, "acls": [
            {"principal": a.principal, "host": a.host, "operation": a.operation.kafka_name,
             "permissionType": a.permission_type.kafka_name} for a in self.acls]})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "AclDocument":
        rtype, name, ptype = acl_pattern(path)
        doc = _load(data, path, (1,))
        try:
            return cls(tuple(AclBinding(rtype, name, ptype, str(e["principal"]), str(e["host"]),
                                        AclOperation.parse(e["operation"]),
                                        AclPermissionType.parse(e["permissionType"]))
                             for e in doc["acls"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ZnodeDataError(f"{path}: bad ACL entry ({e})") from None


@dataclass(frozen=True)
class ConsumerRegistration:
    """``/consumers/<g>/ids/<id>``: a ZooKeeper consumer and its streams per topic ("static")
    or its whitelist/blacklist pattern ("white_list"/"black_list" with one regex key)."""

    subscription: Mapping[str, int]
    pattern: str = "static"
    timestamp: str = field(default_factory=now_ms, compare=False)

    def encode(self) -> bytes:
        return _dump({"version": 1, "subscription": dict(self.subscription), "pattern": self.pattern,
                      "timestamp": self.timestamp})

    @classmethod
    def decode(cls, data: bytes | None, what: str = "consumer registration") -> "ConsumerRegistration":
        doc = _load(data, what, (1,))
        return cls({str(k): int(v) for k, v in doc["subscription"].items()}, str(doc["pattern"]),
                   str(doc.get("timestamp", "")))


@dataclass(frozen=True)
class ProducerIdBlock:
    """``/latest_producer_id_block``: the last block of producer ids a broker reserved.

    Every broker reserves the block after it with a conditional set on the znode's version, so
    no two brokers ever hand out the same id. The ids are strings, as Kafka writes them.

    >>> b = ProducerIdBlock(broker=2, block_start=1000, block_end=1999)
    >>> b.encode()
    b'{"block_end":"1999","block_start":"1000","broker":2,"version":1}'
    >>> ProducerIdBlock.decode(b.encode()) == b
    True
    """

    broker: int
    block_start: int
    block_end: int

    def encode(self) -> bytes:
        return _dump({"version": 1, "broker": self.broker, "block_start": str(self.block_start),
                      "block_end": str(self.block_end)})

    @classmethod
    def decode(cls, data: bytes | None) -> "ProducerIdBlock":
        doc = _load(data, LATEST_PRODUCER_ID_BLOCK, (1,))
        try:
            return cls(int(doc["broker"]), int(doc["block_start"]), int(doc["block_end"]))
        except (KeyError, TypeError, ValueError):
            raise ZnodeDataError(f"{LATEST_PRODUCER_ID_BLOCK}: bad block {doc!r}") from None


def encode_offset(offset: int) -> bytes:
    return str(int(offset)).encode()


def decode_offset(data: bytes | None) -> int:
    try:
        return int(data)
    except (TypeError, ValueError):
        raise ZnodeDataError(f"consumer offset is not an integer: {data!r}") from None
