"""Cluster-mode metadata: every broker's view of the cluster, kept current by ZooKeeper watches.

One :class:`ZkMetadata` per broker mirrors ``/brokers/ids`` (live brokers and their endpoints),
``/brokers/topics`` (assignments), each partition's ``state`` (leader, epoch, ISR) and the
``/controller`` election, using kazoo's ``ChildrenWatch``/``DataWatch``. It answers the same
reads as the embedded store (``topics()``, ``get()``, ``cluster_id``) so the topic manager and
the handlers treat both modes alike, plus the cluster's own (``brokers()``, ``state()``,
``controller_id``). Writes go to ZooKeeper only; the cache changes when the watches report
back, so every broker — the writer included — sees one order of events. Users' configs (SCRAM
credentials and quotas, ``/config/users``) are here too, clients' quotas in :mod:`.zk_quotas`.

Watches are kept for the life of the broker, also on deleted paths (kazoo's DataWatch becomes
an exists-watch), so a topic or broker that comes back is noticed without bookkeeping; kazoo
re-arms them after a reconnect or a new session.

Thread-safe: snapshots are replaced whole under one lock; listeners (``add_listener``) are called (on kazoo's
event thread, so they must be quick) after every change, and :meth:`wait_until` blocks until a
predicate over the cache holds.

Example (``zk_connect``: a ZooKeeper's ``host:port``, e.g. ``"127.0.0.1:2181"``)::

    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.cluster.registration import BrokerRegistration
    >>> from fastkafka.cluster.session import cluster_id, connect, ensure_layout
    >>> client = connect(KafkaConfig({"zookeeper.connect": f"{zk_connect}/doc-metadata"}))
    >>> ensure_layout(client); md = ZkMetadata(client, cluster_id(client)); md.start()
    >>> broker1 = BrokerRegistration(client, znodes.BrokerInfo(1, "127.0.0.1", 9092)); broker1.register()
    >>> md.wait_until(lambda: 1 in md.brokers(), 5)             # the watch reported it back
    True
    >>> md.create_topic("orders", 3, {"retention.ms": "60000"})
    TopicInfo(name='orders', partitions=3, configs=mappingproxy({'retention.ms': '60000'}))
    >>> md.wait_until(lambda: md.get("orders") is not None, 5), dict(md.assignment("orders"))
    (True, {0: (1,), 1: (1,), 2: (1,)})
    >>> md.leader("orders", 0)                # no controller runs here to elect one
    -1
    >>> md.stop(); broker1.deregister(); client.stop(); client.close()
"""
from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import replace
from types import MappingProxyType
from typing import Callable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError, NotEmptyError

from fastkafka import errors
from fastkafka.uuids import UUID_ZERO, random_uuid
from fastkafka.security.acl import RESOURCE_TYPES as ACL_RESOURCE_TYPES, AclBinding, AclSnapshot
from fastkafka.security.client_quotas import entity_name, with_entry

from . import znodes
from .assignment import assign_replicas
from .embedded import TopicIdIndex, TopicInfo, validate_topic_name
from .zk_quotas import ZkQuotaConfigs

__all__ = ["ZkMetadata", "PartitionView"]

log = logging.getLogger("fastkafka.cluster")


class PartitionView:
    """What Metadata says about one partition; ``leader`` is -1 while it has none."""

    __slots__ = ("leader", "leader_epoch", "replicas", "isr")

    def __init__(self, leader: int, leader_epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...]):
        self.leader, self.leader_epoch, self.replicas, self.isr = leader, leader_epoch, replicas, isr


