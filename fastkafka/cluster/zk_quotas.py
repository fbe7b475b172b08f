"""Client quotas in ZooKeeper, the part of :class:`~fastkafka.cluster.metadata.ZkMetadata` that
watches and writes them (KIP-55 in ZooKeeper mode).

A user's quotas share ``/config/users/<user>`` with its SCRAM credentials (ZkMetadata's users
cache holds both); client ids' are ``/config/clients/<client-id>`` and a user's per-client
ones ``/config/users/<user>/clients/<client-id>``, cached here as ``(None, client)`` and
``(user, client)``. Every broker watches them all -- the ``/clients`` node of each user with an
exists-watch, since it comes and goes, and a children watch while it exists -- so a quota
written through one broker reaches every broker's :class:`~fastkafka.server.quotas.ClientQuotas`
(a metadata listener) within a ZooKeeper round trip. Writes are conditional updates of one
znode, merged with concurrent ones (a SCRAM change of the same user through another broker).

Example (where each kind of entity lives; ``ZkMetadata.set_quota_configs(entity, configs)``
writes there)::

    >>> znodes.quota_entity_path(("alice@example.com", None))
    '/config/users/alice%40example.com'
    >>> znodes.quota_entity_path(("alice@example.com", "<default>"))
    '/config/users/alice%40example.com/clients/<default>'
    >>> znodes.quota_entity_path((None, "etl job"))
    '/config/clients/etl%20job'
"""
from __future__ import annotations

import functools
import logging
from typing import Mapping

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError, NotEmptyError

from fastkafka import errors
from fastkafka.security.client_quotas import QUOTA_CONFIGS, QuotaConfigsView, QuotaEntity, entity_name, with_entry

from . import znodes

__all__ = ["ZkQuotaConfigs"]

log = logging.getLogger("fastkafka.cluster")


class ZkQuotaConfigs:
    """Mixed into ZkMetadata, whose ``client``, ``_watch``, ``_changed``, ``_cond``, ``_users``,
    ``_cache_user`` and ``_stopped`` it uses; thread-safe as ZkMetadata is."""

    def _init_quotas(self) -> None:
        # /config/clients/<c> as (None, c) and /config/users/<u>/clients/<c> as (u, c)
        self._quota_entities: dict[QuotaEntity, Mapping[str, str]] = {}
        self._quota_view = QuotaConfigsView()
        self._children_watched: set[str] = set()   # /config/users/<u>/clients with a ChildrenWatch

    def _start_quotas(self) -> None:
        self.client.ensure_path(znodes.CONFIG_CLIENTS)
        self.client.ChildrenWatch(znodes.CONFIG_CLIENTS, functools.partial(self._on_quota_children, None))

    def _watch_user_clients(self, user: str) -> None:
        # an exists-watch: /clients may come and go; its children are user/client-id quotas
        self._watch(znodes.config_user_clients_path(user), functools.partial(self._on_user_clients_node, user))

    def _on_user_clients_node(self, user: str, data, _stat) -> bool:
        if self._stopped:
            return False
        path = znodes.config_user_clients_path(user)
        if data is None:
            self._children_watched.discard(path)   # its ChildrenWatch ended with the node
        elif path not in self._children_watched:
            self._children_watched.add(path)
            self.client.ChildrenWatch(path, functools.partial(self._on_quota_children, user))
        return True

    def _on_quota_children(self, user: str | None, children) -> bool:
        """The client ids under ``/config/clients`` (``user`` None) or a user's ``/clients``."""
        if self._stopped:
            return False
        for child in children:
            entity = (user, entity_name(child))
            # its quotas (AlterClientQuotas through any broker)
            self._watch_document(znodes.quota_entity_path(entity), znodes.EntityConfig.configs_of,
                                 functools.partial(self._cache_quota_entity, entity))
        return True

    def _cache_quota_entity(self, entity: QuotaEntity, configs: Mapping[str, str]) -> None:
        with self._cond:
            self._quota_entities = with_entry(self._quota_entities, entity, configs)
        self._changed()

    def quota_configs(self) -> Mapping[QuotaEntity, Mapping[str, str]]:
        """Every client quota entity with its quota configs, ``{(user, client_id): {key: value}}``
        (a snapshot: the same object until a change)."""
        return self._quota_view.of(self._users, self._quota_entities)

    def set_quota_configs(self, entity: QuotaEntity, configs: Mapping[str, str]) -> None:
        """Replace the quota configs of ``(user, client_id)`` in its znode, keeping the other
        entries (a user's SCRAM credentials) -- a conditional update, so a concurrent change
        through another broker is merged, not lost; this broker's cache follows at once.
        ZooKeeper trouble is a retriable REQUEST_TIMED_OUT."""
        try:
            self._write_quota_configs(entity, configs)
        except KazooException as e:
            raise errors.RequestTimedOutError(f"ZooKeeper: {type(e).__name__}") from None

    def _write_quota_configs(self, entity: QuotaEntity, configs: Mapping[str, str]) -> None:
        path = znodes.quota_entity_path(entity)
        for _ in range(10):
            try:
                data, stat = self.client.get(path)
                current = znodes.EntityConfig.decode(path, data).config if data else {}
            except NoNodeError:
                stat, current = None, {}
            entries = {k: v for k, v in current.items() if k not in QUOTA_CONFIGS}
            entries.update(configs)
            doc = znodes.EntityConfig(entries).encode()
            try:
                if stat is None:
                    if entries:
                        self.client.create(path, doc, makepath=True)
                elif entries:
                    self.client.set(path, doc, version=stat.version)
                else:
                    try:
                        self.client.delete(path, version=stat.version)
                    except NotEmptyError:      # a user with user/client-id quotas below it
                        self.client.set(path, doc, version=stat.version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue   # another broker changed it meanwhile: merge into theirs
            if entity[1] is None:
                self._cache_user(entity[0], entries)
            else:
                self._cache_quota_entity(entity, entries)
            return
        raise errors.RequestTimedOutError(f"the quotas at {path} keep changing; try again")
