"""KIP-848 consumer groups on the coordinator, driven by heartbeats and a fake clock (no sockets):
epochs, revoke-before-assign, fencing, timeouts, the classic protocol beside it, offset checks."""
import uuid

import pytest

from fastkafka import errors as E
from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore, OffsetAndMetadata
from fastkafka.coordinator.assignors import range_assign, uniform
from fastkafka.coordinator.consumer_group_records import changes, group_records
from fastkafka.coordinator.current_assignment import UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS

pytestmark = pytest.mark.timeout(30)

T, U = uuid.UUID(int=1), uuid.UUID(int=2)        # topic ids (UUIDs: written in the group's records)


class Harness:
    def __init__(self, topics=None, **kw):
        self.now = 1_000_000
        self.topics = {"t": (T, 4)} if topics is None else topics
        self.gc = GroupCoordinator.create(MemoryOffsetsStore(4), clock=lambda: self.now,
                                          initial_rebalance_delay_ms=0, **kw)
        self.gc.topic_metadata = self.topics.get

    def join(self, member, names=("t",), group="g", assignor=None, instance=None, rebalance=30_000):
        return self.written(self.gc.consumer_group_heartbeat(
            group, member, 0, subscribed_topic_names=list(names), rebalance_timeout_ms=rebalance,
            server_assignor=assignor, instance_id=instance, owned=[]))

    def beat(self, member, epoch, owned, group="g", **kw):
        """A heartbeat reporting ``owned`` ({topic_id: partitions})."""
        return self.written(self.gc.consumer_group_heartbeat(
            group, member, epoch, owned=[(t, sorted(ps)) for t, ps in owned.items()], **kw))

    def advance(self, ms):
        self.now += ms
        self.gc.tick()
        self.written(None)

    def written(self, result):
        """``result``, once checked that every group's records as written (member by member, as
        heartbeats change them) are what the whole group encodes to now: nothing left unwritten."""
        for g in self.gc.consumer_groups.values():
            assert changes(g.records, group_records(g)) == [], g.group_id
        return result

    def group(self, group="g"):
        return self.gc.consumer_groups[group]


def owners(h):
    """partition -> the members whose assignment or pending revocation holds it."""
    out = {}
    for m in h.group().members.values():
        for parts in (m.assigned, m.pending_revocation):
            for p in parts.get(T, ()):
                out.setdefault(p, []).append(m.member_id)
    return out


def test_first_member_gets_every_partition_at_the_bumped_epoch():
    h = Harness()
    r = h.join("a")
    assert (r.error, r.member_id, r.member_epoch, r.assignment) == (0, "a", 1, {T: {0, 1, 2, 3}})
    assert r.heartbeat_interval_ms == 5000
    g = h.group()
    assert (g.group_epoch, g.assignment_epoch, g.state, g.assignor_name) == (1, 1, "Stable", "uniform")
    # a plain heartbeat with nothing new answers no assignment
    assert h.gc.consumer_group_heartbeat("g", "a", 1).assignment is None


def test_empty_member_id_on_join_gets_one_from_the_coordinator():
    h = Harness()
    r = h.gc.consumer_group_heartbeat("g", "", 0, subscribed_topic_names=["t"], rebalance_timeout_ms=1000, owned=[])
    assert r.error == 0 and len(r.member_id) == 36


def test_second_member_waits_until_the_first_revokes():
    h = Harness()
    h.join("a")
    r = h.join("b")
    # b's target is half the partitions, but a still holds them: b gets nothing yet
    assert (r.member_epoch, r.assignment) == (2, {})
    assert h.group().members["b"].state == UNRELEASED_PARTITIONS
    # a hears it must revoke two; it keeps its old epoch meanwhile (so it can commit them)
    r = h.beat("a", 1, {T: {0, 1, 2, 3}})
    assert r.member_epoch == 1 and r.assignment == {T: {0, 1}}
    assert h.group().members["a"].state == UNREVOKED_PARTITIONS
    assert all(len(ms) == 1 for ms in owners(h).values())
    # b asks again: still held by a
    assert h.beat("b", 2, {}).assignment is None
    # a reports it let go of 2 and 3: it moves to epoch 2
    r = h.beat("a", 1, {T: {0, 1}})
    assert (r.member_epoch, h.group().members["a"].state) == (2, "STABLE")
    r = h.beat("b", 2, {})
    assert r.assignment == {T: {2, 3}} and h.group().state == "Stable"
    assert owners(h) == {0: ["a"], 1: ["a"], 2: ["b"], 3: ["b"]}


