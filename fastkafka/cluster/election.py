"""The controller's rules for a partition's leader and ISR, as pure functions of what it knows.

``live`` are the registered brokers; ``eligible`` those of them not in controlled shutdown (a
broker on its way out keeps serving, but is neither elected nor kept in an ISR while someone
else can take its place). The rules are Kafka's ZooKeeper-mode controller's:

* a new partition: the first eligible replica leads (the preferred one when it is up), in epoch
  0, with every live replica in the ISR;
* a follower's broker died or is shutting down: it leaves the ISR at once, leader and epoch
  unchanged (acks=all then waits for the others only);
* the leader is shutting down: the first eligible ISR member takes over (epoch + 1); with none,
  the leader stays until it is gone;
* the leader is dead: the first eligible ISR member in assignment order leads (epoch + 1). With
  none, the partition goes offline (leader -1) keeping its ISR, so it comes back with one of
  them — unless unclean election is enabled (``unclean.leader.election.enable``), which elects
  the first eligible replica outside the ISR with itself as the ISR, accepting the loss of what
  only the ISR held;
* preferred election (ElectLeaders type 0, ``auto.leader.rebalance.enable``): the first
  replica takes over when it is eligible and in the ISR.

Example (replicas 1, 2, 3; broker 1, the leader, died)::

    >>> from fastkafka.cluster.znodes import PartitionState
    >>> s = PartitionState(leader=1, leader_epoch=4, isr=(1, 2, 3), controller_epoch=7)
    >>> reconciled(s, (1, 2, 3), live={2, 3}, eligible={2, 3}, unclean=False, controller_epoch=8)
    PartitionState(leader=2, leader_epoch=5, isr=(2, 3), controller_epoch=8)
    >>> preferred(PartitionState(2, 5, (2, 3, 1), 8), (1, 2, 3), eligible={1, 2, 3}, controller_epoch=8)
    PartitionState(leader=1, leader_epoch=6, isr=(2, 3, 1), controller_epoch=8)
"""
from __future__ import annotations

from fastkafka import errors

from .znodes import NO_LEADER, PartitionState

__all__ = ["PREFERRED", "UNCLEAN", "reconciled", "preferred", "unclean", "initial", "not_controller",
           "no_such_partition", "election_not_needed"]

PREFERRED, UNCLEAN = 0, 1     # ElectLeaders' election_type


def not_controller() -> errors.NotControllerError:
    """What a broker that is not the active controller answers an election or reassignment."""
    return errors.NotControllerError("This is not the correct controller for this cluster.")


def election_not_needed() -> errors.ElectionNotNeededError:
    return errors.ElectionNotNeededError("Leader election not needed for topic partition.")


def no_such_partition() -> errors.UnknownTopicOrPartitionError:
    return errors.UnknownTopicOrPartitionError("The partition does not exist.")


def initial(replicas: tuple[int, ...], live, eligible, controller_epoch: int) -> PartitionState:
    """A new partition's first state."""
    leader = next((r for r in replicas if r in eligible), None)
    if leader is None:
        leader = next((r for r in replicas if r in live), NO_LEADER)
    isr = tuple(r for r in replicas if r in live) or replicas[:1]
    return PartitionState(leader, 0, isr, controller_epoch)


def reconciled(state: PartitionState, replicas: tuple[int, ...], live, eligible, unclean: bool,
               controller_epoch: int) -> PartitionState | None:
    """The state a partition should move to now, or None to leave it as it is."""
    eligible = {r for r in replicas if r in eligible}   # a replica a reassignment removed leaves the ISR
    if state.leader in eligible:
        isr = tuple(r for r in state.isr if r in eligible)
        if isr != state.isr and state.leader in isr:
            return PartitionState(state.leader, state.leader_epoch, isr, controller_epoch)
        return None
    in_sync = tuple(r for r in replicas if r in state.isr and r in eligible)
    if in_sync:
        return PartitionState(in_sync[0], state.leader_epoch + 1, in_sync, controller_epoch)
    if state.leader in live:
        return None     # shutting down with no one to hand over to: it leads until it is gone
    if unclean:
        out_of_sync = next((r for r in replicas if r in eligible), None)
        if out_of_sync is not None:
            return PartitionState(out_of_sync, state.leader_epoch + 1, (out_of_sync,), controller_epoch)
    if state.leader != NO_LEADER:
        return PartitionState(NO_LEADER, state.leader_epoch + 1, state.isr, controller_epoch)
    return None          # offline, and none of its ISR is back yet


def preferred(state: PartitionState, replicas: tuple[int, ...], eligible,
              controller_epoch: int) -> PartitionState:
    """The state with the preferred (first) replica leading. Raises ELECTION_NOT_NEEDED when it
    already leads, PREFERRED_LEADER_NOT_AVAILABLE when it is down or out of sync."""
    first = replicas[0]
    if state.leader == first:
        raise election_not_needed()
    if first not in eligible or first not in state.isr:
        raise errors.PreferredLeaderNotAvailableError(
            f"Failed to elect leader: preferred replica {first} is not live and in sync "
            f"(live in-sync replicas: {sorted(r for r in state.isr if r in eligible)}).")
    return PartitionState(first, state.leader_epoch + 1, state.isr, controller_epoch)


def unclean(state: PartitionState, replicas: tuple[int, ...], live, eligible,
            controller_epoch: int) -> PartitionState:
    """ElectLeaders type 1: a partition without a live leader gets one even from outside its
    ISR. Raises ELECTION_NOT_NEEDED when it has a live leader, ELIGIBLE_LEADERS_NOT_AVAILABLE
    when no replica is up."""
    if state.leader in live:
        raise election_not_needed()
    new = reconciled(state, replicas, live, eligible, True, controller_epoch)
    if new is None or new.leader == NO_LEADER:
        raise errors.EligibleLeadersNotAvailableError(
            f"Failed to elect leader: none of the replicas {list(replicas)} is live.")
    return new
