"""The group state machine, driven by method calls and a fake clock (no sockets)."""
import pytest

from fastkafka import errors as E
from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore, OffsetAndMetadata
from fastkafka.coordinator.group import (COMPLETING_REBALANCE, EMPTY, PREPARING_REBALANCE,
                                         STABLE)

pytestmark = pytest.mark.timeout(30)

PROTO = [("range", b"sub-r"), ("roundrobin", b"sub-rr")]


class Harness:
    def __init__(self, delay=0, store=None, **kw):
        self.now = 1_000_000
        self.store = store or MemoryOffsetsStore(8)
        self.gc = GroupCoordinator.create(self.store, clock=lambda: self.now,
                                          initial_rebalance_delay_ms=delay, **kw)

    def join(self, member_id="", group="g", protocols=PROTO, session=10_000, rebalance=20_000,
             instance=None, v4=False, client="c"):
        box = []
        self.gc.join_group(group, member_id, instance, client, "/127.0.0.1", session, rebalance,
                           "consumer", protocols, box.append, require_known_member_id=v4)
        return box

    def sync(self, member_id, generation, assignments=None, group="g", instance=None):
        box = []
        self.gc.sync_group(group, generation, member_id, instance, assignments or {}, box.append)
        return box

    def advance(self, ms):
        self.now += ms
        self.gc.tick()

    def state(self, group="g"):
        return self.gc.manager.get(group).state


def stable_pair(h):
    """Two members, one generation, assignment done: returns (leader, follower, generation)."""
    a = h.join()
    leader = a[0].member_id
    h.sync(leader, 1, {leader: b"A"})
    b = h.join(client="d")
    assert b == []                                      # parked until the leader rejoins
    assert h.gc.heartbeat("g", 1, leader) == E.RebalanceInProgressError.code
    a2 = h.join(leader)
    assert len(a2) == 1 and len(b) == 1
    follower = b[0].member_id
    gen = a2[0].generation_id
    assert gen == 2 and b[0].generation_id == 2
    assert a2[0].leader_id == leader and b[0].leader_id == leader
    assert {m[0] for m in a2[0].members} == {leader, follower}
    assert b[0].members == []
    fs = h.sync(follower, gen)
    assert fs == []                                     # waits for the leader's assignment
    ls = h.sync(leader, gen, {leader: b"L", follower: b"F"})
    assert ls[0].assignment == b"L" and fs[0].assignment == b"F"
    assert h.state() == STABLE
    return leader, follower, gen


def test_single_member_join_sync_heartbeat():
    h = Harness()
    r = h.join()
    assert r[0].error == 0 and r[0].generation_id == 1 and r[0].protocol_name == "range"
    mid = r[0].member_id
    assert mid.startswith("c-") and r[0].leader_id == mid
    assert r[0].members == [(mid, None, b"sub-r")]
    assert h.state() == COMPLETING_REBALANCE
    s = h.sync(mid, 1, {mid: b"assign"})
    assert s[0] == (0, b"assign", "consumer", "range") and h.state() == STABLE
    assert h.gc.heartbeat("g", 1, mid) == 0
    assert h.gc.heartbeat("g", 0, mid) == E.IllegalGenerationError.code
    assert h.gc.heartbeat("g", 1, "nobody") == E.UnknownMemberIdError.code
    assert h.gc.heartbeat("other", 1, mid) == E.UnknownMemberIdError.code


def test_second_member_triggers_rebalance_and_follower_waits_for_leader():
    h = Harness()
    stable_pair(h)


def test_stable_follower_rejoin_with_same_metadata_needs_no_rebalance():
    h = Harness()
    leader, follower, gen = stable_pair(h)
    r = h.join(follower)
    assert r[0].generation_id == gen and r[0].members == [] and h.state() == STABLE
    # the leader rejoining asks for a new assignment: rebalance
    r = h.join(leader)
    assert r == [] and h.state() == PREPARING_REBALANCE


