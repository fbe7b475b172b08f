"""A consumer group member's way from its current assignment to its target (Kafka's
CurrentAssignmentBuilder), one heartbeat at a time.

A member is in one of three states (plus UNKNOWN, a member that lost track):

- STABLE: it owns exactly its target at its member epoch;
- UNREVOKED_PARTITIONS: it must first give up ``pending_revocation``; it keeps its old epoch
  (so it can still commit their offsets) until a heartbeat shows it no longer owns them;
- UNRELEASED_PARTITIONS: it has its new epoch, but some partitions of its target still belong
  to another member (that one has not revoked them yet); it gets them on a later heartbeat.

A partition is never handed to a member while another member's ``partition_epoch`` holds it:
that is what keeps two consumers from reading one partition at once.

Example (a member must give partition 1 to another)::

    >>> m = Reconciliation(epoch=3, assigned={"t": {0, 1}})
    >>> step(m, 4, {"t": {0}}, lambda t, p: 3, owned=[("t", [0, 1])])
    Reconciliation(state='UNREVOKED_PARTITIONS', epoch=3, assigned={'t': {0}}, pending_revocation={'t': {1}})
    >>> step(_, 4, {"t": {0}}, lambda t, p: -1, owned=[("t", [0])])
    Reconciliation(state='STABLE', epoch=4, assigned={'t': {0}}, pending_revocation={})
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from .. import errors

__all__ = ["STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS", "UNKNOWN", "Reconciliation", "step"]

STABLE = "STABLE"
UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"
UNKNOWN = "UNKNOWN"

Partitions = dict[object, set[int]]


class Reconciliation(NamedTuple):
    """Where a member stands: its state, member epoch, the partitions it may use and those it
    must give up first."""
    state: str = STABLE
    epoch: int = 0
    assigned: Partitions = {}
    pending_revocation: Partitions = {}


def step(m: Reconciliation, target_epoch: int, target: Partitions,
         partition_epoch: Callable[[object, int], int], owned: list[tuple[object, list[int]]] | None
         ) -> Reconciliation:
    """The member's next state toward ``target`` (at ``target_epoch``). ``partition_epoch(t, p)``
    is the epoch of the member holding ``p`` (-1: nobody); ``owned`` what the heartbeat says the
    member owns (None: unchanged since its last one)."""
    if m.state == STABLE:
        return _next(m, m.epoch, target_epoch, target, partition_epoch, owned) \
            if m.epoch != target_epoch else m
    if m.state == UNREVOKED_PARTITIONS:
        if _owns_any(owned, m.pending_revocation):
            return m
        return _next(m, m.epoch + 1, target_epoch, target, partition_epoch, owned)
    if m.state == UNRELEASED_PARTITIONS:
        return _next(m, m.epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or owned:
        raise errors.FencedMemberEpochError("the member is in an unknown state: it must abandon its "
                                            "partitions and rejoin")
    return _next(m, target_epoch, target_epoch, target, partition_epoch, owned)


def _owns_any(owned, partitions: Partitions) -> bool:
    """Whether the heartbeat's owned partitions still include one of ``partitions`` (an absent
    list means nothing changed: assume it still does)."""
    if owned is None:
        return True
    return any(p in partitions.get(tid, ()) for tid, ps in owned for p in ps)


def _next(m: Reconciliation, epoch: int, target_epoch: int, target: Partitions,
          partition_epoch, owned) -> Reconciliation:
    assigned: Partitions = {}
    revoking: Partitions = {}
    adding: Partitions = {}
    unreleased = False
    for tid in set(target) | set(m.assigned):
        want, have = target.get(tid, set()), m.assigned.get(tid, set())
        keep = have & want
        if keep:
            assigned[tid] = keep
        if have - want:
            revoking[tid] = have - want
        free = {p for p in want - keep if partition_epoch(tid, p) == -1}
        unreleased |= len(free) < len(want - keep)
        if free:
            adding[tid] = free
    if revoking and _owns_any(owned, revoking):
        # revoke first, at the old epoch: nothing new until the member has let go
        return Reconciliation(UNREVOKED_PARTITIONS, epoch, assigned, revoking)
    for tid, ps in adding.items():
        assigned[tid] = assigned.get(tid, set()) | ps
    return Reconciliation(UNRELEASED_PARTITIONS if unreleased else STABLE, target_epoch, assigned, {})
