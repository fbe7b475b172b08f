"""Checkpoints: the source's consumer groups' positions translated to the target, so a group can
move there and resume -- MirrorMaker 2's checkpoints and ``RemoteClusterUtils.translateOffsets``.

**Emitting** (:class:`Checkpointer`, a thread of the running mirror, every
``emit_checkpoints_interval_s``, MM2's ``emit.checkpoints.interval.seconds``): read what is new in
the offset-syncs topic (:mod:`~fastkafka.mirror.syncs`), list the source's consumer groups
(those matching ``checkpoint_groups``, a regex over the whole name, default all; never the
mirror's own group), and translate each group's committed offsets of the mirrored topics through
the latest sync at or below them (:meth:`~fastkafka.mirror.syncs.SyncStore.translate`: never past
a record the group has not consumed). Each translation becomes a :class:`Checkpoint` record
``(group, target topic, partition) -> (source offset, target offset, metadata)`` in the target's
``<source-alias>.checkpoints.internal`` (one partition, compacted; MM2's layout: key STRING group,
STRING topic, INT32 partition; value INT16 version 0, INT64 upstream, INT64 downstream, STRING
metadata). As in MM2 a checkpoint is written only when it is new: the first for its partition, an
upstream rewind (the group was reset on the source), or a later target offset -- a translation
never moves a group's checkpoint backwards otherwise.

**Syncing them** (``sync_group_offsets_interval_s``, MM2's ``sync.group.offsets.enabled`` and
``.interval.seconds``; off by default as there): every interval the checkpointer also commits the
latest checkpoints for the groups on the target -- only for a group with no members there (state
Empty, or unknown to the target), and per partition only forward of what the group committed on
the target itself (MM2's ``syncGroupOffset``): its consumers, started on the target, resume from
the source's positions without anyone running ``translate-offsets``.

**Using them** (:func:`translate_offsets`, :func:`apply_offsets`; ``fastkafka mirror
translate-offsets``): the latest checkpoints of a group, read from the target alone -- what is
left when the source is gone -- or, given the source, its committed offsets translated now through
the offset syncs. :func:`apply_offsets` commits them for the group on the target, which must have
no active members there (like ``kafka-consumer-groups --reset-offsets``); the group's consumers
then start on the target where the translation says: nothing it had not consumed on the source is
skipped, and at most the records between the sync used and its position are read again.

Example (``dc1`` mirrored into ``dc2``, whose ``orders`` already held 5 records of its own)::

    >>> import tempfile, threading, time
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.server.broker import Broker
    >>> from fastkafka.client import AdminClient, Producer, ProducerData
    >>> from fastkafka.mirror import Mirror
    >>> def cluster(log_dir):
    ...     b = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": log_dir,
    ...                             "group.initial.rebalance.delay.ms": 0}))
    ...     b.startup()
    ...     return b, f"127.0.0.1:{b.port}"
    >>> tmpdir = tempfile.TemporaryDirectory(); tmpdir2 = tempfile.TemporaryDirectory()
    >>> (dc1, source), (dc2, target) = cluster(tmpdir.name), cluster(tmpdir2.name)
    >>> _ = dc1.topics.create("orders", 1); _ = dc2.topics.create("orders", 1)
    >>> with Producer({"bootstrap.servers": target}) as p:
    ...     _ = p.send(ProducerData("orders", None, [b"dc2's own"] * 5))
    >>> with Producer({"bootstrap.servers": source}) as p:
    ...     _ = p.send(ProducerData("orders", None, [b"order %d" % i for i in range(10)]))
    >>> with AdminClient({"bootstrap.servers": source}) as a:     # billing has read 4 of them on dc1
    ...     a.commit_offsets("billing", {("orders", 0): 4})
    >>> m = Mirror(source, target, topics=["orders"], source_alias="dc1", emit_checkpoints_interval_s=0.2)
    >>> t = threading.Thread(target=m.run); t.start()
    >>> for _ in range(600):                      # within 30 s
    ...     if translate_offsets(target, "billing", source_alias="dc1"):
    ...         break
    ...     time.sleep(0.05)
    >>> translate_offsets(target, "billing", source_alias="dc1")   # the sync: dc1's 0 is dc2's 5
    {('orders', 0): Checkpoint(group='billing', topic='orders', partition=0, upstream=4, downstream=6, metadata='')}
    >>> apply_offsets(target, "billing", {("orders", 0): 6})
    >>> with AdminClient({"bootstrap.servers": target}) as a:  # it reads dc1's 1.. 9: no order is missed
    ...     a.committed_offsets("billing")
    {('orders', 0): 6}
    >>> m.stop(); t.join(); dc1.shutdown(); dc2.shutdown(); tmpdir.cleanup(); tmpdir2.cleanup()
"""
from __future__ import annotations

