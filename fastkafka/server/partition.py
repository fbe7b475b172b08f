"""One local replica of a partition: its role, and as leader, what it knows of its followers.

Kafka's replication rules, as a leader applies them (DESIGN §6):

* a follower's fetch at offset ``o`` says it holds everything below ``o`` (its log end offset);
* the high watermark is the smallest log end offset over the ISR (the leader's own included),
  and never moves back while this replica leads;
* a follower is *caught up* when it fetched from the leader's log end, or from where the log
  ended at its previous fetch (it read all there was then); one that has not been caught up for
  ``replica.lag.time.max.ms`` leaves the ISR, and one outside it whose log end reached the high
  watermark (and the start of this leader's epoch) joins again.

The ISR proposed here is written by :class:`~fastkafka.server.replica_manager.ReplicaManager`
(a conditional ZooKeeper update); this module only decides. Thread-safe.

Example::

    >>> from types import SimpleNamespace
    >>> log = SimpleNamespace(log_end_offset=10, high_watermark=0, high_watermark_follows_end=False,
    ...                       leader_epochs=SimpleNamespace(assign=lambda e, o: None))
    >>> log.update_high_watermark = lambda o: setattr(log, "high_watermark", o) or o
    >>> p = Partition("orders", 0, 1, log)
    >>> p.become_leader(epoch=3, replicas=(1, 2, 3), isr=(1, 2, 3), version=0, now=0)
    >>> p.follower_fetched(2, 10, now=5), p.follower_fetched(3, 7, now=5), log.high_watermark
    (False, True, 7)
    >>> p.isr_to_shrink(now=35_003, lag_ms=35_000)
    (1, 2)
"""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, NamedTuple

from fastkafka import errors

if TYPE_CHECKING:
    from fastkafka.log import Log

__all__ = ["Partition", "LEADER", "FOLLOWER", "NONE", "ACKS_ALL", "Replication", "append_as_leader",
           "acks_all_code"]

NONE, LEADER, FOLLOWER = "none", "leader", "follower"
ACKS_ALL = -1
_NOT_LEADER = errors.NotLeaderOrFollowerError.code
_TOO_FEW_AFTER = errors.NotEnoughReplicasAfterAppendError.code


class Replication(NamedTuple):
    """What a leader's write waits on for acks=all: the high watermark of ``log`` reaching
    ``required`` (the offset after the write) while ``part`` still leads in the ``epoch`` the
    write was stamped with -- a leadership lost and won back meanwhile may have truncated it."""

    log: Log
    part: Partition
    required: int
    epoch: int

    @property
    def key(self) -> tuple[str, int]:
        """The partition, as the purgatories watch it."""
        return self.part.topic, self.part.partition


def append_as_leader(lg, part, records, acks: int):
    """Append ``records`` to the leader's log ``lg`` of ``part`` in its leader epoch: what a
    produced batch and a coordinator's write share. NOT_LEADER_OR_FOLLOWER when this broker no
    longer leads; NOT_ENOUGH_REPLICAS before the append when acks=all and the ISR is smaller
    than ``min.insync.replicas``. Returns the log's append info and its :class:`Replication`."""
    with part.leading() as epoch:
        if acks == ACKS_ALL and len(part.isr) < lg.config.min_insync_replicas:
            raise errors.NotEnoughReplicasError(
                f"{part.topic}-{part.partition}: {len(part.isr)} in-sync replicas, min.insync.replicas is "
                f"{lg.config.min_insync_replicas}")
        info = lg.append(records, leader_epoch=epoch)
    return info, Replication(lg, part, info.last_offset + 1, epoch)


def acks_all_code(w: Replication) -> int | None:
    """The answer of a write waiting for acks=all (see :class:`Replication`), or None while it
    must wait."""
    lg, part = w.log, w.part
    if part.role != LEADER or part.leader_epoch != w.epoch or lg.deleted:
        return _NOT_LEADER
    if lg.high_watermark < w.required:
        return None
    return 0 if len(part.isr) >= lg.config.min_insync_replicas else _TOO_FEW_AFTER


class _Follower:
    __slots__ = ("log_end_offset", "log_start_offset", "last_caught_up_ms", "last_fetch_ms",
                 "leader_end_at_last_fetch")

    def __init__(self, now: int):
        self.log_end_offset = -1
        self.log_start_offset = -1        # unknown until its first fetch (v5+) says it
        self.last_caught_up_ms = now      # a new leader gives every follower a full lag period
        self.last_fetch_ms = now
        self.leader_end_at_last_fetch = -1


