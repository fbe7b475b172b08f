"""KIP-848's online migration on the coordinator, driven by requests and a fake clock: a classic
group upgraded by a consumer-protocol member, its classic members answered by the consumer group
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit), partitions handed over only once
released, a reload keeping the converted group, the downgrade when the last consumer-protocol
member leaves, and the migration policy's refusals."""
import uuid

import pytest

from fastkafka import errors as E
from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore, OffsetAndMetadata
from fastkafka.coordinator.consumer_group_records import changes, group_records
from fastkafka.protocol.consumer_protocol import decode_assignment, encode_assignment, encode_subscription

pytestmark = pytest.mark.timeout(30)

T = uuid.UUID(int=1)
SUB = encode_subscription(["t"])
REBALANCE = E.RebalanceInProgressError.code


class Harness:
    def __init__(self, store=None, **kw):
        self.now = 1_000_000
        self.store = store or MemoryOffsetsStore(1)
        self.gc = GroupCoordinator.create(self.store, clock=lambda: self.now, initial_rebalance_delay_ms=0, **kw)
        self.gc.topic_metadata = {"t": (T, 4)}.get

    def join(self, member_id="", protocols=(("range", SUB),), require_known=False):
        got = []
        self.gc.join_group("g", member_id, None, "classic", "/h", 10_000, 10_000, "consumer", list(protocols),
                           got.append, require_known_member_id=require_known)
        return got

    def sync(self, member_id, generation, assignments=None):
        got = []
        self.gc.sync_group("g", generation, member_id, None, assignments or {}, got.append)
        return got[0]

    def classic_group(self):
        """Two classic members, Stable: the first (by id) owns 0, 1 and the other 2, 3."""
        first = self.join()[0]
        assert first.error == 0
        joined = self.join()                           # the second one starts a rebalance...
        self.gc.join_group("g", first.member_id, None, "classic", "/h", 10_000, 10_000, "consumer",
                           [("range", SUB)], joined.append)    # ...which the first rejoins
        by_id = {r.member_id: r for r in joined}
        assert len(by_id) == 2 and all(r.error == 0 for r in joined), joined
        ids = sorted(by_id)
        gen = joined[0].generation_id
        leader = next(r for r in joined if r.members).member_id
        plan = {ids[0]: encode_assignment([("t", 0), ("t", 1)]), ids[1]: encode_assignment([("t", 2), ("t", 3)])}
        box = []
        self.gc.sync_group("g", gen, next(m for m in ids if m != leader), None, {}, box.append)
        assert self.sync(leader, gen, plan).error == 0 and box[0].error == 0
        return ids, gen

    def beat(self, member, epoch, owned, **kw):
        return self.gc.consumer_group_heartbeat("g", member, epoch, owned=[(T, sorted(owned))], **kw)

    def written(self):
        for g in self.gc.consumer_groups.values():
            assert changes(g.records, group_records(g)) == [], g.group_id


def assigned(sync_result):
    return sorted(p for _, p in decode_assignment(sync_result.assignment))


def test_a_consumer_member_upgrades_a_classic_group_and_gets_partitions_as_they_are_released():
    h = Harness()
    (a, b), gen = h.classic_group()
    assert h.gc.commit_offsets("g", a, gen, {("t", 0): OffsetAndMetadata(5, "", 0)}, api_version=7) == \
        {("t", 0): 0}
    r = h.gc.consumer_group_heartbeat("g", "new", 0, rebalance_timeout_ms=10_000, subscribed_topic_names=["t"],
                                      owned=[])
    assert r.error == 0 and r.member_epoch == gen + 1
    assert r.assignment == {}                       # everything still belongs to a and b
    h.written()
    g = h.gc.consumer_groups["g"]
    assert {m: g.members[m].classic is not None for m in g.members} == {a: True, b: True, "new": False}
    assert h.gc.manager.get("g").is_empty()         # the classic holder keeps only the offsets
    assert h.gc.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 5
    # the classic members are told to rejoin; they give up what the new member's target takes
    assert h.gc.heartbeat("g", gen, a) == REBALANCE
    assert h.gc.commit_offsets("g", a, gen, {("t", 1): OffsetAndMetadata(9, "", 0)}, api_version=7) == \
        {("t", 1): 0}
    ja = h.join(a)[0]
    assert (ja.error, ja.generation_id, ja.leader_id, ja.protocol_name) == (0, gen + 1, "", "range")
    sa = h.sync(a, ja.generation_id)
    assert sa.error == 0 and set(assigned(sa)) <= {0, 1}
    assert h.gc.heartbeat("g", ja.generation_id, a) == 0
    r = h.beat("new", r.member_epoch, [])
    got = set((r.assignment or {}).get(T, ()))
    assert got.isdisjoint(assigned(sa)) and got.isdisjoint({2, 3})     # b has not let go yet
    assert h.gc.heartbeat("g", gen, b) == REBALANCE
    jb = h.join(b)[0]
    sb = h.sync(b, jb.generation_id)
    r = h.beat("new", r.member_epoch, got)
    if r.assignment is not None:
        got = set(r.assignment.get(T, ()))
    assert sorted(assigned(sa) + assigned(sb) + sorted(got)) == [0, 1, 2, 3] and got   # each exactly once
    h.written()
    # a classic member with a stale generation is refused as in a classic group
    assert h.gc.heartbeat("g", gen, a) == E.IllegalGenerationError.code
    assert h.gc.commit_offsets("g", a, gen, {("t", 1): OffsetAndMetadata(10, "", 0)}, api_version=7) == \
        {("t", 1): E.IllegalGenerationError.code}
    described = h.gc.describe_group("g")
    assert described.state == "Stable" and len(described.members) == 3

    # a coordinator loading the partition finds the converted group, classic members and all
    h2 = Harness(h.store)
    g2 = h2.gc.consumer_groups["g"]
    assert g2.members[a].classic.session_timeout_ms == 10_000 and g2.members["new"].classic is None
    assert h2.gc.manager.get("g").is_empty()
    assert h2.gc.heartbeat("g", jb.generation_id, b) == 0

    # the consumer-protocol member leaves: a classic group again, rebalancing
    h.gc.consumer_group_heartbeat("g", "new", -1)
    assert "g" not in h.gc.consumer_groups
    classic = h.gc.manager.get("g")
    assert classic.state == "PreparingRebalance" and set(classic.members) == {a, b}
    assert h.gc.heartbeat("g", ja.generation_id, a) == REBALANCE
    assert h.gc.fetch_offsets("g", [("t", 1)])[1][("t", 1)].offset == 9
    rejoined = h.join(a) + h.join(b)
    assert [r.error for r in rejoined] == [0, 0] and len({r.generation_id for r in rejoined}) == 1
    # and a reload sees the classic group, not the consumer group
    h3 = Harness(h.store)
    assert "g" not in h3.gc.consumer_groups and set(h3.gc.manager.get("g").members) == {a, b}