import logging
import re
import struct
import threading
import time
from typing import NamedTuple

from fastkafka import errors
from fastkafka.client import AdminClient, ClientConfig, Producer, ProducerData
from fastkafka.client.admin import partitions_by_topic
from fastkafka.protocol.schema import parse_struct

from .internal import TopicReader, decode_record, encode_record
from .naming import TopicSelector, checkpoints_topic, offset_syncs_topic
from .syncs import SyncStore, read_syncs

__all__ = ["Checkpoint", "Checkpointer", "translate_offsets", "apply_offsets", "sync_group_offsets",
           "read_checkpoints", "EMIT_CHECKPOINTS_INTERVAL_S", "SYNC_GROUP_OFFSETS_INTERVAL_S"]

log = logging.getLogger("fastkafka.mirror")
EMIT_CHECKPOINTS_INTERVAL_S = 60.0       # MM2's emit.checkpoints.interval.seconds default
SYNC_GROUP_OFFSETS_INTERVAL_S = 60.0     # MM2's sync.group.offsets.interval.seconds default
_I16 = struct.Struct(">h")
# MM2's Checkpoint KEY_SCHEMA, and VALUE_SCHEMA_V0 after its HEADER_SCHEMA (an int16 version)
_KEY = parse_struct("CheckpointKey", """
    group                    string
    topic                    string
    partition                int32
""")
_VALUE_VERSION = 0
_VALUE = parse_struct("CheckpointValue", """
    upstream_offset          int64
    offset                   int64     # the downstream one
    metadata                 string
""")
_INACTIVE = ("Empty", "Dead")            # group states without members (Kafka's reset rule)


class Checkpoint(NamedTuple):
    """``group``'s position ``upstream`` in the source partition copied to ``topic``-``partition``
    of the target is ``downstream`` there."""
    group: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    metadata: str = ""

    def key(self) -> bytes:
        return encode_record(_KEY, {"group": self.group, "topic": self.topic, "partition": self.partition})

    def value(self) -> bytes:
        return _I16.pack(_VALUE_VERSION) + encode_record(_VALUE, {
            "upstream_offset": self.upstream, "offset": self.downstream, "metadata": self.metadata})

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> "Checkpoint":
        """Raises CorruptRecordError for a malformed key or value, or another version than 0."""
        k = decode_record(_KEY, key)
        version = _I16.unpack_from(value, 0)[0] if len(value) >= 2 else None
        if version != _VALUE_VERSION:
            raise errors.CorruptRecordError(f"checkpoint version {version} is not known")
        v = decode_record(_VALUE, value, 2)
        return cls(k.group, k.topic, k.partition, v.upstream_offset, v.offset, v.metadata)


def read_checkpoints(reader: TopicReader, into: dict | None = None) -> dict[tuple[str, str, int], Checkpoint]:
    """The latest checkpoint of each ``(group, topic, partition)`` in what ``reader`` has not read."""
    out = {} if into is None else into
    for key, value in reader.read():
        if key is None or value is None:
            continue
        try:
            c = Checkpoint.decode(key, value)
        except errors.CorruptRecordError as e:
            log.warning("skipping a malformed checkpoint in %s: %s", reader.topic, e)
            continue
        out[c.group, c.topic, c.partition] = c
    return out


def _translated(store: SyncStore, selector: TopicSelector, group: str, committed: dict[tuple[str, int], int],
                missing: list | None = None) -> list[Checkpoint]:
    """The checkpoints of ``group``'s ``committed`` source offsets (mirrored topics only); the
    partitions without a translation go to ``missing``."""
    out = []
    for (topic, p), offset in sorted(committed.items()):
        if not selector.selects(topic):
            continue
        d = store.translate((topic, p), offset)
        if d is None or d < 0:
            if missing is not None:
                missing.append(((topic, p), offset, d))
            continue
        out.append(Checkpoint(group, selector.target_topic(topic), p, offset, d))
    return out