def test_leaving_hands_the_partitions_back_on_the_next_heartbeat():
    h = Harness()
    h.join("a")
    h.join("b")
    h.beat("a", 1, {T: {0, 1, 2, 3}})
    h.beat("a", 1, {T: {0, 1}})
    h.beat("b", 2, {})
    r = h.gc.consumer_group_heartbeat("g", "b", -1)
    assert (r.error, r.member_epoch) == (0, -1)
    assert set(h.group().members) == {"a"} and h.group().group_epoch == 3
    r = h.beat("a", 2, {T: {0, 1}})
    assert (r.member_epoch, r.assignment) == (3, {T: {0, 1, 2, 3}})


def test_epochs_are_fenced_as_kafka_does():
    h = Harness()
    h.join("a")
    assert h.beat("a", 5, {}).error == E.FencedMemberEpochError.code          # ahead
    h.join("b")
    h.beat("a", 1, {T: {0, 1, 2, 3}})
    h.beat("a", 1, {T: {0, 1}})                                                # now epoch 2, previous 1
    # the answer that moved it to 2 was lost: epoch 1 with a subset of its partitions is fine
    assert h.beat("a", 1, {T: {0}}).error == 0
    # but not with a partition it no longer has
    assert h.beat("a", 1, {T: {0, 3}}).error == E.FencedMemberEpochError.code
    assert h.gc.consumer_group_heartbeat("g", "nobody", 1).error == E.UnknownMemberIdError.code
    assert h.gc.consumer_group_heartbeat("g", "a", -7).error == E.InvalidRequestError.code
    assert h.gc.consumer_group_heartbeat("g", "a", 0, subscribed_topic_names=["t"], owned=[]).error == \
        E.InvalidRequestError.code                                             # no rebalance timeout
    assert h.join("c", assignor="sticky").error == E.UnsupportedAssignorError.code


def test_silent_member_is_fenced_after_the_session_timeout():
    h = Harness(consumer_session_timeout_ms=10_000)
    h.join("a")
    h.join("b")
    h.advance(6_000)
    h.beat("b", 2, {})
    h.advance(6_000)                     # a: 12 s silent
    assert set(h.group().members) == {"b"}
    r = h.beat("b", 2, {})
    assert r.assignment == {T: {0, 1, 2, 3}} and r.member_epoch == 3
    assert h.beat("a", 1, {}).error == E.UnknownMemberIdError.code


def test_a_member_that_does_not_revoke_in_its_rebalance_timeout_is_fenced():
    h = Harness()
    h.join("a", rebalance=5_000)
    h.join("b")
    h.beat("a", 1, {T: {0, 1, 2, 3}})             # told to revoke 2 and 3
    h.advance(3_000)
    h.beat("a", 1, {T: {0, 1, 2, 3}})             # still holds them: still waiting
    assert "a" in h.group().members
    h.advance(3_000)
    assert set(h.group().members) == {"b"}
    assert h.beat("b", 2, {}).assignment == {T: {0, 1, 2, 3}}


def test_new_partitions_bump_the_group_epoch():
    h = Harness()
    h.join("a")
    h.topics["t"] = (T, 6)
    r = h.beat("a", 1, {T: {0, 1, 2, 3}})
    assert (r.member_epoch, r.assignment) == (2, {T: {0, 1, 2, 3, 4, 5}})


def test_range_assignor_when_members_ask_for_it():
    h = Harness(topics={"t": (T, 3), "u": (U, 3)})
    h.join("a", names=("t", "u"), assignor="range")
    h.join("b", names=("t", "u"), assignor="range")
    assert h.group().assignor_name == "range"
    assert h.group().target == {"a": {T: {0, 1}, U: {0, 1}}, "b": {T: {2}, U: {2}}}


def test_assignors_balance_and_stick():
    subs = {"a": {T}, "b": {T}, "c": {T}}
    got = uniform(subs, {T: 7}, {"a": {T: {0, 1, 2, 3, 4, 5, 6}}})
    assert sorted(len(ps[T]) for ps in got.values()) == [2, 2, 3]
    assert got["a"][T] <= {0, 1, 2, 3, 4, 5, 6} and got["a"][T] & {0, 1, 2}       # a kept its own
    assert set().union(*(ps[T] for ps in got.values())) == set(range(7))
    # members with different subscriptions: each topic only to its subscribers
    got = uniform({"a": {T}, "b": {T, U}}, {T: 2, U: 2}, {})
    assert got["a"] == {T: {0}} or got["a"] == {T: {0, 1}}
    assert got["b"][U] == {0, 1}
    assert range_assign({"a": {T}, "b": {U}}, {T: 2, U: 1}, {}) == {"a": {T: {0, 1}}, "b": {U: {0}}}


