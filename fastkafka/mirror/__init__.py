"""Mirroring topics between clusters (issue 20): ``fastkafka mirror`` and :class:`Mirror`.

The seeds' answer to several data centres: "the mirror cluster runs as a consumer of the source
cluster". A mirror is a client program -- consumer streams of one group on the source, producers
on the target -- built on :mod:`fastkafka.client` only:

* :mod:`.naming` -- which topics (list, whitelist, blacklist), MirrorMaker 2 names
  (``<alias>.<topic>``) and the rule that keeps active/active pairs from looping;
* :mod:`.topics` -- target topics created and kept like the source's (partitions, configs);
* :mod:`.convert` -- fetched batches to target record streams (copied as they are when possible);
* :mod:`.prefetch` -- fetching ahead of the sender; :mod:`.stream` -- one group member's loop;
* :mod:`.delivery` -- at-least-once, and exactly-once with a transaction per copy (the design);
* :mod:`.progress` -- records/s, bytes/s, lag; :mod:`.mirror` -- :class:`Mirror` ties them up;
* offset translation, MirrorMaker 2's: :mod:`.syncs` -- which target offset each source offset
  was copied to; :mod:`.checkpoints` -- consumer groups' offsets translated for the target
  (:func:`translate_offsets`, :func:`apply_offsets`); :mod:`.internal` -- their topics.

Example::

    from fastkafka.mirror import Mirror
    m = Mirror("dc1:9092", "dc2:9092", whitelist="orders.*", exactly_once=True)
    m.run()          # until m.stop() from another thread (the command: until SIGTERM)

    # later, group billing moves from dc1 to dc2 (its consumers stopped on dc2):
    from fastkafka.mirror import apply_offsets, translate_offsets
    offsets = translate_offsets("dc2:9092", "billing", source_alias="source")
    apply_offsets("dc2:9092", "billing", {tp: c.downstream for tp, c in offsets.items()})
"""
from __future__ import annotations

from .checkpoints import Checkpoint, apply_offsets, translate_offsets
from .mirror import DEFAULT_GROUP, Mirror
from .naming import TopicSelector
from .syncs import OffsetSync

__all__ = ["Mirror", "TopicSelector", "DEFAULT_GROUP", "translate_offsets", "apply_offsets", "Checkpoint",
           "OffsetSync"]