def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced_and_its_partitions_handed_on():
    h = Harness()
    (a, b), gen = h.classic_group()
    r = h.gc.consumer_group_heartbeat("g", "new", 0, rebalance_timeout_ms=10_000, subscribed_topic_names=["t"],
                                      owned=[])
    assert h.gc.heartbeat("g", gen, a) == REBALANCE   # a's rebalance timeout starts now
    h.now += 5_000
    assert h.gc.heartbeat("g", gen, b) == REBALANCE
    h.join(b)
    h.now += 5_001                                    # a never rejoined
    h.gc.tick()
    g = h.gc.consumer_groups["g"]
    assert a not in g.members
    r = h.beat("new", r.member_epoch, [])
    assert r.error == 0 and T in (r.assignment or {T: ()})


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_a_policy_without_upgrades_keeps_the_classic_group(policy):
    h = Harness(consumer_migration_policy=policy)
    h.classic_group()
    r = h.gc.consumer_group_heartbeat("g", "new", 0, rebalance_timeout_ms=10_000, subscribed_topic_names=["t"],
                                      owned=[])
    assert r.error == E.GroupIdNotFoundError.code
    assert "g" not in h.gc.consumer_groups and len(h.gc.manager.get("g").members) == 2


def test_a_policy_without_downgrades_keeps_the_consumer_group_of_classic_members():
    h = Harness(consumer_migration_policy="upgrade")
    (a, b), gen = h.classic_group()
    h.gc.consumer_group_heartbeat("g", "new", 0, rebalance_timeout_ms=10_000, subscribed_topic_names=["t"],
                                  owned=[])
    h.gc.consumer_group_heartbeat("g", "new", -1)
    assert set(h.gc.consumer_groups["g"].members) == {a, b}


def test_a_classic_member_joins_a_consumer_group_and_leaves_it():
    h = Harness()
    r = h.gc.consumer_group_heartbeat("g", "m", 0, rebalance_timeout_ms=10_000, subscribed_topic_names=["t"],
                                      owned=[])
    first = h.join(require_known=True)[0]
    assert first.error == E.MemberIdRequiredError.code
    j = h.join(first.member_id)[0]
    assert j.error == 0 and j.protocol_type == "consumer"
    # another assignor name than the classic members share: refused
    assert h.join("x", protocols=[("roundrobin", SUB)])[0].error == E.InconsistentGroupProtocolError.code
    assert h.gc.leave_group_members("g", [(j.member_id, None), ("m", None)]) == \
        (0, [0, E.UnknownMemberIdError.code])        # m speaks the consumer protocol
    assert set(h.gc.consumer_groups["g"].members) == {"m"}
    assert r.error == 0


def test_a_consumer_member_that_times_out_leaves_a_classic_group_behind():
    h = Harness(consumer_session_timeout_ms=20_000)
    (a, b), gen = h.classic_group()
    h.gc.consumer_group_heartbeat("g", "new", 0, rebalance_timeout_ms=10_000, subscribed_topic_names=["t"],
                                  owned=[])
    for m in (a, b):              # the classic members rejoin and stay alive; "new" falls silent
        assert h.gc.heartbeat("g", gen, m) == REBALANCE
        j = h.join(m)[0]
        assert h.sync(m, j.generation_id).error == 0
    for _ in range(3):
        h.now += 8_000
        h.gc.tick()
        if "g" in h.gc.consumer_groups:
            assert all(h.gc.heartbeat("g", j.generation_id, m) in (0, REBALANCE) for m in (a, b))
    assert "g" not in h.gc.consumer_groups
    classic = h.gc.manager.get("g")
    assert classic.state == "PreparingRebalance" and set(classic.members) == {a, b}
    assert classic.generation_id == j.generation_id      # their commits while revoking still count
    assert h.gc.commit_offsets("g", a, j.generation_id, {("t", 0): OffsetAndMetadata(3, "", 0)},
                               api_version=7) == {("t", 0): 0}
