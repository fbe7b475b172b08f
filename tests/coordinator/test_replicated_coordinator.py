"""The coordinator over a replicated ``__consumer_offsets`` (cluster mode), without a cluster:
writes answered only once the store says they are replicated (``MemoryOffsetsStore.hold``),
and partitions whose leadership comes and goes (``partition_error``, load/unload)."""
import threading

import pytest

from fastkafka import errors as E
from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore, OffsetAndMetadata
from fastkafka.coordinator.group import COMPLETING_REBALANCE, DEAD, PREPARING_REBALANCE, STABLE

pytestmark = pytest.mark.timeout(30)

PROTO = [("range", b"sub")]
TP = ("t", 0)
NOT_COORDINATOR = E.NotCoordinatorError.code


class Cluster:
    """One broker's coordinator; ``led`` are the offsets partitions it leads."""

    def __init__(self):
        self.now = 1_000_000
        self.store = MemoryOffsetsStore(4)
        self.gc = GroupCoordinator.create(self.store, clock=lambda: self.now, load=False,
                                          initial_rebalance_delay_ms=0)
        self.led = set(range(4))
        self.gc.partition_error = lambda p: 0 if p in self.led else NOT_COORDINATOR
        self.gc.load_partitions(sorted(self.led))

    def join(self, group, member_id=""):
        box = []
        self.gc.join_group(group, member_id, None, "c", "/h", 10_000, 10_000, "consumer", PROTO, box.append)
        return box

    def sync(self, group, generation, member_id, assignments=None):
        box = []
        self.gc.sync_group(group, generation, member_id, None, assignments or {}, box.append)
        return box

    def commit(self, group, offset, member_id="", generation=-1):
        box = []
        self.gc.commit_offsets(group, member_id, generation, {TP: OffsetAndMetadata(offset, "", self.now)},
                               callback=box.append)
        return box

    def committed(self, group):
        code, got = self.gc.fetch_offsets(group, [TP])
        return code, None if got[TP] is None else got[TP].offset

    def partition(self, group):
        return self.gc.manager.partition_for(group)

    def other_group(self, group):
        return next(g for g in (f"o{i}" for i in range(100)) if self.partition(g) != self.partition(group))


def test_a_commit_is_answered_and_visible_only_once_replicated():
    c = Cluster()
    c.store.hold = True
    answers = c.commit("g", 5)
    assert answers == [] and c.committed("g") == (0, None)        # in the log, not yet replicated
    assert c.store.release(0) == 1
    assert answers == [{TP: 0}] and c.committed("g") == (0, 5)

    # the wait ends otherwise: the cache keeps what was replicated, the client hears why
    for code, answer in [(E.RequestTimedOutError.code, E.RequestTimedOutError.code),
                         (E.NotLeaderOrFollowerError.code, NOT_COORDINATOR),
                         (E.NotEnoughReplicasAfterAppendError.code, E.CoordinatorNotAvailableError.code)]:
        answers = c.commit("g", 9)
        c.store.release(code)
        assert answers == [{TP: answer}] and c.committed("g") == (0, 5)


def test_a_commit_without_a_callback_waits_and_answers_outside_the_lock():
    c = Cluster()
    c.store.hold = True
    got = []
    t = threading.Thread(target=lambda: got.append(
        c.gc.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(3, "", 0)})))
    t.start()
    t.join(0.3)
    assert t.is_alive() and got == []                              # waiting for replication

    def completed_by_the_store(code):
        # the callback runs once the coordinator's lock is released: another thread may take it
        grabbed = []
        probe = threading.Thread(target=lambda: grabbed.append(c.gc.heartbeat("g", 1, "m")))
        probe.start()
        probe.join(5)
        assert grabbed, "the coordinator's lock was held while answering"
        return code
    held = list(c.store.held)
    c.store.held.clear()
    for on_replicated in held:
        on_replicated(completed_by_the_store(0))
    t.join(5)
    assert got == [{TP: 0}] and c.committed("g") == (0, 3)