def test_static_member_leaves_for_a_while_and_comes_back_with_its_partitions():
    h = Harness()
    first = h.join("a", instance="i1")
    r = h.gc.consumer_group_heartbeat("g", "a", -2, instance_id="i1")
    assert (r.error, r.member_epoch) == (0, -2)
    back = h.join("a2", instance="i1")
    assert (back.error, back.member_epoch, back.assignment) == (0, first.member_epoch, first.assignment)
    g = h.group()
    assert set(g.members) == {"a2"} and g.members["a2"].assigned == {T: {0, 1, 2, 3}}
    assert g.group_epoch == first.member_epoch         # back unchanged: no rebalance
    # an instance id held by a live member cannot be taken
    assert h.join("a3", instance="i1").error == E.UnreleasedInstanceIdError.code


def test_classic_and_consumer_groups_do_not_share_an_id():
    h = Harness()
    got = []
    h.gc.join_group("classic", "", None, "c", "/h", 10_000, 10_000, "consumer", [("range", b"")], got.append)
    assert got[0].error == 0
    assert h.join("m", group="classic").error == E.GroupIdNotFoundError.code
    h.join("m", group="kip848")
    got = []
    h.gc.join_group("kip848", "", None, "c", "/h", 10_000, 10_000, "consumer", [("range", b"")], got.append)
    assert got[0].error == E.InconsistentGroupProtocolError.code
    code, overviews = h.gc.group_overviews()
    assert sorted(overviews) == [("classic", "consumer", "CompletingRebalance"), ("kip848", "consumer", "Stable")]
    assert (h.gc.group_type("kip848"), h.gc.group_type("classic")) == ("consumer", "classic")


def test_an_empty_group_moves_between_the_protocols_keeping_its_offsets():
    h = Harness()
    assert h.gc.commit_offsets("g", "", -1, {("t", 0): OffsetAndMetadata(7, "", 0)}) == {("t", 0): 0}
    h.join("m")                                     # an empty classic group: taken over
    assert h.gc.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 7
    h.gc.consumer_group_heartbeat("g", "m", -1)     # empty again: a classic member may take it back
    got = []
    h.gc.join_group("g", "", None, "c", "/h", 10_000, 10_000, "consumer", [("range", b"")], got.append)
    assert got[0].error == 0 and "g" not in h.gc.consumer_groups
    assert h.gc.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 7


def test_offset_commit_and_fetch_check_the_member_epoch():
    h = Harness()
    h.join("a")
    om = {("t", 0): OffsetAndMetadata(3, "", 0)}
    assert h.gc.commit_offsets("g", "a", 1, om) == {("t", 0): 0}
    assert h.gc.commit_offsets("g", "a", 2, om) == {("t", 0): E.StaleMemberEpochError.code}
    assert h.gc.commit_offsets("g", "x", 1, om) == {("t", 0): E.UnknownMemberIdError.code}
    assert h.gc.commit_offsets("g", "", -1, om) == {("t", 0): E.UnknownMemberIdError.code}   # group not empty
    assert h.gc.commit_offsets("g", "a", 1, om, api_version=8) == {("t", 0): E.UnsupportedVersionError.code}
    assert h.gc.fetch_offsets("g", [("t", 0)], "a", 0)[0] == E.StaleMemberEpochError.code
    code, got = h.gc.fetch_offsets("g", [("t", 0)], "a", 1)
    assert code == 0 and got[("t", 0)].offset == 3
    assert h.gc.fetch_offsets("g", [("t", 0)])[0] == 0                     # an admin's fetch


def test_unknown_group_after_a_restart_answers_unknown_member_id():
    h = Harness()
    assert h.gc.consumer_group_heartbeat("g", "m", 4).error == E.UnknownMemberIdError.code


def test_describe_reads_the_group_whole():
    h = Harness()
    h.join("a")
    code, state, members = h.gc.read_consumer_group(
        "g", lambda c, g: (c, g.state, {m.member_id: (m.member_epoch, g.target[m.member_id]) for m in
                                        g.members.values()}))
    assert (code, state, members) == (0, "Stable", {"a": (1, {T: {0, 1, 2, 3}})})
    assert h.gc.read_consumer_group("nope", lambda c, g: (c, g)) == (E.GroupIdNotFoundError.code, None)
