"""The controller's election rules and the replica assignment, as pure functions."""
import itertools
from collections import Counter

import pytest

from fastkafka import errors
from fastkafka.cluster import election
from fastkafka.cluster.assignment import assign_replicas
from fastkafka.cluster.znodes import NO_LEADER, PartitionState as S

R = (1, 2, 3)


def test_new_partition_prefers_an_eligible_replica():
    assert election.initial(R, {1, 2, 3}, {1, 2, 3}, 7) == S(1, 0, (1, 2, 3), 7)
    assert election.initial(R, {1, 2, 3}, {2, 3}, 7) == S(2, 0, (1, 2, 3), 7)
    assert election.initial(R, {1}, set(), 7) == S(1, 0, (1,), 7)
    assert election.initial(R, set(), set(), 7) == S(NO_LEADER, 0, (1,), 7)


@pytest.mark.parametrize("state, live, eligible, unclean, want", [
    # all well: nothing to write
    (S(1, 3, (1, 2, 3), 1), {1, 2, 3}, {1, 2, 3}, False, None),
    # a follower died or is shutting down: it leaves the ISR, same leader and epoch
    (S(1, 3, (1, 2, 3), 1), {1, 3}, {1, 3}, False, S(1, 3, (1, 3), 9)),
    (S(1, 3, (1, 2, 3), 1), {1, 2, 3}, {1, 3}, False, S(1, 3, (1, 3), 9)),
    # the leader is shutting down: the first eligible ISR member takes over
    (S(1, 3, (1, 2, 3), 1), {1, 2, 3}, {2, 3}, False, S(2, 4, (2, 3), 9)),
    # ... with no one to take over it stays
    (S(1, 3, (1,), 1), {1, 2, 3}, {2, 3}, False, None),
    # the leader died: first live ISR member in assignment order
    (S(1, 3, (3, 1, 2), 1), {2, 3}, {2, 3}, False, S(2, 4, (2, 3), 9)),
    # no ISR member left: offline, ISR kept
    (S(1, 3, (1,), 1), {2, 3}, {2, 3}, False, S(NO_LEADER, 4, (1,), 9)),
    (S(NO_LEADER, 4, (1,), 9), {2, 3}, {2, 3}, False, None),
    # unclean: the first live replica outside the ISR
    (S(1, 3, (1,), 1), {2, 3}, {2, 3}, True, S(2, 4, (2,), 9)),
    (S(NO_LEADER, 4, (1,), 9), {3}, {3}, True, S(3, 5, (3,), 9)),
    # an ISR member comes back to an offline partition
    (S(NO_LEADER, 4, (1,), 9), {1}, {1}, False, S(1, 5, (1,), 9)),
])
def test_reconciled(state, live, eligible, unclean, want):
    assert election.reconciled(state, R, live, eligible, unclean, 9) == want


def test_preferred_election():
    assert election.preferred(S(2, 5, (2, 1), 3), R, {1, 2}, 9) == S(1, 6, (2, 1), 9)
    with pytest.raises(errors.ElectionNotNeededError):
        election.preferred(S(1, 5, (1, 2), 3), R, {1, 2}, 9)
    with pytest.raises(errors.PreferredLeaderNotAvailableError):     # out of sync
        election.preferred(S(2, 5, (2, 3), 3), R, {1, 2, 3}, 9)
    with pytest.raises(errors.PreferredLeaderNotAvailableError):     # shutting down
        election.preferred(S(2, 5, (2, 1), 3), R, {2, 3}, 9)


def test_unclean_election_on_request():
    assert election.unclean(S(NO_LEADER, 5, (1,), 3), R, {2}, {2}, 9) == S(2, 6, (2,), 9)
    with pytest.raises(errors.ElectionNotNeededError):
        election.unclean(S(2, 5, (2,), 3), R, {2}, {2}, 9)
    with pytest.raises(errors.EligibleLeadersNotAvailableError):
        election.unclean(S(NO_LEADER, 5, (1,), 3), R, set(), set(), 9)


@pytest.mark.parametrize("n, rf", [(3, 3), (5, 3), (6, 2), (4, 4)])
def test_assignment_spreads_leaders_and_followers(n, rf):
    brokers = list(range(1, n + 1))
    parts = 6 * n
    a = assign_replicas(brokers, parts, rf, start=0, shift=0)
    assert all(len(set(r)) == rf for r in a.values())
    assert set(Counter(r[0] for r in a.values()).values()) == {6}          # leaders even
    assert set(Counter(b for r in a.values() for b in r).values()) == {6 * rf}
    if n > rf:   # the shift varies a leader's followers as partitions wrap around
        followers_of_1 = {r[1:] for r in a.values() if r[0] == 1}
        assert len(followers_of_1) > 1


@pytest.mark.parametrize("racks, rf", [
    ({1: "a", 2: "a", 3: "b"}, 2), ({1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}, 3),
    ({1: "a", 2: "a", 3: "b", 4: "b"}, 3)])
def test_rack_aware_assignment_uses_every_rack_first(racks, rf):
    n_racks = len(set(racks.values()))
    for start, shift in itertools.product(range(len(racks)), range(3)):
        a = assign_replicas(racks, 12, rf, start=start, shift=shift)
        for replicas in a.values():
            assert len(set(replicas)) == rf
            assert len({racks[b] for b in replicas}) == min(rf, n_racks), (start, shift, replicas)


def test_partial_racks_are_ignored():
    assert assign_replicas({1: "a", 2: None, 3: "b"}, 3, 2, start=0, shift=0) == \
        assign_replicas([1, 2, 3], 3, 2, start=0, shift=0)