def test_member_id_required_handshake():
    h = Harness()
    r = h.join(v4=True)
    assert r[0].error == E.MemberIdRequiredError.code and r[0].member_id
    mid = r[0].member_id
    assert h.gc.manager.get("g").is_empty()
    r2 = h.join(mid, v4=True)
    assert r2[0].error == 0 and r2[0].member_id == mid and r2[0].generation_id == 1
    # a pending id nobody comes back with expires and does not hold up later rebalances
    p = h.join(v4=True)[0].member_id
    h.advance(10_001)
    assert p not in h.gc.manager.get("g").pending_members


def test_session_timeout_expires_dead_member_and_others_get_its_partitions():
    h = Harness()
    leader, follower, gen = stable_pair(h)
    h.advance(6_000)
    assert h.gc.heartbeat("g", gen, leader) == 0
    h.advance(4_500)                                   # follower silent for 10.5 s > session
    assert not h.gc.manager.get("g").has(follower)
    # alone in the group, the leader completes the new generation as soon as it rejoins
    assert h.gc.heartbeat("g", gen, leader) == E.RebalanceInProgressError.code
    r = h.join(leader)
    assert r[0].generation_id == gen + 1 and [m[0] for m in r[0].members] == [leader]


def test_rebalance_timeout_drops_members_that_do_not_rejoin():
    h = Harness()
    leader, follower, gen = stable_pair(h)
    h.join(client="e")                                   # third member: rebalance
    a = h.join(leader)
    assert a == []
    # the follower keeps heartbeating but never rejoins: after the rebalance timeout it is out
    for _ in range(3):
        h.advance(5_000)
        assert h.gc.heartbeat("g", gen, follower) == E.RebalanceInProgressError.code
    assert a == []
    h.advance(5_000)
    assert a and a[0].error == 0 and a[0].generation_id == gen + 1
    assert follower not in {m[0] for m in a[0].members} and len(a[0].members) == 2
    assert h.gc.heartbeat("g", gen + 1, follower) == E.UnknownMemberIdError.code


def test_initial_rebalance_delay_gathers_members_joining_together():
    h = Harness(delay=3000)
    boxes = [h.join(client=f"m{i}") for i in range(5)]
    assert all(b == [] for b in boxes)
    h.advance(2_999)
    assert all(b == [] for b in boxes)
    h.advance(1)
    assert all(b[0].generation_id == 1 for b in boxes)
    leaders = [b for b in boxes if b[0].members]
    assert len(leaders) == 1 and len(leaders[0][0].members) == 5


def test_leave_group_rebalances_and_last_leaver_empties_group():
    h = Harness()
    leader, follower, gen = stable_pair(h)
    assert h.gc.leave_group("g", follower) == 0
    assert h.state() == PREPARING_REBALANCE
    r = h.join(leader)
    assert r[0].generation_id == gen + 1
    h.sync(leader, gen + 1, {leader: b"x"})
    assert h.gc.leave_group("g", leader) == 0
    g = h.gc.manager.get("g")
    assert g.state == EMPTY and g.generation_id == gen + 2
    assert h.gc.leave_group("g", leader) == E.UnknownMemberIdError.code


def test_leader_never_syncs_members_that_did_not_sync_are_dropped():
    h = Harness()
    leader = h.join()[0].member_id
    b = h.join(client="d")
    assert h.join(leader)[0].generation_id == 2
    fs = h.sync(b[0].member_id, 2)
    assert fs == []
    h.advance(20_001)                                  # rebalance timeout of the sync phase
    assert fs[0].error == E.RebalanceInProgressError.code
    assert not h.gc.manager.get("g").has(leader)


def test_validation_errors():
    h = Harness()
    assert h.join(group="")[0].error == E.InvalidGroupIdError.code
    assert h.join(session=10)[0].error == E.InvalidSessionTimeoutError.code
    assert h.join("ghost")[0].error == E.UnknownMemberIdError.code
    h.join()
    assert h.join(protocols=[("sticky", b"")])[0].error == E.InconsistentGroupProtocolError.code
    box = []
    h.gc.join_group("g", "", None, "c", "/h", 10_000, 10_000, "connect", PROTO, box.append)
    assert box[0].error == E.InconsistentGroupProtocolError.code


