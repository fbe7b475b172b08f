"""How a mirror stream hands records to the target and remembers how far it got.

**At least once** (:class:`AtLeastOnce`, the default). One idempotent producer per stream sends
each poll's chunks in one pipelined call and waits for the target's acknowledgement (acks=all);
only then does a source partition's position count as delivered. Delivered positions are
committed to the source group every ``commit_interval_ms``, before every rebalance and on
shutdown, so a commit never covers a record the target has not acknowledged. A crash loses at
most the acknowledged-but-uncommitted tail's commit: those records are sent again (duplicates,
in order -- a restart resends a contiguous range from the committed offset on).

**Exactly once** (:class:`ExactlyOnce`, ``--exactly-once``). The copied records and the source
position they end at are written to the target in one Kafka transaction, so a read_committed
consumer of the target sees each record once whatever is killed when. The design:

1. *One transactional id per stream*: ``<group>-stream-<slot>``, one producer, one transaction
   per commit covering every partition the stream copied (KIP-447's shape, Kafka Streams'
   exactly_once_v2): three coordinator round trips per commit, not three per partition. The
   slot is the stream's number in the group's generation, handed out by the group's leader
   (sticky: a member keeps its number across rebalances; unique: streams of several mirror
   processes never share an id and fence each other). A restarted mirror's streams get the
   numbers of the killed incarnation's (the smallest free), so their ``init_transactions``
   fence it and abort its open transactions at once, before a position is read.
2. *Positions live on the target*: ``send_offsets_to_transaction({(target topic, partition):
   next source offset}, group)`` commits the source position as an offset of ``group`` **on the
   target cluster**, in the same transaction as the copies (the transaction coordinator is the
   target's; MM2's exactly-once keeps its source offsets on the target for the same reason).
   COMMIT makes both visible at once; ABORT drops both. The offset is filed under the *target*
   topic's name and the *source* partition number, because a broker accepts offsets only for
   partitions it has (Kafka's rule too): the target topic always has at least the source's
   partitions (the topic sync creates and grows it so), a prefixed source name may not exist
   there at all. So on the target, ``group``'s offsets of ``dc1.orders`` are positions in the
   source's ``orders`` -- not positions in ``dc1.orders``, whatever a lag tool makes of them.
3. *The group coordinator fences zombies*: a partition's next owner may be another stream (of
   this process or another) with another transactional id, so its ``init_transactions`` fences
   nobody. Instead the copies' offsets are sent with the member's group metadata (member id,
   generation): the coordinator refuses them once the group has moved on from that generation
   -- a paused or cut-off stream that missed a rebalance can no longer commit, and its
   transaction is aborted. For that the mirror's group *membership* lives on the target too
   (the stream joins the target's coordinator; the assignment is still computed from the
   source's partitions): a coordinator can only check the generation of a group it runs. A
   stream commits before it rejoins (its generation is still current then), as Streams does.
   The next owner reads the position with ``require_stable``: while the previous owner's commit
   is still having its markers written, the coordinator answers UNSTABLE_OFFSET_COMMIT and the
   read waits -- it is exactly the end of the last committed copy. Fetching resumes there.
4. *The source is read read_committed*: aborted source transactions are never copied, and
   fetching stops at the source's last stable offset.

So at any kill point: before EndTxn the restart aborts the transaction and copies the range
again; after it the range is committed and the restart starts behind it. A transaction spans up
to ``commit_interval_ms`` (default 100 ms, like Kafka Streams). After each commit the position is
also committed to the source group (outside any generation: the group has no members on the
source), for lag tools only; it is read back only for partitions the target has no offset of
(a mirror switching from at-least-once). Read the target with ``isolation.level=read_committed``.

Both classes take the stream's source :class:`~fastkafka.client.group_member.GroupMember` and
are driven by one stream thread: ``start`` (assignment -> start offsets), ``send``, ``commit``,
``revoke`` (commit, then let go), ``abandon`` (after an error: drop without committing), ``close``.
Given a :class:`~fastkafka.mirror.syncs.SyncTracker`, both hand it what the target acknowledged
(each chunk's offset there) for the offset syncs, and flush its waiting syncs when they commit.
"""
from __future__ import annotations

import logging
import time
from typing import Callable

from fastkafka import errors
from fastkafka.client import AdminClient, Producer
from fastkafka.client.admin import partitions_by_topic
from fastkafka.client.group_member import GroupMember

from .convert import Converted
from .syncs import SyncTracker