def _zk_errors(fn):
    """ZooKeeper trouble during an admin write is a retriable REQUEST_TIMED_OUT for the client."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except KazooException as e:
            raise errors.RequestTimedOutError(f"ZooKeeper: {type(e).__name__}") from None
    return wrapper


class ZkMetadata(ZkQuotaConfigs):
    def __init__(self, client: KazooClient, cluster_id: str):
        self.client = client
        self.cluster_id = cluster_id
        self._listeners: list[Callable[[], None]] = []
        self._cond = threading.Condition()
        self._brokers: dict[int, znodes.BrokerInfo] = {}
        self._topics: dict[str, TopicInfo] = {}
        self._ids = TopicIdIndex()
        self._assignments: dict[str, Mapping[int, tuple[int, ...]]] = {}
        self._states: dict[tuple[str, int], znodes.PartitionState] = {}
        self._state_versions: dict[tuple[str, int], int] = {}   # the znode version each state was read at
        self._watched: set[str] = set()
        self._users: dict[str, Mapping[str, str]] = {}   # /config/users/<user> documents
        self._broker_configs: dict[str, Mapping[str, str]] = {}   # /config/brokers/<entity> documents
        self._init_quotas()     # client ids' and user/client-id pairs' quotas (zk_quotas)
        self._acl_docs: dict[str, tuple[AclBinding, ...]] = {}   # ACL znode path -> its ACLs
        self._acls = AclSnapshot()
        self.controller_id = znodes.NO_LEADER
        self._stopped = False

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` (on kazoo's thread: it must not block) after every change."""
        with self._cond:
            self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        with self._cond:
            if callback in self._listeners:
                self._listeners.remove(callback)

    # --- watches ---
    def start(self) -> None:
        """Arm the watches; the cache is complete when this returns (kazoo reads synchronously)."""
        self.client.ChildrenWatch(znodes.BROKER_IDS, self._on_broker_ids)
        self.client.ChildrenWatch(znodes.TOPICS, self._on_topics)
        self.client.ChildrenWatch(znodes.CONTROLLER, self._on_controller)
        self.client.ensure_path(znodes.CONFIG_USERS)
        self.client.ChildrenWatch(znodes.CONFIG_USERS, self._on_users)
        self.client.ensure_path(znodes.CONFIG_BROKERS)
        self.client.ChildrenWatch(znodes.CONFIG_BROKERS, self._on_broker_configs)
        self._start_quotas()
        for ptype in znodes.ACL_ROOTS:
            for rtype in ACL_RESOURCE_TYPES:
                parent = znodes.acl_type_path(ptype, rtype)
                self.client.ensure_path(parent)
                self.client.ChildrenWatch(parent, functools.partial(self._on_acl_resources, parent))

    def stop(self) -> None:
        self._stopped = True  # every watch function returns False from now on, which ends it

    def _watch(self, path: str, fn) -> None:
        if path not in self._watched:
            self._watched.add(path)
            self.client.DataWatch(path, fn)

    def _watch_document(self, path: str, decode, apply) -> None:
        """Keep ``apply(decode(path, data))`` current for one znode; a deleted znode applies
        ``apply(None)`` and ends its watch (a new one starts when it reappears); an unreadable
        one is logged and skipped."""
        def on_data(data, _stat) -> bool:
            if self._stopped:
                return False
            try:
                value = decode(path, data) if data else None
            except znodes.ZnodeDataError as e:
                log.warning("ignoring unreadable %s: %s", path, e)
                return True
            apply(value)
            if data is None:
                self._watched.discard(path)
                return False
            return True
        self._watch(path, on_data)

    def _changed(self) -> None:
        with self._cond:
            self._cond.notify_all()
        for cb in list(self._listeners):
            try:
                cb()
            except Exception:
                log.exception("metadata listener failed")

    def _on_broker_ids(self, children) -> bool:
        if self._stopped:
            return False
        for c in children:
            if c.isdigit():
                self._watch(znodes.broker_path(int(c)), functools.partial(self._on_broker, int(c)))
        return True

    def _on_broker(self, broker_id: int, data, _stat) -> bool:
        if self._stopped:
            return False
        with self._cond:
            brokers = dict(self._brokers)
            if data is None:
                brokers.pop(broker_id, None)
            else:
                try:
                    brokers[broker_id] = znodes.BrokerInfo.decode(broker_id, data)
                except znodes.ZnodeDataError as e:
                    log.warning("ignoring broker %d: %s", broker_id, e)
                    brokers.pop(broker_id, None)
            self._brokers = brokers
        self._changed()
        return True

    def _on_topics(self, children) -> bool:
        if self._stopped:
            return False
        for t in children:
            self._watch(znodes.topic_path(t), functools.partial(self._on_topic, t))
        return True

    def _on_topic(self, topic: str, data, _stat) -> bool:
        if self._stopped:
            return False
        if data is None:
            with self._cond:
                self._topics = {k: v for k, v in self._topics.items() if k != topic}
                self._assignments = {k: v for k, v in self._assignments.items() if k != topic}
                self._states = {k: v for k, v in self._states.items() if k[0] != topic}
                self._state_versions = {k: v for k, v in self._state_versions.items() if k[0] != topic}
            self._changed()
            return True
        try:
            assignment = znodes.TopicAssignment.decode(topic, data)
        except znodes.ZnodeDataError as e:
            log.warning("ignoring topic %s: %s", topic, e)
            return True
        try:
            cfg_data, _ = self.client.get(znodes.config_topic_path(topic))
            configs = znodes.EntityConfig.decode(znodes.config_topic_path(topic), cfg_data).config
        except NoNodeError:
            configs = {}
        except (znodes.ZnodeDataError, KazooException) as e:
            log.warning("topic %s: cannot read its config (%s); using broker defaults", topic, e)
            configs = {}
        with self._cond:
            self._topics = dict(self._topics)
            self._topics[topic] = TopicInfo(topic, assignment.count, MappingProxyType(dict(configs)),
                                            assignment.topic_id or UUID_ZERO)
            self._assignments = dict(self._assignments)
            self._assignments[topic] = MappingProxyType(dict(assignment.partitions))
        self._changed()
        self._watch(znodes.config_topic_path(topic), functools.partial(self._on_topic_config, topic))
        for p in assignment.partitions:
            self._watch(znodes.state_path(topic, p), functools.partial(self._on_state, topic, p))
        return True

    def _on_topic_config(self, topic: str, data, _stat) -> bool:
        """A topic's overrides changed (AlterConfigs through any broker, or Kafka's tools)."""
        if self._stopped:
            return False
        try:
            configs = (znodes.EntityConfig.decode(znodes.config_topic_path(topic), data).config
                       if data is not None else {})
        except znodes.ZnodeDataError as e:
            log.warning("topic %s: ignoring its changed config (%s)", topic, e)
            return True
        with self._cond:
            info = self._topics.get(topic)
            if info is None or dict(info.configs) == configs:
                return True
            self._topics = dict(self._topics)
            self._topics[topic] = replace(info, configs=MappingProxyType(dict(configs)))
        self._changed()
        return True

    def _on_users(self, children) -> bool:
        if self._stopped:
            return False
        for child in children:
            user = entity_name(child)     # znode names are sanitized (Kafka's Sanitizer)
            # a user's credentials and quotas (AlterUserScramCredentials/AlterClientQuotas anywhere)
            self._watch_document(znodes.config_user_path(user), znodes.EntityConfig.configs_of,
                                 functools.partial(self._cache_user, user))
            self._watch_user_clients(user)
        return True

    def _on_broker_configs(self, children) -> bool:
        if self._stopped:
            return False
        for entity in children:
            self._watch_document(znodes.config_broker_path(entity), znodes.EntityConfig.configs_of,
                                 functools.partial(self._cache_broker_configs, entity))
        return True

    def _on_acl_resources(self, parent: str, children) -> bool:
        if self._stopped:
            return False
        for name in children:
            path = f"{parent}/{name}"
            # a resource's ACLs (CreateAcls/DeleteAcls through any broker, or kafka-acls.sh)
            self._watch_document(path, lambda p, d: znodes.AclDocument.decode(p, d).acls,
                                 lambda acls, _p=path: self._cache_acls({_p: acls or ()}))
        return True

    def _cache_acls(self, docs: Mapping[str, tuple[AclBinding, ...]]) -> None:
        with self._cond:
            merged = dict(self._acl_docs)
            merged.update(docs)
            self._acl_docs = {p: a for p, a in merged.items() if a}
            self._acls = AclSnapshot(a for acls in self._acl_docs.values() for a in acls)

    def _on_state(self, topic: str, partition: int, data, stat) -> bool:
        if self._stopped:
            return False
        tp = (topic, partition)
        with self._cond:
            states = dict(self._states)
            versions = dict(self._state_versions)
            states.pop(tp, None)
            versions.pop(tp, None)
            if data is not None and topic in self._assignments:
                try:
                    states[tp] = znodes.PartitionState.decode(data, znodes.state_path(topic, partition))
                    versions[tp] = stat.version
                except (znodes.ZnodeDataError, KeyError, TypeError, ValueError) as e:
                    log.warning("ignoring state of %s-%d: %s", topic, partition, e)
            # Readers take the state first and the version second, without the lock; published
            # in the same order, a reader can only pair a new state with an old version, which
            # fails the conditional write it guards -- never an old state with a new version.
            self._states = states
            self._state_versions = versions
        self._changed()
        return True

    def _on_controller(self, _children) -> bool:
        if self._stopped:
            return False
        try:
            cid = znodes.controller_id(self.client.Election(znodes.CONTROLLER).contenders())
        except KazooException:
            cid = znodes.NO_LEADER
        if cid != self.controller_id:
            self.controller_id = cid
            self._changed()
        return True

    # --- reads (snapshots, no lock) ---
    def topics(self) -> Mapping[str, TopicInfo]:
        return MappingProxyType(self._topics)

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_name(self, topic_id) -> str | None:
        """The name of the topic with this id (KIP-516), None if no topic has it (yet)."""
        return self._ids.name(self._topics, topic_id)

    def brokers(self) -> Mapping[int, znodes.BrokerInfo]:
        """Live brokers by id (those with a registration znode)."""
        return MappingProxyType(self._brokers)

    def _racks(self) -> dict[int, str | None]:
        """Each live broker's ``broker.rack``: what replica assignment spreads over."""
        return {i: b.rack for i, b in self._brokers.items()}

    def assignment(self, topic: str) -> Mapping[int, tuple[int, ...]]:
        return self._assignments.get(topic, MappingProxyType({}))

    def state(self, topic: str, partition: int) -> znodes.PartitionState | None:
        return self._states.get((topic, partition))

    def state_version(self, topic: str, partition: int) -> int:
        """The znode version the cached state was read at (-1 when none): the condition of a
        leader's ISR write."""
        return self._state_versions.get((topic, partition), -1)

    def partition(self, topic: str, partition: int) -> PartitionView | None:
        """Leader, replicas and ISR of one partition; None if the partition does not exist."""
        replicas = self._assignments.get(topic, {}).get(partition)
        if replicas is None:
            return None
        st = self._states.get((topic, partition))
        if st is None:  # assigned, the controller has not elected a leader yet
            return PartitionView(znodes.NO_LEADER, -1, replicas, ())
        return PartitionView(st.leader, st.leader_epoch, replicas, st.isr)

    def leader(self, topic: str, partition: int) -> int:
        st = self._states.get((topic, partition))
        return st.leader if st is not None else znodes.NO_LEADER

    def leaders_known(self, topic: str, partitions=None) -> bool:
        """Whether the controller has written a state for ``partitions`` (default: all) of ``topic``."""
        assigned = self._assignments.get(topic)
        if assigned is None:
            return False
        return all((topic, p) in self._states for p in (partitions if partitions is not None else assigned))

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    # --- writes (ZooKeeper; the cache follows through the watches) ---
    def update_isr(self, topic: str, partition: int, state: znodes.PartitionState, version: int) -> int | None:
        """A leader's ISR change: write ``state`` if the znode is still at ``version`` (Kafka's
        conditional update). The new version, or None when someone (the controller, a newer
        leader) wrote it meanwhile -- the caller re-reads from the cache. Raises KazooException
        on connection trouble."""
        try:
            stat = self.client.set(znodes.state_path(topic, partition), state.encode(), version=version)
        except (BadVersionError, NoNodeError):
            return None
        return stat.version

    @_zk_errors
    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                     replication_factor: int = 1,
                     assignment: Mapping[int, tuple[int, ...]] | None = None) -> TopicInfo:
        """Write ``/config/topics/<t>`` and ``/brokers/topics/<t>`` (assigned round-robin unless given)."""
        validate_topic_name(name)
        c = self.client
        if c.exists(znodes.delete_topic_path(name)):
            raise errors.TopicAlreadyExistsError(f"Topic '{name}' is marked for deletion.")
        if c.exists(znodes.topic_path(name)):
            raise errors.TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        if assignment is None:
            assignment = assign_replicas(self._racks(), partitions, replication_factor)
        cfg = znodes.EntityConfig(dict(configs or {})).encode()
        topic_id = random_uuid()
        try:
            c.create(znodes.config_topic_path(name), cfg, makepath=True)
        except NodeExistsError:  # left by an earlier topic of this name
            c.set(znodes.config_topic_path(name), cfg)
        try:
            c.create(znodes.topic_path(name), znodes.TopicAssignment(assignment, topic_id=topic_id).encode(),
                     makepath=True)
        except NodeExistsError:
            raise errors.TopicAlreadyExistsError(f"Topic '{name}' already exists.") from None
        return TopicInfo(name, len(assignment), MappingProxyType(dict(configs or {})), topic_id)

    @_zk_errors
    def delete_topic(self, name: str) -> TopicInfo:
        """Mark ``name`` for deletion; the controller deletes it."""
        info = self._topics.get(name)
        if info is None and not self.client.exists(znodes.topic_path(name)):
            raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        try:
            self.client.create(znodes.delete_topic_path(name), b"", makepath=True)
        except NodeExistsError:
            pass
        return info or TopicInfo(name, 0)

    @_zk_errors
    def set_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo:
        """Replace ``/config/topics/<t>``; every broker's cache follows through its watch."""
        if not self.client.exists(znodes.topic_path(name)):
            raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        data = znodes.EntityConfig(dict(configs)).encode()
        try:
            self.client.set(znodes.config_topic_path(name), data)
        except NoNodeError:
            self.client.create(znodes.config_topic_path(name), data, makepath=True)
        info = self._topics.get(name) or TopicInfo(name, 0)
        return replace(info, configs=MappingProxyType(dict(configs)))

    def user_configs(self, user: str) -> Mapping[str, str]:
        """``/config/users/<user>``'s entries (SCRAM credentials by mechanism), from the cache."""
        return self._users.get(user, MappingProxyType({}))

    def users(self) -> Mapping[str, Mapping[str, str]]:
        return MappingProxyType(self._users)

    @_zk_errors
    def set_user_configs(self, user: str, configs: Mapping[str, str]) -> None:
        """Replace ``/config/users/<user>`` (empty: delete it); every broker's cache follows
        through its watch, this one's at once."""
        self._set_document(znodes.config_user_path(user), configs)
        self._cache_user(user, configs)

    def _cache_user(self, user: str, configs: Mapping[str, str]) -> None:
        """Copy-on-write: readers of ``_users`` never lock."""
        with self._cond:
            self._users = with_entry(self._users, user, configs)
        self._changed()     # (client quotas follow)

    def broker_configs(self, entity: str) -> Mapping[str, str]:
        """``/config/brokers/<entity>``'s dynamic configs (a broker id, or ``<default>``)."""
        return self._broker_configs.get(entity, MappingProxyType({}))

    @_zk_errors
    def set_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None:
        """Replace ``/config/brokers/<entity>`` (empty: delete it); every broker follows through
        its watch, this one at once."""
        self._set_document(znodes.config_broker_path(entity), configs)
        self._cache_broker_configs(entity, configs)

    def _cache_broker_configs(self, entity: str, configs: Mapping[str, str] | None) -> None:
        with self._cond:
            self._broker_configs = with_entry(self._broker_configs, entity, configs)
        self._changed()

    def _set_document(self, path: str, configs: Mapping[str, str]) -> None:
        if configs:
            data = znodes.EntityConfig(dict(configs)).encode()
            try:
                self.client.set(path, data)
            except NoNodeError:
                self.client.create(path, data, makepath=True)
        else:
            try:
                self.client.delete(path)
            except NoNodeError:
                pass
            except NotEmptyError:   # (a user's client-id quotas live below it)
                self.client.set(path, znodes.EntityConfig({}).encode())

    def acls(self) -> AclSnapshot:
        """Every ACL under ``/kafka-acl*`` (an immutable snapshot, replaced on every change)."""
        return self._acls

    @_zk_errors
    def change_acls(self, add=(), remove=()) -> None:
        """Add and remove ACLs, one conditional update per resource pattern (concurrent changes
        through other brokers are merged, not lost); this broker's cache follows at once."""
        by_path: dict[str, tuple[set, set]] = {}
        for acls, i in ((add, 0), (remove, 1)):
            for a in acls:
                path = znodes.acl_path(a.pattern_type, a.resource_type, a.resource_name)
                by_path.setdefault(path, (set(), set()))[i].add(a)
        changed = {}
        for path, (added, removed) in by_path.items():
            changed[path] = self._update_acl_document(path, added, removed)
        self._cache_acls(changed)

    def _update_acl_document(self, path: str, added: set, removed: set) -> tuple[AclBinding, ...]:
        for _ in range(10):
            try:
                data, stat = self.client.get(path)
                current = znodes.AclDocument.decode(path, data).acls if data else ()
            except NoNodeError:
                data, stat, current = None, None, ()
            acls = tuple(dict.fromkeys(a for a in current if a not in removed)) + tuple(
                a for a in sorted(added) if a not in current)
            try:
                if stat is None:
                    if acls:
                        self.client.create(path, znodes.AclDocument(acls).encode(), makepath=True)
                elif acls:
                    self.client.set(path, znodes.AclDocument(acls).encode(), version=stat.version)
                else:
                    self.client.delete(path, version=stat.version)
                return acls
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue   # another broker changed it meanwhile: merge into theirs
        raise errors.RequestTimedOutError(f"the ACLs at {path} keep changing; try again")

    @_zk_errors
    def set_partitions(self, name: str, count: int) -> TopicInfo:
        """Grow ``name`` to ``count`` partitions, the new ones assigned round-robin."""
        for _ in range(5):
            try:
                data, stat = self.client.get(znodes.topic_path(name))
            except NoNodeError:
                raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist") from None
            old = znodes.TopicAssignment.decode(name, data)
            current = old.partitions
            if count <= len(current):
                raise errors.InvalidPartitionsError(
                    f"Topic currently has {len(current)} partitions, which is higher than or equal "
                    f"to the requested {count}.")
            rf = len(next(iter(current.values()))) if current else 1
            new = dict(current)
            racks = self._racks()
            ids = sorted(racks)
            # continue from partition 0's leader, as Kafka does when a topic grows
            first = current[min(current)][0] if current else ids[0] if ids else 0
            start = next((i for i, b in enumerate(ids) if b >= first), 0)
            new.update(assign_replicas(racks, count - len(current), rf, start=start,
                                       first_partition=len(current)))
            try:
                self.client.set(znodes.topic_path(name), replace(old, partitions=new).encode(),
                                version=stat.version)
            except BadVersionError:
                continue  # someone else changed it meanwhile: start over from theirs
            info = self._topics.get(name) or TopicInfo(name, 0, topic_id=old.topic_id or UUID_ZERO)
            return replace(info, partitions=count)
        raise errors.RequestTimedOutError(f"topic {name!r} keeps changing; try again")