def test_protocol_is_chosen_by_votes_among_common_protocols():
    h = Harness(delay=100)
    h.join(protocols=[("roundrobin", b"1"), ("range", b"1")])
    h.join(protocols=[("range", b"2"), ("roundrobin", b"2")])
    b = h.join(protocols=[("roundrobin", b"3"), ("range", b"3"), ("sticky", b"")])
    h.advance(100)
    assert b[0].protocol_name == "roundrobin"


def test_static_member_restart_keeps_assignment_without_rebalance():
    h = Harness()
    a = h.join(instance="i-1")
    old = a[0].member_id
    assert old.startswith("i-1-")
    h.sync(old, 1, {old: b"mine"})
    r = h.join(instance="i-1")                           # restarted: no member id
    new = r[0].member_id
    assert r[0].error == 0 and new != old and r[0].generation_id == 1 and h.state() == STABLE
    assert h.sync(new, 1, instance="i-1")[0].assignment == b"mine"
    # the replaced process is fenced (fatal), checked before member existence as in Kafka
    assert h.gc.heartbeat("g", 1, old, "i-1") == E.FencedInstanceIdError.code
    assert h.sync(old, 1, instance="i-1")[0].error == E.FencedInstanceIdError.code
    assert h.join(member_id=old, instance="i-1")[0].error == E.FencedInstanceIdError.code
    om = OffsetAndMetadata(1, "", h.now)
    assert h.gc.commit_offsets("g", old, 1, {("t", 0): om}, "i-1") == {("t", 0): E.FencedInstanceIdError.code}
    # an instance id nobody holds is not fenced: the member is just unknown
    assert h.gc.heartbeat("g", 1, old, "i-2") == E.UnknownMemberIdError.code
    assert h.gc.heartbeat("g", 1, new, "i-1") == 0


def test_commit_and_fetch_offsets_with_generation_checks():
    h = Harness()
    leader, follower, gen = stable_pair(h)
    om = OffsetAndMetadata(10, "m", h.now)
    assert h.gc.commit_offsets("g", leader, gen, {("t", 0): om}) == {("t", 0): 0}
    assert h.gc.commit_offsets("g", leader, gen - 1, {("t", 0): om}) == \
        {("t", 0): E.IllegalGenerationError.code}
    assert h.gc.commit_offsets("g", "x", gen, {("t", 0): om}) == {("t", 0): E.UnknownMemberIdError.code}
    assert h.gc.commit_offsets("g", "", -1, {("t", 0): om}) == {("t", 0): E.UnknownMemberIdError.code}
    assert h.gc.commit_offsets("g", leader, gen, {("t", 1): om._replace(metadata="x" * 5000)}) == \
        {("t", 1): E.OffsetMetadataTooLargeError.code}
    err, got = h.gc.fetch_offsets("g", [("t", 0), ("t", 1)])
    assert err == 0 and got[("t", 0)].offset == 10 and got[("t", 0)].metadata == "m"
    assert got[("t", 1)] is None
    assert set(h.gc.fetch_offsets("g", None)[1]) == {("t", 0)}
    # commits are allowed while the group prepares a rebalance (consumers commit before rejoining)
    h.join(client="z")
    assert h.gc.commit_offsets("g", follower, gen, {("t", 2): om}) == {("t", 2): 0}


