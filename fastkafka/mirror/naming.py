"""Which source topics a mirror copies, and their names on the target (MirrorMaker 2's
replication policy).

Selection is an explicit list, a whitelist or a blacklist regex (the seeds' TopicFilter: a
Java-style regex over the whole name, ``,`` also separating alternatives). Never selected,
whatever the filter says: internal topics and any ``__*`` name (``__consumer_offsets``,
``__transaction_state``), MirrorMaker 2's ``*.internal`` topics, and -- given the target's
alias -- a topic carrying that alias as a prefix: it was mirrored *from* the target, and
copying it back would loop forever in an active/active pair.

Naming: with ``prefix`` a topic ``orders`` of the cluster aliased ``dc1`` is ``dc1.orders`` on
the target (MM2's DefaultReplicationPolicy, separator ``.``); without, the name is kept. The
internal topics of offset translation, both on the target, are named after the source's alias
(``source`` when none is given, MM2's default): ``mm2-offset-syncs.<alias>.internal`` and
``<alias>.checkpoints.internal``.

Example (the B -> A half of an active/active pair: ``A.orders`` on B is A's own data)::

    >>> s = TopicSelector(whitelist=".*", source_alias="B", target_alias="A", prefix=True)
    >>> s.selects("orders"), s.selects("A.orders"), s.selects("__consumer_offsets")
    (True, False, False)
    >>> s.target_topic("orders"), s.target_topic("C.orders")
    ('B.orders', 'B.C.orders')
    >>> TopicSelector(topics=["a", "b"]).selects("c")
    False
    >>> offset_syncs_topic("B"), checkpoints_topic(None)
    ('mm2-offset-syncs.B.internal', 'source.checkpoints.internal')
"""
from __future__ import annotations

from fastkafka.client import Blacklist, Whitelist

__all__ = ["TopicSelector", "SEPARATOR", "DEFAULT_SOURCE_ALIAS", "DEFAULT_TARGET_ALIAS", "offset_syncs_topic",
           "checkpoints_topic"]

SEPARATOR = "."
DEFAULT_SOURCE_ALIAS = "source"      # MM2's source.cluster.alias default
DEFAULT_TARGET_ALIAS = "target"      # and target.cluster.alias


def offset_syncs_topic(source_alias: str | None) -> str:
    """The offset-syncs topic (on the target) of a mirror from the cluster ``source_alias``."""
    return f"mm2-offset-syncs{SEPARATOR}{source_alias or DEFAULT_SOURCE_ALIAS}{SEPARATOR}internal"


def checkpoints_topic(source_alias: str | None) -> str:
    """The checkpoints topic (on the target) of a mirror from the cluster ``source_alias``."""
    return f"{source_alias or DEFAULT_SOURCE_ALIAS}{SEPARATOR}checkpoints{SEPARATOR}internal"


class TopicSelector:
    """The mirror's topic filter and naming; exactly one of ``topics``, ``whitelist``,
    ``blacklist`` (none: every topic)."""

    def __init__(self, topics: list[str] | None = None, whitelist: str | None = None,
                 blacklist: str | None = None, *, source_alias: str | None = None,
                 target_alias: str | None = None, prefix: bool = False):
        if sum(x is not None for x in (topics, whitelist, blacklist)) > 1:
            raise ValueError("give one of topics, whitelist, blacklist")
        if prefix and not source_alias:
            raise ValueError("prefixed topic names need a source alias")
        for alias in (source_alias, target_alias):
            if alias is not None and (not alias or SEPARATOR in alias):
                raise ValueError(f"a cluster alias must be non-empty without {SEPARATOR!r}: {alias!r}")
        self.topics = None if topics is None else frozenset(topics)
        self.filter = (Whitelist(whitelist) if whitelist is not None else
                       Blacklist(blacklist) if blacklist is not None else None)
        self.source_alias, self.target_alias, self.prefix = source_alias, target_alias, prefix

    def selects(self, topic: str, internal: bool = False) -> bool:
        """Whether ``topic`` of the source is mirrored."""
        if internal or topic.startswith("__") or topic.endswith(".internal"):
            return False
        if self.came_from_target(topic):
            return False
        if self.topics is not None:
            return topic in self.topics
        return self.filter is None or self.filter.matches(topic)

    def came_from_target(self, topic: str) -> bool:
        """``topic`` names the target's alias among its prefixes: the target's own data."""
        return self.target_alias is not None and self.target_alias in topic.split(SEPARATOR)[:-1]

    def target_topic(self, topic: str) -> str:
        """The name ``topic`` has on the target."""
        return f"{self.source_alias}{SEPARATOR}{topic}" if self.prefix else topic
