"""Keeping the target's topics in step with the source's: creation, partitions, configs.

Every refresh (:meth:`TopicSync.refresh`) lists the source's topics and, for each one the
:class:`~fastkafka.mirror.naming.TopicSelector` selects:

* creates the target topic if it is missing, with the source's partition count and its topic
  configs (``retention.*``, ``cleanup.policy``, ``compression.type``, ``max.message.bytes``, ...);
  replication factor: the target's default unless given;
* adds partitions to the target topic when the source grew (never removes any);
* with ``configs=True`` sets the source's configs on the target where they differ, so a change on
  the source is followed (an override deleted on the source is left on the target: the target
  may have its own reasons for it).

Copied configs are those the source reports as not default, minus the ones that describe a
cluster rather than the data -- MirrorMaker 2's exclusions: replication throttles,
``min.insync.replicas``, ``unclean.leader.election.enable``, ``message.timestamp.*``.

It returns the :class:`~fastkafka.mirror.convert.Route` of every topic ready on both sides: the
streams subscribe to those and nothing else, so records never reach a target topic that the
broker would auto-create with its defaults.

Example::

    sync = TopicSync(AdminClient(source), AdminClient(target), TopicSelector(whitelist="orders.*"))
    routes = sync.refresh(configs=True)      # {"orders": Route("orders", "orders", 3, 3), ...}
"""
from __future__ import annotations

import logging

from fastkafka import errors
from fastkafka.client import AdminClient

from .convert import Route
from .naming import TopicSelector

__all__ = ["TopicSync", "EXCLUDED_CONFIGS"]

log = logging.getLogger("fastkafka.mirror")

EXCLUDED_CONFIGS = frozenset({
    "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "message.timestamp.difference.max.ms", "message.timestamp.type",
    "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    "unclean.leader.election.enable", "min.insync.replicas",
})


class TopicSync:
    """Creates and updates target topics for the selected source topics. One thread uses it."""

    def __init__(self, source: AdminClient, target: AdminClient, selector: TopicSelector, *,
                 replication_factor: int = -1):
        self.source, self.target = source, target
        self.selector = selector
        self.replication_factor = replication_factor

    def refresh(self, configs: bool = False) -> dict[str, Route]:
        """Bring the target in step; ``{source topic: Route}`` of the topics ready to mirror."""
        source = self.source.describe_topics()
        target = self.target.describe_topics()
        routes = {}
        for name, info in sorted(source.items()):
            if info.error_code or not info.partitions or not self.selector.selects(name, info.is_internal):
                continue
            tname = self.selector.target_topic(name)
            n = len(info.partitions)
            try:
                tinfo = target.get(tname)
                if tinfo is None or tinfo.error_code:
                    tn = self._create(name, tname, n)
                else:
                    tn = len(tinfo.partitions)
                    if tn < n:
                        self.target.create_partitions(tname, n)
                        log.info("%s grown to %d partitions like %s", tname, n, name)
                        tn = n
                    if configs:
                        self._update_configs(name, tname)
            except errors.KafkaError as e:
                log.warning("cannot prepare target topic %s for %s: %s", tname, name, e)
                continue
            routes[name] = Route(name, tname, n, tn)
        return routes

    def copyable_configs(self, topic: str) -> dict[str, str]:
        """The source topic's configs the target topic gets."""
        return {k: v for k, (v, is_default, _ro) in self.source.describe_configs(topic).items()
                if not is_default and v is not None and k not in EXCLUDED_CONFIGS}

    def _create(self, name: str, tname: str, n: int) -> int:
        configs = self.copyable_configs(name)
        try:
            self.target.create_topic(tname, n, self.replication_factor, configs)
            log.info("created %s (%d partitions, %s) for %s", tname, n, configs or "no configs", name)
            return n
        except errors.TopicAlreadyExistsError:    # another mirror process was faster
            return len(self.target.describe_topics([tname])[tname].partitions)

    def _update_configs(self, name: str, tname: str) -> None:
        want = self.copyable_configs(name)
        have = {k: v for k, (v, _d, _ro) in self.target.describe_configs(tname).items()}
        changed = {k: v for k, v in want.items() if have.get(k) != v}
        if changed:
            self.target.alter_configs(tname, changed)
            log.info("%s configs set like %s: %s", tname, name, changed)