def test_standalone_commit_creates_group_and_survives_reload():
    store = MemoryOffsetsStore(8)
    h = Harness(store=store)
    assert h.gc.commit_offsets("solo", "", -1, {("t", 3): OffsetAndMetadata(7, "", h.now)}) == \
        {("t", 3): 0}
    assert h.gc.commit_offsets("nogroup", "m", 5, {("t", 3): OffsetAndMetadata(7, "", h.now)}) == \
        {("t", 3): E.IllegalGenerationError.code}
    leader, _, gen = stable_pair(h)
    h.gc.commit_offsets("g", leader, gen, {("t", 0): OffsetAndMetadata(99, "meta", h.now)})
    h2 = Harness(store=store)
    assert h2.gc.fetch_offsets("solo", [("t", 3)])[1][("t", 3)].offset == 7
    assert h2.gc.fetch_offsets("g", None)[1][("t", 0)] == OffsetAndMetadata(99, "meta", h.now)
    # the group comes back Stable with its members: survivors keep heartbeating
    assert h2.state() == STABLE and h2.gc.heartbeat("g", gen, leader) == 0
    assert h2.gc.sync_group is not None
    box = h2.sync(leader, gen)
    assert box[0].assignment == b"L"


def test_load_in_progress_and_coordinator_shutdown():
    h = Harness()
    gc = GroupCoordinator.create(MemoryOffsetsStore(4), clock=lambda: 0, load=False)
    assert gc.fetch_offsets("g", [("t", 0)])[0] == E.CoordinatorLoadInProgressError.code
    assert gc.heartbeat("g", 1, "m") == E.CoordinatorLoadInProgressError.code
    assert gc.list_groups()[0] == E.CoordinatorLoadInProgressError.code
    gc.load_all()
    assert gc.fetch_offsets("g", [("t", 0)]) == (0, {("t", 0): None})
    box = h.join()
    assert box[0].error == 0 and box[0].generation_id == 1     # the loaded group's first member
    box2 = h.join(client="x")                                   # a rebalance under way at shutdown
    h.gc.shutdown()
    assert box2[0].error == E.NotCoordinatorError.code
    assert h.join()[0].error == E.CoordinatorNotAvailableError.code


def test_groups_of_partitions_another_broker_leads_get_not_coordinator():
    """Cluster mode: NOT_COORDINATOR sends the client back to FindCoordinator; only a partition
    this broker leads but has not loaded yet answers COORDINATOR_LOAD_IN_PROGRESS."""
    gc = GroupCoordinator.create(MemoryOffsetsStore(4), clock=lambda: 0, load=False)
    mine = {gc.manager.partition_for("g")}
    other = next(f"o{i}" for i in range(100) if gc.manager.partition_for(f"o{i}") not in mine)
    gc.partition_error = lambda p: 0 if p in mine else E.NotCoordinatorError.code
    tp = [("t", 0)]
    assert gc.fetch_offsets("g", tp)[0] == E.CoordinatorLoadInProgressError.code
    assert gc.list_groups()[0] == E.CoordinatorLoadInProgressError.code
    gc.load_partitions(mine)                       # only what it leads is ever loaded
    assert gc.fetch_offsets("g", tp) == (0, {("t", 0): None})
    assert gc.commit_offsets("g", "", -1, {("t", 0): OffsetAndMetadata(3, "", 0)}) == {("t", 0): 0}
    not_coord = E.NotCoordinatorError.code
    assert gc.fetch_offsets(other, tp)[0] == not_coord
    assert gc.heartbeat(other, 1, "m") == not_coord
    assert gc.leave_group(other, "m") == not_coord
    assert gc.commit_offsets(other, "", -1, {("t", 0): OffsetAndMetadata(3, "", 0)}) == {("t", 0): not_coord}
    assert gc.describe_group(other).error == not_coord
    assert gc.delete_groups([other]) == {other: not_coord}
    box = []
    gc.join_group(other, "", None, "c", "/h", 10_000, 10_000, "consumer", PROTO, box.append)
    assert box[0].error == not_coord
    assert gc.list_groups() == (0, [("g", "")])


