"""Partition reassignment (KIP-455) as pure functions of a topic's assignment znode.

A reassignment of a partition from its original replicas (ORS) to target replicas (TRS) goes
as in Kafka's controller:

1. *start*: the partition's replicas become ``TRS + (ORS - TRS)`` with ``adding`` = TRS - ORS
   and ``removing`` = ORS - TRS recorded beside them (assignment znode version 2). Brokers see
   themselves in the replica list, open the log and follow the leader;
2. *complete* once every target replica is in the ISR: the replicas become TRS, the ISR loses
   the removed ones, and a leader outside TRS hands over to the first in-sync target replica
   (epoch + 1) — one ZooKeeper transaction with the partition's state. Removed brokers then
   delete their copy;
3. *cancel* before that: the replicas go back to ORS (the added ones drop out).

Example (partition 0 moves from brokers 1, 2 to 2, 3)::

    >>> from fastkafka.cluster.znodes import PartitionState, TopicAssignment
    >>> a = start(TopicAssignment({0: (1, 2)}), 0, (2, 3))
    >>> a.partitions[0], a.adding[0], a.removing[0]
    ((2, 3, 1), (3,), (1,))
    >>> completed(a, 0, PartitionState(1, 4, (1, 2), 9), {1, 2, 3}, 9) is None   # 3 not in sync yet
    True
    >>> done, state = completed(a, 0, PartitionState(1, 4, (1, 2, 3), 9), {1, 2, 3}, 9)
    >>> done.partitions[0], done.adding, state
    ((2, 3), {}, PartitionState(leader=2, leader_epoch=5, isr=(2, 3), controller_epoch=9))
    >>> cancel(a, 0).partitions[0]
    (2, 1)
"""
from __future__ import annotations

from fastkafka import errors

from .znodes import PartitionState, TopicAssignment

__all__ = ["start", "cancel", "completed"]


def _with(a: TopicAssignment, p: int, replicas, adding=(), removing=()) -> TopicAssignment:
    parts, add, rem = dict(a.partitions), dict(a.adding), dict(a.removing)
    parts[p] = tuple(replicas)
    add.pop(p, None)
    rem.pop(p, None)
    if adding:
        add[p] = tuple(adding)
    if removing:
        rem[p] = tuple(removing)
    return TopicAssignment(parts, add, rem, a.topic_id)


def start(a: TopicAssignment, p: int, target: tuple[int, ...]) -> TopicAssignment:
    """``a`` with partition ``p`` moving to ``target`` (a reassignment already under way is
    replaced, starting from its original replicas, as Kafka does)."""
    if not target or len(set(target)) != len(target):
        raise errors.InvalidReplicaAssignmentError(
            f"The proposed replicas {list(target)} are empty or repeat a broker.")
    original = a.original(p)
    if tuple(target) == original:
        return _with(a, p, original)
    replicas = tuple(target) + tuple(r for r in original if r not in target)
    return _with(a, p, replicas, [r for r in target if r not in original], [r for r in original if r not in target])


def cancel(a: TopicAssignment, p: int) -> TopicAssignment:
    """``a`` with ``p``'s reassignment undone; NO_REASSIGNMENT_IN_PROGRESS when there is none."""
    if not a.reassigning(p):
        raise errors.NoReassignmentInProgressError(f"No reassignment in progress for partition {p}.")
    return _with(a, p, a.original(p))


def completed(a: TopicAssignment, p: int, state: PartitionState, eligible,
              controller_epoch: int) -> tuple[TopicAssignment, PartitionState] | None:
    """The assignment and state that finish ``p``'s reassignment, or None while a target
    replica is still out of sync (or no in-sync target replica can lead)."""
    target = a.target(p)
    if not all(r in state.isr for r in target):
        return None
    leader = state.leader
    if leader not in target or leader not in eligible:
        leader = next((r for r in target if r in eligible), None)
        if leader is None:
            return None
    isr = tuple(r for r in state.isr if r in target)
    return _with(a, p, target), PartitionState(leader, state.leader_epoch + 1, isr, controller_epoch)