def test_members_get_their_assignment_once_it_is_replicated():
    c = Cluster()
    leader = c.join("g")[0].member_id
    c.store.hold = True
    answer = c.sync("g", 1, leader, {leader: b"mine"})
    assert answer == [] and c.gc.manager.get("g").state == COMPLETING_REBALANCE
    c.store.release(0)
    assert answer[0][:2] == (0, b"mine") and c.gc.manager.get("g").state == STABLE

    # a write that times out makes the members rejoin (Kafka's storeGroup: REBALANCE_IN_PROGRESS)
    rejoin = c.join("g", leader)
    generation = rejoin[0].generation_id
    answer = c.sync("g", generation, leader, {leader: b"again"})
    c.store.release(E.RequestTimedOutError.code)
    assert answer[0].error == E.RebalanceInProgressError.code
    assert c.gc.manager.get("g").state == PREPARING_REBALANCE


def test_losing_a_partition_sends_its_groups_elsewhere_and_regaining_it_replays_the_log():
    c = Cluster()
    other = c.other_group("g")
    leader = c.join("g")[0].member_id
    c.sync("g", 1, leader, {leader: b"a"})
    assert c.commit("g", 7, leader, 1) == [{TP: 0}]
    assert c.commit(other, 70) == [{TP: 0}]
    parked = c.join("g")                                     # a newcomer: the leader must rejoin
    assert parked == [] and c.gc.manager.get("g").state == PREPARING_REBALANCE
    c.store.hold = True
    in_flight = c.commit(other, 71)                          # written, not replicated yet
    c.store.hold = False
    assert c.commit("g", 8, leader, 1) == [{TP: 0}]         # members commit while preparing
    c.store.hold = True
    pending = c.commit(other, 72)
    c.store.hold = False

    group = c.gc.manager.get("g")
    c.led.discard(c.partition("g"))                          # leadership moved to another broker
    c.gc.unload_partitions([c.partition("g")])
    assert parked[0].error == NOT_COORDINATOR                # the parked JoinGroup is sent away
    assert group.state == DEAD and c.gc.manager.get("g") is None
    assert c.gc.heartbeat("g", 1, leader) == NOT_COORDINATOR
    assert c.committed("g") == (NOT_COORDINATOR, None)
    assert c.commit("g", 9, leader, 1) == [{TP: NOT_COORDINATOR}]
    assert ("g", "consumer") not in c.gc.list_groups()[1]
    assert c.committed(other) == (0, 70)                     # other partitions are untouched

    c.store.release(0)                                       # the other group's writes replicate
    assert in_flight == [{TP: 0}] and pending == [{TP: 0}] and c.committed(other) == (0, 72)

    c.led.add(c.partition("g"))                              # and back: loaded again from the log
    assert c.committed("g") == (E.CoordinatorLoadInProgressError.code, None)
    c.gc.load_partitions([c.partition("g")])
    assert c.committed("g") == (0, 8)
    assert c.gc.manager.get("g") is not group


def test_a_write_completing_after_its_partition_was_unloaded_leaves_the_group_alone():
    c = Cluster()
    c.store.hold = True
    answers = c.commit("g", 5)
    group = c.gc.manager.get("g")
    c.led.discard(c.partition("g"))
    c.gc.unload_partitions([c.partition("g")])
    c.store.release(E.NotLeaderOrFollowerError.code)
    assert answers == [{TP: NOT_COORDINATOR}]
    assert group.offsets == {} and c.gc.manager.get("g") is None


def test_unloading_a_partition_answers_a_parked_sync():
    c = Cluster()
    a = c.join("g")[0].member_id
    c.sync("g", 1, a, {a: b"x"})
    b = c.join("g")                                          # newcomer; leader rejoins
    c.join("g", a)
    generation = b[0].generation_id
    waiting = c.sync("g", generation, b[0].member_id)        # the follower waits for the leader
    assert waiting == []
    c.led.discard(c.partition("g"))
    c.gc.unload_partitions([c.partition("g")])
    assert waiting[0].error == NOT_COORDINATOR