def test_storage_failure_on_sync_answers_error_and_rebalances():
    h = Harness()
    a = h.join()
    mid = a[0].member_id
    h.store.fail = E.NotLeaderOrFollowerError("gone")
    s = h.sync(mid, 1, {mid: b"x"})                 # Kafka's storeGroup mapping: go elsewhere
    assert s[0].error == E.NotCoordinatorError.code and h.state() == PREPARING_REBALANCE
    h.store.fail = E.UnknownTopicOrPartitionError("gone")
    assert h.gc.commit_offsets("q", "", -1, {("t", 0): OffsetAndMetadata(1, "", 0)}) == \
        {("t", 0): E.CoordinatorNotAvailableError.code}


def test_offsets_expire_after_retention_only_when_group_is_empty():
    h = Harness(retention_ms=60_000, offsets_retention_check_interval_ms=1_000)
    leader, _, gen = stable_pair(h)
    h.gc.commit_offsets("g", leader, gen, {("t", 0): OffsetAndMetadata(1, "", h.now)})
    h.gc.commit_offsets("s", "", -1, {("t", 0): OffsetAndMetadata(1, "", h.now)})
    h.gc.commit_offsets("s", "", -1, {("t", 1): OffsetAndMetadata(1, "", h.now, h.now + 5_000)})
    h.now += 5_000
    for m in list(h.gc.manager.get("g").members):
        h.gc.heartbeat("g", gen, m)
    h.gc.tick()
    assert set(h.gc.fetch_offsets("s", None)[1]) == {("t", 0)}    # explicit expiry passed
    for _ in range(12):                                             # members alive: kept
        h.now += 5_000
        for m in list(h.gc.manager.get("g").members):
            h.gc.heartbeat("g", gen, m)
        h.gc.tick()
    assert h.gc.fetch_offsets("g", None)[1]
    assert h.gc.fetch_offsets("s", None)[1] == {}
    assert h.gc.manager.get("s") is None                         # empty standalone group dropped
    for m in list(h.gc.manager.get("g").members):
        h.gc.leave_group("g", m)
    h.advance(59_000)
    assert h.gc.fetch_offsets("g", None)[1]
    h.advance(2_000)
    assert h.gc.fetch_offsets("g", None)[1] == {}
    # tombstones went to the log, so a reload agrees
    h2 = Harness(store=h.store)
    assert h2.gc.fetch_offsets("g", None)[1] == {} and h2.gc.fetch_offsets("s", None)[1] == {}


def test_describe_list_delete():
    h = Harness()
    leader, follower, gen = stable_pair(h)
    h.gc.commit_offsets("solo", "", -1, {("t", 0): OffsetAndMetadata(1, "", 0)})
    err, groups = h.gc.list_groups()
    assert err == 0 and sorted(groups) == [("g", "consumer"), ("solo", "")]
    d = h.gc.describe_group("g")
    assert (d.error, d.state, d.protocol_type, d.protocol) == (0, "Stable", "consumer", "range")
    assert {(m.member_id, m.assignment, m.metadata) for m in d.members} == \
        {(leader, b"L", b"sub-r"), (follower, b"F", b"sub-r")}
    assert h.gc.describe_group("nope").state == "Dead"
    assert h.gc.delete_groups(["g", "solo", "nope"]) == {
        "g": E.NonEmptyGroupError.code, "solo": 0, "nope": E.GroupIdNotFoundError.code}
    assert h.gc.fetch_offsets("solo", None)[1] == {}
    assert Harness(store=h.store).gc.manager.get("solo") is None


def test_members_expire_on_their_own_deadline_not_the_next_tick():
    """A request that looks at the group sees it as Kafka's delayed heartbeats would leave it:
    members whose session ran out are gone, even if no coordinator tick ran since."""
    h = Harness()
    leader, follower, gen = stable_pair(h)
    h.now += 10_000 - 1                                  # one ms before both deadlines, no tick
    assert h.gc.delete_groups(["g"]) == {"g": E.NonEmptyGroupError.code}
    h.now += 1
    assert h.gc.describe_group("g").state == "Empty"
    assert h.gc.delete_groups(["g"]) == {"g": 0}