__all__ = ["AtLeastOnce", "ExactlyOnce", "transactional_id"]

log = logging.getLogger("fastkafka.mirror")
_STABLE_WAIT_S = 120    # a previous owner's open transaction ends by transaction.timeout.ms (60 s) at worst


def transactional_id(group: str, slot: int) -> str:
    """The transactional id of the stream numbered ``slot`` in ``group``'s generation.

    >>> transactional_id("KafkaMirror", 3)
    'KafkaMirror-stream-3'
    """
    return f"{group}-stream-{slot}"


class AtLeastOnce:
    """One idempotent producer per stream; positions committed to the source group after the
    target acknowledged them."""

    exactly_once = False
    transactions = 0        # none: see ExactlyOnce
    commits_when_caught_up = False      # delivered records are visible already: the interval will do

    def __init__(self, member: GroupMember, target: dict, syncs: SyncTracker | None = None):
        self.member = member
        self.target = target
        self.syncs = syncs
        self.producer: Producer | None = None
        self.delivered: dict[tuple[str, int], int] = {}
        self.committed: dict[tuple[str, int], int] = {}

    def start(self, tps) -> dict[tuple[str, int], int]:
        """The committed source offsets of the newly assigned ``tps`` (missing: none yet)."""
        self.committed = self.member.committed(tps)
        self.delivered = dict(self.committed)
        return dict(self.committed)

    def send(self, parts: list[Converted]) -> None:
        chunks = [c for part in parts for c in part.chunks]
        if chunks:
            if self.producer is None:
                self.producer = Producer(self.target)
            acked = self.producer.send_encoded(chunks)
            if self.syncs is not None:
                i = 0
                for part in parts:
                    n = len(part.chunks)
                    if n:
                        self.syncs.acknowledged(part, acked[i:i + n])
                        i += n
        for part in parts:
            self.delivered[part.source] = part.next_offset

    def commit(self) -> None:
        todo = {tp: off for tp, off in self.delivered.items() if self.committed.get(tp) != off}
        if todo:
            self.member.commit(todo)
            self.committed.update(todo)
        if self.syncs is not None:
            self.syncs.commit()

    def revoke(self) -> None:
        try:
            self.commit()
        finally:
            self.delivered, self.committed = {}, {}
            if self.syncs is not None:
                self.syncs.forget()

    def abandon(self) -> None:
        """After an error: what was acknowledged is still committed; the producer (whose
        sequence numbers a failed batch has spent) is replaced."""
        try:
            self.commit()
        except errors.KafkaError as e:
            log.warning("commit after an error failed: %s", e)
        self.delivered, self.committed = {}, {}
        if self.syncs is not None:
            self.syncs.forget()
        self._close_producer()

    def close(self) -> None:
        self._close_producer()

    def _close_producer(self) -> None:
        if self.producer is not None:
            try:
                self.producer.close()
            except errors.KafkaError as e:
                log.debug("closing the producer: %s", e)
            self.producer = None