class Checkpointer(threading.Thread):
    """The running mirror's checkpoint emitter. ``context`` provides ``source_config``,
    ``target_config``, ``target_props``, ``group`` (never checkpointed), ``selector``,
    ``source_alias``, ``metrics`` (None: off) and ``leads_checkpoints()`` (whether this process
    emits this round: of several mirror processes in one group, one does); ``groups``: a regex of
    the groups to checkpoint (None: all)."""

    def __init__(self, context, interval_s: float, groups: str | None = None, sync_interval_s: float = 0.0):
        super().__init__(name="fastkafka-mirror-checkpoints", daemon=True)
        self.context = context
        self.interval_s = interval_s
        self.groups = re.compile(groups) if groups else None
        self.sync_interval_s = sync_interval_s      # 0: group offsets are not synced
        self.emitted = 0
        self.synced = 0                             # offsets committed on the target by syncing
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()

    def wanted(self, group: str) -> bool:
        return group != self.context.group and (self.groups is None or self.groups.fullmatch(group) is not None)

    def run(self) -> None:
        c = self.context
        alias = c.source_alias
        source = AdminClient(c.source_config)
        syncs = TopicReader(c.target_config, offset_syncs_topic(alias))
        checkpoints = TopicReader(c.target_config, checkpoints_topic(alias))
        target = AdminClient(c.target_config) if self.sync_interval_s > 0 else None
        producer = Producer({**c.target_props, "producer.type": "sync"})
        store = SyncStore()
        last: dict | None = None
        leading = False
        next_sync = time.monotonic() + self.sync_interval_s
        try:
            while True:
                stopping = self._stop_event.wait(self.interval_s)
                if not stopping:     # the streams have let their partitions go when stopping
                    leading = c.leads_checkpoints()
                if not leading:
                    if stopping:
                        return
                    last = None      # another process emits: re-read what it wrote when this one leads
                    continue
                try:
                    if last is None:     # what earlier runs emitted: checkpoints only move forward
                        last = read_checkpoints(checkpoints)
                    self._emit(source, syncs, store, producer, last)
                except errors.KafkaError as e:
                    log.warning("checkpoints not emitted: %s", e)
                if target is not None and last and time.monotonic() >= next_sync:
                    next_sync = time.monotonic() + self.sync_interval_s
                    self._sync_groups(target, last)
                if stopping:
                    return
        finally:
            for closeable in (producer, syncs, checkpoints, source, target):
                if closeable is None:
                    continue
                try:
                    closeable.close()
                except errors.KafkaError as e:
                    log.debug("closing the checkpointer: %s", e)

    def _emit(self, source: AdminClient, syncs: TopicReader, store: SyncStore, producer: Producer,
              last: dict) -> None:
        read_syncs(syncs, store)
        if not store.syncs:
            return
        began = time.monotonic()     # the round translates now: its checkpoints' latency starts
        out = []
        for group in sorted({g for g, _protocol in source.list_groups()}):
            if not self.wanted(group):
                continue
            try:
                committed = source.committed_offsets(group)
            except errors.KafkaError as e:
                log.warning("offsets of group %s not read: %s", group, e)
                continue
            for cp in _translated(store, self.context.selector, group, committed):
                key = (cp.group, cp.topic, cp.partition)
                prev = last.get(key)
                if prev is None or cp.upstream < prev.upstream or cp.downstream > prev.downstream:
                    out.append(cp)
        if out:
            topic = checkpoints_topic(self.context.source_alias)
            ts = int(time.time() * 1000)
            producer.send([ProducerData(topic, cp.key(), [cp.value()], partition=0, timestamp=ts) for cp in out])
            if self.context.metrics is not None:
                self.context.metrics.checkpointed(len(out), time.monotonic() - began)
            for cp in out:
                last[cp.group, cp.topic, cp.partition] = cp
            self.emitted += len(out)
            log.debug("%d checkpoints emitted", len(out))


    def _sync_groups(self, target: AdminClient, last: dict) -> None:
        by_group: dict[str, dict[tuple[str, int], int]] = {}
        for (group, topic, partition), cp in last.items():
            by_group.setdefault(group, {})[topic, partition] = cp.downstream
        for group, offsets in sorted(by_group.items()):
            try:
                self.synced += sync_group_offsets(target, group, offsets)
            except errors.KafkaError as e:   # e.g. members joined meanwhile: the next round tries again
                log.warning("offsets of group %s not synced to the target: %s", group, e)