class Partition:
    """The replication state of one partition on this broker (its Log is ``log``)."""

    def __init__(self, topic: str, partition: int, broker_id: int, log):
        self.topic, self.partition, self.broker_id, self.log = topic, partition, broker_id, log
        self.role = NONE
        self.leader = -1
        self.leader_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.zk_version = -1                # of the state znode this ISR was read or written at
        self.epoch_start_offset = 0         # log end when this replica became leader
        self._followers: dict[int, _Follower] = {}
        self._lock = threading.Lock()
        # Held by a leader's append from its role check to its end, and by every role change
        # (Kafka's leaderIsrUpdateLock): an append that found this replica leading is in the log
        # before it may follow (and truncate); reentrant, since an append's listeners may
        # complete waiting requests on this thread.
        self._role_lock = threading.RLock()

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition} {self.role} epoch={self.leader_epoch} "
                f"isr={list(self.isr)})")

    # --- roles (from the controller's state znode) ---
    @contextlib.contextmanager
    def leading(self):
        """Hold this replica's leadership for one write to its log: yields the leader epoch to
        stamp, raises NotLeaderOrFollowerError when it does not lead. No role change happens
        until the block ends."""
        with self._role_lock:
            if self.role != LEADER:
                raise errors.NotLeaderOrFollowerError(f"{self.topic}-{self.partition}: this broker no longer leads it")
            yield self.leader_epoch

    def become_leader(self, epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...], version: int,
                      now: int) -> None:
        """Lead in ``epoch``. The caller has stopped following first: nothing a fetcher copies may
        land after the epoch's start offset is taken from the log end."""
        with self._role_lock, self._lock:
            new_term = self.role != LEADER or epoch != self.leader_epoch
            self.role, self.leader, self.replicas = LEADER, self.broker_id, tuple(replicas)
            self.leader_epoch, self.zk_version = epoch, version
            self.isr = tuple(isr)
            if new_term:
                self.epoch_start_offset = self.log.log_end_offset
                self.log.leader_epochs.assign(epoch, self.epoch_start_offset)
                self._followers = {r: _Follower(now) for r in replicas if r != self.broker_id}
            else:
                for r in replicas:
                    if r != self.broker_id and r not in self._followers:
                        self._followers[r] = _Follower(now)
            self._apply_isr()

    def become_follower(self, leader: int, epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...],
                        version: int) -> bool:
        """True when this is a new leader or epoch (the fetcher must truncate and start over)."""
        with self._role_lock, self._lock:
            changed = self.role != FOLLOWER or self.leader != leader or self.leader_epoch != epoch
            self.role, self.leader, self.leader_epoch = FOLLOWER, leader, epoch
            self.replicas, self.isr, self.zk_version = tuple(replicas), tuple(isr), version
            self._followers = {}
            self.log.high_watermark_follows_end = False
            return changed

    def become_offline(self) -> None:
        with self._role_lock, self._lock:
            self.role, self.leader = NONE, -1
            self._followers = {}
            self.log.high_watermark_follows_end = False

    def isr_written(self, isr: tuple[int, ...], version: int) -> None:
        """The ISR this leader proposed is in ZooKeeper now (at ``version``)."""
        with self._lock:
            self.isr, self.zk_version = tuple(isr), version
            self._apply_isr()

    def _apply_isr(self) -> None:
        # A follower out of the ISR (the controller saw its broker die, or it lagged) gets back
        # in only by fetching again: its old position must not re-admit a dead broker.
        for r, f in self._followers.items():
            if r not in self.isr:
                f.log_end_offset = -1
        # one in-sync replica: every append commits itself (no waiting on fetches); else the
        # followers' fetches move the high watermark
        alone = self.isr == (self.broker_id,)
        self.log.high_watermark_follows_end = alone
        if not alone:
            self._maybe_increment_hw()

    # --- a leader's bookkeeping ---
    def follower_fetched(self, replica_id: int, fetch_offset: int, now: int) -> bool:
        """A follower fetched from ``fetch_offset``; True when the high watermark moved."""
        with self._lock:
            f = self._followers.get(replica_id)
            if self.role != LEADER or f is None:
                return False
            end = self.log.log_end_offset
            if fetch_offset >= end:
                f.last_caught_up_ms = now
            elif fetch_offset >= f.leader_end_at_last_fetch >= 0:
                f.last_caught_up_ms = f.last_fetch_ms
            f.log_end_offset = fetch_offset
            f.last_fetch_ms = now
            f.leader_end_at_last_fetch = end
            return replica_id in self.isr and self._maybe_increment_hw()

    def follower_log_start(self, replica_id: int, offset: int) -> bool:
        """A follower's fetch said its log starts at ``offset``; True when that changed."""
        with self._lock:
            f = self._followers.get(replica_id)
            if self.role != LEADER or f is None or f.log_start_offset == offset:
                return False
            f.log_start_offset = offset
            return True

    def low_watermark(self, live) -> int:
        """The smallest log start offset over this leader and its followers on ``live`` brokers
        (Kafka's lowWatermarkIfLeader): records below it are gone from every live replica, what
        DeleteRecords waits for. -1 while such a follower has not said where its log starts."""
        with self._lock:
            low = self.log.log_start_offset
            for r, f in self._followers.items():
                if r in live:
                    low = min(low, f.log_start_offset)
            return low

    def _maybe_increment_hw(self) -> bool:
        ends = [self.log.log_end_offset]
        for r in self.isr:
            if r != self.broker_id:
                f = self._followers.get(r)
                ends.append(f.log_end_offset if f is not None else -1)
        hw = min(ends)
        if hw > self.log.high_watermark:
            self.log.update_high_watermark(hw)
            return True
        return False

    def isr_to_shrink(self, now: int, lag_ms: int) -> tuple[int, ...] | None:
        """The ISR without the followers that lag more than ``lag_ms`` (None: no change)."""
        with self._lock:
            if self.role != LEADER:
                return None
            keep = tuple(r for r in self.isr if r == self.broker_id or (
                r in self._followers and now - self._followers[r].last_caught_up_ms <= lag_ms))
            return keep if keep != self.isr else None

    def isr_to_expand(self, live=None) -> tuple[int, ...] | None:
        """The ISR plus the followers that caught up to the high watermark (None: no change).
        Only ``live`` brokers (when given) come back: one whose ZooKeeper session ended would
        be taken out again by the controller at once (KIP-841)."""
        with self._lock:
            if self.role != LEADER:
                return None
            hw = self.log.high_watermark
            back = [r for r, f in self._followers.items()
                    if r not in self.isr and f.log_end_offset >= max(hw, self.epoch_start_offset)
                    and (live is None or r in live)]
            if not back:
                return None
            members = set(self.isr) | set(back)
            return tuple(r for r in self.replicas if r in members)
