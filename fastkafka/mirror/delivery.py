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

1. *One transactional id per source partition*: ``<group>-<topic>-<partition>``, one producer
   each (Kafka Streams' first exactly-once design; zombie fencing needs no group generation on
   the target, which does not host the source group). All records of a source partition, and
   only they, go through its id's transactions.
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
3. *Fence, then read*: when a stream is assigned a partition it first calls
   ``init_transactions()`` for the partition's id. That fences every earlier producer of the id
   -- a SIGKILLed mirror, or a live one that lost the partition in a rebalance and has not noticed
   -- and completes its last transaction: an open one is aborted, one whose commit was accepted
   is finished (the coordinator answers CONCURRENT_TRANSACTIONS until its markers are written).
   Only then is the group's offset read from the target: it is exactly the end of the last
   committed copy. Fetching resumes there: no record is lost or copied twice, and the fenced
   incarnation can no longer write (its produce, offset commit and EndTxn fail PRODUCER_FENCED).
4. *The source is read read_committed*: aborted source transactions are never copied, and
   fetching stops at the source's last stable offset.

So at any kill point: before EndTxn the restart aborts the transaction and copies the range
again; after it the range is committed and the restart starts behind it. A transaction spans up
to ``commit_interval_ms`` (default 100 ms, like Kafka Streams). After each commit the position is
also committed to the source group, for lag tools only (nothing reads it back while the target
has an offset). Read the target with ``isolation.level=read_committed``.

