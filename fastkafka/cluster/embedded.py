"""Embedded-mode cluster metadata: the topics this single broker serves, kept in ``<log.dir>/meta``.

The file is JSON, rewritten whole on every change through a temporary file, ``fsync`` and
``rename`` (then an ``fsync`` of the directory), so a crash leaves either the old or the new
version, never a torn one. It holds the cluster id (created once, 22 characters of URL-safe
base64 like Kafka's) and, per topic, its id (KIP-516, Kafka's text form; a topic from before ids
gets one when the file is next loaded), partition count and config overrides::

    {"version": 1, "cluster_id": "q1Sh-9_ISia_zwGINzRvyQ",
     "topics": {"orders": {"topic_id": "vB3F7cJzQ0-2HQ5NhtoQ1A", "partitions": 3,
                           "configs": {"retention.ms": "60000"}}}}

and the dynamic configs of users and clients, as ``/config/users|clients`` hold them in
ZooKeeper: a user's entry has its SCRAM credentials and its client quotas side by side
(``"users": {"alice": {"SCRAM-SHA-256": "...", "producer_byte_rate": "1048576"}}``), then
``"clients": {"<client-id>": {...}}`` and ``"user_clients": {"<user>": {"<client-id>": {...}}}``,
``<default>`` naming the default user or client; the dynamic broker configs as
``/config/brokers`` holds them: ``"brokers": {"<default>": {"log.retention.ms": "3600000"}}``.

Thread-safe: one lock serialises changes; readers get immutable snapshots.

Example::

    >>> import tempfile
    >>> tmpdir = tempfile.TemporaryDirectory(); store = EmbeddedMetadata(tmpdir.name)
    >>> orders = store.create_topic("orders", 3, {"retention.ms": "60000"})
    >>> orders.partitions
    3
    >>> again = EmbeddedMetadata(store.directory)
    >>> sorted(again.topics()), again.topic_name(orders.topic_id)
    (['orders'], 'orders')
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

import json
import os
import re
import threading
import uuid
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from fastkafka import errors
from fastkafka.uuids import UUID_ZERO, parse_uuid, random_uuid, uuid_text
from fastkafka.security.acl import AclBinding, AclOperation, AclPermissionType, AclSnapshot, PatternType, ResourceType
from fastkafka.security.client_quotas import QUOTA_CONFIGS, QuotaConfigsView, QuotaEntity, with_entry

__all__ = ["TopicInfo", "TopicIdIndex", "EmbeddedMetadata", "validate_topic_name", "META_FILE"]

META_FILE = "meta"
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME = 249


def validate_topic_name(name: str) -> None:
    """Kafka's rules: 1-249 of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``; else InvalidTopicException.

    >>> validate_topic_name("a.b-c_d")
    >>> validate_topic_name("a b")
    Traceback (most recent call last):
    ...
    fastkafka.errors.InvalidTopicException: topic name 'a b' contains characters other than ASCII alphanumerics, '.', '_' and '-'
    """
    if not name:
        raise errors.InvalidTopicException("topic name is empty")
    if name in (".", ".."):
        raise errors.InvalidTopicException(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME:
        raise errors.InvalidTopicException(f"topic name is longer than {MAX_TOPIC_NAME} characters")
    if not _LEGAL.fullmatch(name):
        raise errors.InvalidTopicException(
            f"topic name {name!r} contains characters other than ASCII alphanumerics, '.', '_' and '-'")


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)
    # KIP-516: given once at creation, never reused, so a topic deleted and created again under
    # its name is told apart from the old one (zero: not known yet)
    topic_id: uuid.UUID = field(default=UUID_ZERO, repr=False)

    def to_json(self) -> dict:
        return {"topic_id": uuid_text(self.topic_id), "partitions": self.partitions, "configs": dict(self.configs)}


class TopicIdIndex:
    """The topic named by an id in a topics snapshot, ``{name: TopicInfo}``; the map from ids to
    names is built once per snapshot (they are replaced whole on every change), so a lookup on
    the fetch path is one dict access.

    >>> index = TopicIdIndex()
    >>> orders = TopicInfo("orders", 1, topic_id=uuid.UUID(int=5))
    >>> index.name({"orders": orders}, uuid.UUID(int=5)), index.name({"orders": orders}, uuid.UUID(int=6))
    ('orders', None)
    """

    __slots__ = ("_cache",)

    def __init__(self):
        self._cache: tuple[object, dict[uuid.UUID, str]] = (None, {})

    def name(self, topics: Mapping[str, TopicInfo], topic_id: uuid.UUID) -> str | None:
        of, names = self._cache
        if of is not topics:
            names = {t.topic_id: n for n, t in topics.items() if t.topic_id != UUID_ZERO}
            self._cache = (topics, names)   # one assignment: readers see a matching pair
        return names.get(topic_id)


def new_cluster_id() -> str:
    """22 characters of URL-safe base64 of a random UUID, the form Kafka uses."""
    return uuid_text(random_uuid())


class EmbeddedMetadata:
    """The topic registry of a single broker, persisted in ``directory/meta``."""

    def __init__(self, directory: str):
        self.directory = directory
        self.path = os.path.join(directory, META_FILE)
        self._lock = threading.Lock()
        self._topics: dict[str, TopicInfo] = {}
        self._users: dict[str, Mapping[str, str]] = {}   # user -> SCRAM credentials by mechanism
        self._broker_configs: dict[str, Mapping[str, str]] = {}   # broker id or <default> -> dynamic configs
        self._acls = AclSnapshot()
        # client quotas of client ids, (None, client), and of user/client-id pairs, (user, client)
        self._quota_entities: dict[QuotaEntity, Mapping[str, str]] = {}
        self._quota_view = QuotaConfigsView()
        self._ids = TopicIdIndex()
        self._listeners: list = []
        self.cluster_id = ""
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as f:
                doc = json.loads(f.read())
        except FileNotFoundError:
            self.cluster_id = new_cluster_id()
            self._save()
            return
        self.cluster_id = doc["cluster_id"]
        self._topics = {
            name: TopicInfo(name, int(t["partitions"]), MappingProxyType(dict(t.get("configs", {}))),
                            parse_uuid(t["topic_id"]) if "topic_id" in t else random_uuid())
            for name, t in doc.get("topics", {}).items()
        }
        self._users = {u: MappingProxyType(dict(c)) for u, c in doc.get("users", {}).items()}
        self._broker_configs = {e: MappingProxyType(dict(c)) for e, c in doc.get("brokers", {}).items()}
        self._acls = AclSnapshot(_acl_from_json(a) for a in doc.get("acls", ()))
        others = {(None, c): MappingProxyType(dict(v)) for c, v in doc.get("clients", {}).items()}
        others.update({(u, c): MappingProxyType(dict(v)) for u, by_client in doc.get("user_clients", {}).items()
                       for c, v in by_client.items()})
        self._quota_entities = others
        if any("topic_id" not in t for t in doc.get("topics", {}).values()):
            self._save()    # the ids just given to topics from before ids stay theirs

    def _save(self) -> None:
        doc = {"version": 1, "cluster_id": self.cluster_id,
               "topics": {n: t.to_json() for n, t in sorted(self._topics.items())},
               "users": {u: dict(c) for u, c in sorted(self._users.items())},
               "brokers": {e: dict(c) for e, c in sorted(self._broker_configs.items())},
               "acls": [_acl_to_json(a) for a in self._acls],
               "clients": {c: dict(v) for (u, c), v in sorted(self._quota_entities.items(), key=_by_names)
                           if u is None},
               "user_clients": {}}
        for (u, c), v in sorted(self._quota_entities.items(), key=_by_names):
            if u is not None:
                doc["user_clients"].setdefault(u, {})[c] = dict(v)
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(json.dumps(doc, indent=1).encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dfd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    # --- reads (lock-free snapshots) ---
    def topics(self) -> Mapping[str, TopicInfo]:
        return MappingProxyType(self._topics)

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id (KIP-516), None if no topic has it."""
        return self._ids.name(self._topics, topic_id)

    # --- changes ---
    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None) -> TopicInfo:
        """Register a topic; TopicAlreadyExistsError if it exists."""
        validate_topic_name(name)
        with self._lock:
            if name in self._topics:
                raise errors.TopicAlreadyExistsError(f"topic {name!r} already exists")
            info = TopicInfo(name, partitions, MappingProxyType(dict(configs or {})), random_uuid())
            topics = dict(self._topics)
            topics[name] = info
            self._commit(topics)
            return info

    def delete_topic(self, name: str) -> TopicInfo:
        with self._lock:
            info = self._topics.get(name)
            if info is None:
                raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            topics = dict(self._topics)
            del topics[name]
            self._commit(topics)
            return info

    def set_partitions(self, name: str, count: int) -> TopicInfo:
        """Grow a topic to ``count`` partitions (InvalidPartitionsError unless it grows)."""
        with self._lock:
            info = self._topics.get(name)
            if info is None:
                raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            if count <= info.partitions:
                raise errors.InvalidPartitionsError(
                    f"topic {name!r} has {info.partitions} partitions; the new count must be larger, got {count}")
            topics = dict(self._topics)
            topics[name] = replace(info, partitions=count)
            self._commit(topics)
            return topics[name]

    def set_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo:
        """Replace the topic's config overrides (AlterConfigs)."""
        with self._lock:
            info = self._topics.get(name)
            if info is None:
                raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            topics = dict(self._topics)
            topics[name] = replace(info, configs=MappingProxyType(dict(configs)))
            self._commit(topics)
            return topics[name]

    def user_configs(self, user: str) -> Mapping[str, str]:
        """A user's stored entries (SCRAM credentials by mechanism, Kafka's string format)."""
        return self._users.get(user, MappingProxyType({}))

    def users(self) -> Mapping[str, Mapping[str, str]]:
        return MappingProxyType(self._users)

    def set_user_configs(self, user: str, configs: Mapping[str, str]) -> None:
        """Replace a user's entries (empty: forget the user); persisted before returning."""
        with self._lock:
            self._commit(users=with_entry(self._users, user, configs))

    def quota_configs(self) -> Mapping[QuotaEntity, Mapping[str, str]]:
        """Every client quota entity with its quota configs, ``{(user, client_id): {key: value}}``
        (a snapshot: the same object until a change)."""
        return self._quota_view.of(self._users, self._quota_entities)

    def set_quota_configs(self, entity: QuotaEntity, configs: Mapping[str, str]) -> None:
        """Replace the quota configs of ``(user, client_id)`` (a user's SCRAM credentials stay);
        persisted before returning."""
        user, client = entity
        with self._lock:
            if client is None:
                entries = {k: v for k, v in self._users.get(user, {}).items() if k not in QUOTA_CONFIGS}
                entries.update(configs)
                self._commit(users=with_entry(self._users, user, entries))
            else:
                self._commit(quota_entities=with_entry(self._quota_entities, entity, configs))

    def broker_configs(self, entity: str) -> Mapping[str, str]:
        """The dynamic configs of broker ``entity`` (its id, or ``<default>``)."""
        return self._broker_configs.get(entity, MappingProxyType({}))

    def set_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None:
        """Replace the dynamic configs of ``entity`` (empty: forget them); persisted before returning."""
        with self._lock:
            self._commit(broker_configs=with_entry(self._broker_configs, entity, configs))

    def add_listener(self, callback) -> None:
        """Call ``callback()`` after every change of users', clients' or brokers' configs (quick,
        no lock)."""
        self._listeners.append(callback)

    def acls(self) -> AclSnapshot:
        """Every ACL (an immutable snapshot; a change publishes a new one)."""
        return self._acls

    def change_acls(self, add=(), remove=()) -> None:
        """Store the ACLs ``add`` and forget those in ``remove``; persisted before returning."""
        with self._lock:
            gone = set(remove)
            self._commit(acls=AclSnapshot([a for a in self._acls if a not in gone] + list(add)))

    def _commit(self, topics: dict[str, TopicInfo] | None = None,
                users: dict[str, Mapping[str, str]] | None = None, acls: AclSnapshot | None = None,
                quota_entities: dict[QuotaEntity, Mapping[str, str]] | None = None,
                broker_configs: dict[str, Mapping[str, str]] | None = None) -> None:
        """Publish the new maps and persist them; on failure the old ones stay."""
        old = self._topics, self._users, self._acls, self._quota_entities, self._broker_configs
        self._topics = old[0] if topics is None else topics
        self._users = old[1] if users is None else users
        self._acls = old[2] if acls is None else acls
        self._quota_entities = old[3] if quota_entities is None else quota_entities
        self._broker_configs = old[4] if broker_configs is None else broker_configs
        try:
            self._save()
        except BaseException:
            self._topics, self._users, self._acls, self._quota_entities, self._broker_configs = old
            raise
        if users is not None or quota_entities is not None or broker_configs is not None:
            for callback in self._listeners:
                callback()


def _by_names(item) -> tuple:
    (user, client), _ = item
    return user or "", client or ""


def _acl_to_json(a: AclBinding) -> dict:
    # the names of Kafka's ZooKeeper documents, plus the pattern the znode path would carry
    return {"resourceType": a.resource_type.kafka_name, "name": a.resource_name,
            "patternType": a.pattern_type.kafka_name, "principal": a.principal, "host": a.host,
            "operation": a.operation.kafka_name, "permissionType": a.permission_type.kafka_name}


def _acl_from_json(d: dict) -> AclBinding:
    return AclBinding(ResourceType.parse(d["resourceType"]), d["name"], PatternType.parse(d["patternType"]),
                      d["principal"], d["host"], AclOperation.parse(d["operation"]),
                      AclPermissionType.parse(d["permissionType"]))