def sync_group_offsets(target: AdminClient, group: str, offsets: dict[tuple[str, int], int]) -> int:
    """Commit ``offsets`` (translated, ``{(topic, partition): offset}``) for ``group`` on the
    target where they are ahead of what it committed there; nothing while the group has members
    there. The number of offsets committed (MM2's ``syncGroupOffset``)."""
    if target.describe_group(group).group_state not in _INACTIVE:
        return 0
    have = target.committed_offsets(group, partitions_by_topic(sorted(offsets)))
    ahead = {tp: off for tp, off in offsets.items() if have.get(tp, -1) < off}
    if ahead:
        target.commit_offsets(group, _within_logs(target, ahead))
    return len(ahead)


def _within_logs(target: AdminClient, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """``offsets`` raised to each target partition's log start offset: a translation older than
    the target's retention would otherwise leave the group out of range, where its consumers'
    ``auto.offset.reset`` decides -- ``latest`` would skip the whole log."""
    out = dict(offsets)
    for topic in {t for t, _ in offsets}:
        for partition, start in target.list_offsets(topic, -2).items():
            if (topic, partition) in out and out[topic, partition] < start:
                log.info("group offset %d of %s-%d is below the target's log start: %d", out[topic, partition],
                         topic, partition, start)
                out[topic, partition] = start
    return out


def _config(cluster: str | dict | ClientConfig) -> ClientConfig:
    if isinstance(cluster, ClientConfig):
        return cluster
    return ClientConfig({"bootstrap.servers": cluster} if isinstance(cluster, str) else dict(cluster))


def translate_offsets(target: str | dict, group: str, *, source: str | dict | None = None,
                      source_alias: str | None = None, prefix_topics: bool = False,
                      missing: list | None = None) -> dict[tuple[str, int], Checkpoint]:
    """``group``'s offsets for the target cluster: ``{(target topic, partition): Checkpoint}``,
    the target offset in ``.downstream``.

    Without ``source``: the latest checkpoints the mirror from the cluster ``source_alias``
    wrote to the target (MM2's ``RemoteClusterUtils.translateOffsets``; works with the source
    gone; as old as the mirror's last checkpoint round). With ``source`` (bootstrap servers or
    client properties): the group's committed offsets on the source now, translated through the
    offset syncs on the target; the topics are named as the mirror names them (``prefix_topics``:
    ``<source_alias>.<topic>``), and the source partitions that cannot be translated (no sync
    at or below the offset yet) are appended to ``missing`` as ``((topic, partition), offset,
    None or -1)``. See the module's example.
    """
    target_config = _config(target)
    if source is None:
        with TopicReader(target_config, checkpoints_topic(source_alias)) as reader:
            latest = read_checkpoints(reader)
        return {(c.topic, c.partition): c for (g, _t, _p), c in sorted(latest.items()) if g == group}
    selector = TopicSelector(source_alias=source_alias, prefix=prefix_topics)
    store = SyncStore()
    with TopicReader(target_config, offset_syncs_topic(source_alias)) as reader:
        read_syncs(reader, store)
    with AdminClient(_config(source)) as admin:
        committed = admin.committed_offsets(group)
    return {(c.topic, c.partition): c for c in _translated(store, selector, group, committed, missing)}


def apply_offsets(target: str | dict, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` (``{(topic, partition): offset}``) for ``group`` on the target cluster.
    Refused (NonEmptyGroupError) while the group has active members there: their own commits
    would overwrite these."""
    with AdminClient(_config(target)) as admin:
        state = admin.describe_group(group).group_state
        if state not in _INACTIVE:
            raise errors.NonEmptyGroupError(
                f"group {group!r} has active members on the target (state {state}): stop its "
                f"consumers there before committing translated offsets")
        if not offsets:
            return
        try:
            admin.commit_offsets(group, _within_logs(admin, offsets))
        except (errors.UnknownMemberIdError, errors.IllegalGenerationError, errors.RebalanceInProgressError):
            raise errors.NonEmptyGroupError(
                f"group {group!r} got active members on the target while its offsets were being "
                f"committed: stop its consumers there first") from None