Both classes take the stream's source :class:`~fastkafka.client.group_member.GroupMember` and
are driven by one stream thread: ``start`` (assignment -> start offsets), ``send``, ``commit``,
``revoke`` (commit, then let go), ``abandon`` (after an error: drop without committing), ``close``.
Given a :class:`~fastkafka.mirror.syncs.SyncTracker`, both hand it what the target acknowledged
(each chunk's offset there) for the offset syncs, and flush its waiting syncs when they commit.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from fastkafka import errors
from fastkafka.client import AdminClient, Producer
from fastkafka.client.admin import partitions_by_topic
from fastkafka.client.group_member import GroupMember

from .convert import Converted
from .syncs import SyncTracker

__all__ = ["AtLeastOnce", "ExactlyOnce", "transactional_id"]

log = logging.getLogger("fastkafka.mirror")
_POOL = 8       # producers of one stream sending or committing at the same time


def transactional_id(group: str, topic: str, partition: int) -> str:
    """The transactional id that owns ``topic``-``partition``'s copies for ``group``.

    >>> transactional_id("KafkaMirror", "orders", 3)
    'KafkaMirror-orders-3'
    """
    return f"{group}-{topic}-{partition}"


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
    """A transactional producer per source partition; copies and positions commit together on
    the target (see the module's design notes)."""

    exactly_once = True
    commits_when_caught_up = True       # copies stay invisible to read_committed readers until then

    def __init__(self, member: GroupMember, target: dict, group: str, target_topic: Callable[[str], str],
                 syncs: SyncTracker | None = None):
        self.member = member
        self.target = target
        self.syncs = syncs
        self.admin = AdminClient(target)     # the target group's offsets (this thread's own)
        self.group = group
        self.target_topic = target_topic
        self.pool: ThreadPoolExecutor | None = None       # the producers' concurrent calls
        self.producers: dict[tuple[str, int], Producer] = {}
        self.open: dict[tuple[str, int], int] = {}       # source tp -> position in the open txn
        self.committed: dict[tuple[str, int], int] = {}
        self.source_committed: dict[tuple[str, int], int] = {}
        self.transactions = 0       # committed (for the metrics)

    def start(self, tps) -> dict[tuple[str, int], int]:
        """Fence every earlier owner of ``tps``, then read their positions from the target
        (falling back to the source group's, for partitions never mirrored exactly once)."""
        new = [tp for tp in sorted(tps) if tp not in self.producers]
        for tp in new:      # an error leaves them to abandon()/close()
            self.producers[tp] = Producer({**self.target, "transactional.id": transactional_id(self.group, *tp)})
        self._each([(Producer.init_transactions, self.producers[tp]) for tp in new])
        keys = {tp: self._key(tp) for tp in tps}
        stored = self.admin.committed_offsets(self.group, partitions_by_topic(sorted(keys.values()))) if keys else {}
        on_target = {tp: stored[key] for tp, key in keys.items() if key in stored}
        missing = [tp for tp in tps if tp not in on_target]
        on_source = self.member.committed(missing) if missing else {}
        self.committed = {**on_source, **on_target}
        self.source_committed = dict(on_source)
        return dict(self.committed)

    def send(self, parts: list[Converted]) -> None:
        """Each partition's chunks into its open transaction (begun if need be); the partitions'
        producers send at the same time, each waiting for its own acknowledgement."""
        for part in parts:
            if part.source not in self.open:
                self.producers[part.source].begin_transaction()
                self.open[part.source] = self.committed.get(part.source, -1)
        sent = [part for part in parts if part.chunks]
        acked = self._each([(self.producers[part.source].send_encoded, part.chunks) for part in sent])
        if self.syncs is not None:      # an aborted copy's syncs stay true: it is copied again later
            for part, mds in zip(sent, acked):
                self.syncs.acknowledged(part, mds)
        for part in parts:
            self.open[part.source] = part.next_offset

    def commit(self) -> None:
        """Commit every open transaction with its source position (all at the same time)."""
        done = {}

        def commit_one(tp_offset):
            tp, offset = tp_offset
            p = self.producers[tp]
            p.send_offsets_to_transaction({self._key(tp): offset}, self.group)
            p.commit_transaction()
            done[tp] = offset
        try:
            self._each([(commit_one, item) for item in self.open.items()])
        finally:
            for tp, offset in done.items():
                del self.open[tp]
                self.committed[tp] = offset
            self.transactions += len(done)
            self._mirror_to_source(done)
            if self.syncs is not None:
                self.syncs.commit()

    def _each(self, calls: list) -> list:
        """``fn(arg)`` for each ``(fn, arg)``, concurrently (each on another producer): their
        results in order; raises the first error once all are done."""
        if len(calls) == 1:
            return [calls[0][0](calls[0][1])]
        if not calls:
            return []
        if self.pool is None:
            self.pool = ThreadPoolExecutor(_POOL, thread_name_prefix="fastkafka-mirror-txn")
        futures = [self.pool.submit(fn, arg) for fn, arg in calls]
        errors_ = [f.exception() for f in futures]
        first = next((e for e in errors_ if e is not None), None)
        if first is not None:
            raise first
        return [f.result() for f in futures]

    def _key(self, tp: tuple[str, int]) -> tuple[str, int]:
        """Where the target files ``tp``'s position: the target topic, the source partition."""
        return self.target_topic(tp[0]), tp[1]

    def _mirror_to_source(self, done: dict) -> None:
        """The position for the source group's lag tools (best effort: the target's counts)."""
        todo = {tp: off for tp, off in done.items() if self.source_committed.get(tp) != off}
        if not todo:
            return
        try:
            self.member.commit(todo)
            self.source_committed.update(todo)
        except errors.KafkaError as e:
            log.debug("informational source commit failed: %s", e)

    def revoke(self) -> None:
        try:
            self.commit()
        finally:
            self._close_all()

    def abandon(self) -> None:
        """After an error: open transactions are left to the next ``init_transactions`` of their
        ids, which aborts them -- whichever stream is assigned the partition next calls it."""
        self._close_all()

    def close(self) -> None:
        self._close_all()
        self.admin.close()
        if self.pool is not None:
            self.pool.shutdown()

    def _close_all(self) -> None:
        if self.syncs is not None:
            self.syncs.forget()
        for p in self.producers.values():
            try:
                p.close()
            except errors.KafkaError as e:
                log.debug("closing a transactional producer: %s", e)
        self.producers, self.open, self.committed, self.source_committed = {}, {}, {}, {}