class ExactlyOnce:
    """One transactional producer per stream; each commit is one transaction covering every
    partition the stream copied, its positions committed with the member's group metadata
    (see the module's design notes)."""

    exactly_once = True
    commits_when_caught_up = True       # copies stay invisible to read_committed readers until then

    def __init__(self, member: GroupMember, target: dict, group: str, target_topic: Callable[[str], str],
                 source: AdminClient, syncs: SyncTracker | None = None):
        self.member = member        # the mirror's group on the *target* coordinator (see the notes)
        self.target = target
        self.syncs = syncs
        self.admin = AdminClient(target)     # the target group's offsets (this thread's own)
        self.source = source                 # the source group's offsets (fallback, lag tools)
        self.group = group
        self.target_topic = target_topic
        self.producer: Producer | None = None
        self.open: dict[tuple[str, int], int] | None = None     # source tp -> position, in the open txn
        self.committed: dict[tuple[str, int], int] = {}
        self.source_committed: dict[tuple[str, int], int] = {}
        self.transactions = 0       # committed (for the metrics)

    def start(self, tps) -> dict[tuple[str, int], int]:
        """Fence this stream's earlier incarnation (the first time), then read the positions of
        ``tps`` from the target once no transaction may still change them (falling back to the
        source group's, for partitions never mirrored exactly once)."""
        tid = (transactional_id(self.group, self.member.slot) if self.member.slot >= 0
               else f"{self.group}-{self.member.member_id}")     # a leader that numbers no one
        if self.producer is not None and self.producer.config["transactional.id"] != tid:
            self._close_producer()      # renumbered: revoke() committed, the old id is another's now
        if self.producer is None:
            self.producer = Producer({**self.target, "transactional.id": tid})
            self.producer.init_transactions()
        keys = {tp: self._key(tp) for tp in tps}
        stored = self._stable_offsets(sorted(keys.values())) if keys else {}
        on_target = {tp: stored[key] for tp, key in keys.items() if key in stored}
        missing = [tp for tp in tps if tp not in on_target]
        on_source = self.source.committed_offsets(self.group, partitions_by_topic(missing)) if missing else {}
        self.committed = {**on_source, **on_target}
        self.source_committed = dict(on_source)
        return dict(self.committed)

    def _stable_offsets(self, keys: list) -> dict:
        """The target group's offsets of ``keys``, waiting while a transaction of their previous
        owner (another stream's id) is still being committed or aborted (KIP-447's
        require_stable): reading its offset before its markers would copy its range again."""
        deadline = time.monotonic() + _STABLE_WAIT_S
        while True:
            try:
                return self.admin.committed_offsets(self.group, partitions_by_topic(keys), require_stable=True)
            except errors.UnstableOffsetCommitError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)    # a retry backoff: the other producer's EndTxn is in flight

    def send(self, parts: list[Converted]) -> None:
        """Every partition's chunks into the stream's open transaction (begun if need be), in
        one pipelined call."""
        if self.open is None:
            self.producer.begin_transaction()
            self.open = {}
        sent = [part for part in parts if part.chunks]
        chunks = [c for part in sent for c in part.chunks]
        if chunks:
            acked = self.producer.send_encoded(chunks)
            if self.syncs is not None:      # an aborted copy's syncs stay true: it is copied again later
                i = 0
                for part in sent:
                    n = len(part.chunks)
                    self.syncs.acknowledged(part, acked[i:i + n])
                    i += n
        for part in parts:
            self.open[part.source] = part.next_offset

    def commit(self) -> None:
        """Commit the open transaction with its source positions, as of the member's generation:
        if the group has moved on, the coordinator refuses the offsets and the commit fails."""
        if self.open is None:
            return
        done = self.open        # still open if this fails: abandon() aborts it
        if done:
            self.producer.send_offsets_to_transaction({self._key(tp): off for tp, off in done.items()},
                                                      self.member.group_metadata())
        self.producer.commit_transaction()
        self.open = None
        self.committed.update(done)
        self.transactions += 1
        self._mirror_to_source(done)
        if self.syncs is not None:
            self.syncs.commit()

    def _key(self, tp: tuple[str, int]) -> tuple[str, int]:
        """Where the target files ``tp``'s position: the target topic, the source partition."""
        return self.target_topic(tp[0]), tp[1]

    def _mirror_to_source(self, done: dict) -> None:
        """The position for the source group's lag tools (best effort: the target's counts)."""
        todo = {tp: off for tp, off in done.items() if self.source_committed.get(tp) != off}
        if not todo:
            return
        try:
            self.source.commit_offsets(self.group, todo)
            self.source_committed.update(todo)
        except errors.KafkaError as e:
            log.debug("informational source commit failed: %s", e)

    def revoke(self) -> None:
        """Commit before rejoining (a later commit would carry a stale generation); the
        producer stays: its transactional id is the stream's, whatever it is assigned."""
        try:
            self.commit()
        finally:
            self.committed, self.source_committed = {}, {}
            if self.syncs is not None:
                self.syncs.forget()

    def abandon(self) -> None:
        """After an error: the open transaction is aborted (so read_committed readers of the
        target are not held up to transaction.timeout.ms) and the producer dropped; if the
        abort fails, the next ``start``'s ``init_transactions`` of the same id aborts it. A
        fenced producer's transaction was aborted by whoever fenced it."""
        if self.open is not None and self.producer is not None:
            try:
                self.producer.abort_transaction()
            except errors.KafkaError as e:
                log.debug("aborting after an error: %s", e)
        self.open = None
        self.committed, self.source_committed = {}, {}
        if self.syncs is not None:
            self.syncs.forget()
        self._close_producer()

    def close(self) -> None:
        self.abandon()
        self.admin.close()
        self.source.close()

    def _close_producer(self) -> None:
        if self.producer is not None:
            try:
                self.producer.close()
            except errors.KafkaError as e:
                log.debug("closing the transactional producer: %s", e)
            self.producer = None
