"""KIP-848 consumer groups in ``__consumer_offsets``: every change written in Kafka's record layouts
before the heartbeat is answered, replayed by a new coordinator over the same store (members keep
their epochs and assignments), tombstones for members that leave and groups deleted, compaction
keeping the last record of each key; and server-side regex subscriptions resolved on the broker."""
import uuid

import pytest

from fastkafka import errors as E
from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore
from fastkafka.coordinator.consumer_group_formats import (CURRENT_MEMBER_ASSIGNMENT, GROUP_METADATA,
                                                          MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER,
                                                          consumer_group_key, decode_consumer_group_key,
                                                          decode_value)
from fastkafka.coordinator.consumer_group_records import changes, group_records
from fastkafka.coordinator.formats import partition_for
from fastkafka.coordinator.storage import StoredRecord

pytestmark = pytest.mark.timeout(30)

T = uuid.UUID(int=7)
PARTITIONS = 4


class Cluster:
    """A store and the coordinators that load it one after the other (a restart each)."""

    def __init__(self, topics=None):
        self.now = 1_000_000
        self.store = MemoryOffsetsStore(PARTITIONS)
        self.topics = {"t": (T, 4)} if topics is None else topics
        self.gc = self.restart()

    def restart(self) -> GroupCoordinator:
        self.gc = GroupCoordinator.create(self.store, clock=lambda: self.now, initial_rebalance_delay_ms=0)
        self.gc.topic_metadata = self.topics.get
        self.gc.topic_names = lambda: list(self.topics)
        return self.gc

    def join(self, member, names=("t",), regex=None, group="g"):
        return self.written(self.gc.consumer_group_heartbeat(
            group, member, 0, subscribed_topic_names=list(names), subscribed_topic_regex=regex,
            rebalance_timeout_ms=30_000, owned=[]))

    def beat(self, member, epoch, owned, group="g"):
        return self.written(self.gc.consumer_group_heartbeat(
            group, member, epoch, owned=[(t, sorted(ps)) for t, ps in owned.items()]))

    def written(self, result):
        """``result``, once checked that nothing of any group is left unwritten."""
        for g in self.gc.consumer_groups.values():
            assert changes(g.records, group_records(g)) == [], g.group_id
        return result

    def records(self, group="g"):
        """``(key, value)`` of the group's consumer-group records, in the order written."""
        out = []
        for r in self.store.partitions.get(partition_for(group, PARTITIONS), ()):
            key = decode_consumer_group_key(r.key)
            if key is not None and key.group_id == group:
                out.append((key, r.value))
        return out


def settle(c, members, group="g"):
    """Heartbeat every member with what it was last given until nothing changes; their answers."""
    owned = {m: {} for m in members}
    epochs = {m: r.member_epoch for m, r in members.items()}
    for m, r in members.items():
        owned[m] = r.assignment or {}
    for _ in range(6):
        for m in members:
            r = c.beat(m, epochs[m], owned[m], group)
            assert r.error == 0, r
            epochs[m] = r.member_epoch
            if r.assignment is not None:
                owned[m] = r.assignment
    return epochs, owned


def test_a_restarted_coordinator_keeps_epochs_and_assignments():
    c = Cluster()
    epochs, owned = settle(c, {"a": c.join("a"), "b": c.join("b")})
    before = c.gc.consumer_groups["g"]
    assert before.state == "Stable" and sorted(p for o in owned.values() for p in o[T]) == [0, 1, 2, 3]

    c.restart()
    after = c.gc.consumer_groups["g"]
    assert (after.group_epoch, after.assignment_epoch, after.state, after.assignor_name) == \
        (before.group_epoch, before.assignment_epoch, "Stable", "uniform")
    assert after.target == before.target and after.subscription_metadata == before.subscription_metadata
    for m in ("a", "b"):
        assert after.members[m].member_epoch == epochs[m] and after.members[m].assigned == owned[m]
        # the member goes on at its epoch: no error, no new assignment, no epoch bump
        r = c.beat(m, epochs[m], owned[m])
        assert (r.error, r.member_epoch, r.assignment) == (0, epochs[m], None)
    assert c.gc.consumer_groups["g"].group_epoch == before.group_epoch
    # an unchanged heartbeat writes nothing
    n = len(c.records())
    c.beat("a", epochs["a"], owned["a"])
    assert len(c.records()) == n


def test_records_are_kafkas_layouts():
    c = Cluster()
    c.join("a")
    kinds = [k.kind for k, _ in c.records()]
    assert sorted(set(kinds)) == [3, 4, 5, 6, 7, 8]
    by_kind = {k.kind: (k, v) for k, v in c.records()}
    key, value = by_kind[GROUP_METADATA]
    # ConsumerGroupMetadataValue v0: version 0, epoch 1, no tagged fields
    assert value == bytes.fromhex("0000" "00000001" "00")
    member_key, member_value = by_kind[MEMBER_METADATA]
    assert member_key.member_id == "a"
    md = decode_value(MEMBER_METADATA, member_value)
    assert (md.subscribed_topic_names, md.rebalance_timeout_ms, md.instance_id) == (["t"], 30_000, None)
    current = decode_value(CURRENT_MEMBER_ASSIGNMENT, by_kind[CURRENT_MEMBER_ASSIGNMENT][1])
    assert (current.member_epoch, current.state) == (1, 0)
    assert [(tp.topic_id, tp.partitions) for tp in current.assigned_partitions] == [(T, [0, 1, 2, 3])]


def test_a_member_leaving_is_tombstoned_and_stays_gone():
    c = Cluster()
    settle(c, {"a": c.join("a"), "b": c.join("b")})
    r = c.gc.consumer_group_heartbeat("g", "b", -1)
    assert r.error == 0
    gone = [(k.kind, k.member_id) for k, v in c.records() if v is None]
    # Kafka's order: current assignment, target assignment, then the member's metadata
    assert gone == [(CURRENT_MEMBER_ASSIGNMENT, "b"), (TARGET_ASSIGNMENT_MEMBER, "b"), (MEMBER_METADATA, "b")]
    c.restart()
    assert list(c.gc.consumer_groups["g"].members) == ["a"]


def test_a_deleted_group_is_tombstoned_and_compaction_keeps_the_last():
    c = Cluster()
    settle(c, {"a": c.join("a")})
    c.gc.consumer_group_heartbeat("g", "a", -1)
    c.join("x", group="h")          # another group in the log, which must survive
    assert c.gc.delete_groups(["g"]) == {"g": 0}
    assert c.records()[-1] == (decode_consumer_group_key(consumer_group_key(GROUP_METADATA, "g")), None)
    c.restart()
    assert "g" not in c.gc.consumer_groups and "h" in c.gc.consumer_groups
    # compaction: only the last record of each key, tombstones dropped; the same groups load
    for p, recs in c.store.partitions.items():
        last = {}
        for r in recs:
            last.pop(r.key, None)
            last[r.key] = r
        c.store.partitions[p] = [StoredRecord(k, r.value) for k, r in last.items() if r.value is not None]
    h = c.gc.consumer_groups["h"]
    c.restart()
    assert set(c.gc.consumer_groups) == {"h"}
    assert c.gc.consumer_groups["h"].members["x"].assigned == h.members["x"].assigned


def test_the_heartbeat_is_answered_once_the_write_is_replicated():
    c = Cluster()
    got = []
    c.store.hold = True
    c.gc.consumer_group_heartbeat("g", "a", 0, subscribed_topic_names=["t"], rebalance_timeout_ms=30_000,
                                  owned=[], callback=got.append)
    assert got == []                   # written, not replicated yet
    assert c.store.release() == 1
    assert got[0].error == 0 and got[0].member_epoch == 1
    # a write that fails answers what sends the client to find its coordinator again
    c.store.hold = False
    c.store.fail = E.NotLeaderOrFollowerError("moved")
    r = c.gc.consumer_group_heartbeat("g", "b", 0, subscribed_topic_names=["t"], rebalance_timeout_ms=30_000,
                                      owned=[])
    assert r.error == E.NotCoordinatorError.code
    c.store.fail = None
    # what was not written is written with the next change
    r = c.gc.consumer_group_heartbeat("g", "c", 0, subscribed_topic_names=["t"], rebalance_timeout_ms=30_000,
                                      owned=[])
    assert r.error == 0
    c.restart()
    assert set(c.gc.consumer_groups["g"].members) == {"a", "b", "c"}


def test_a_session_timeout_after_a_restart_is_persisted():
    c = Cluster()
    settle(c, {"a": c.join("a"), "b": c.join("b")})
    c.restart()
    c.now += 30_000
    c.beat("a", c.gc.consumer_groups["g"].members["a"].member_epoch,
           c.gc.consumer_groups["g"].members["a"].assigned)
    c.now += 30_000                    # b silent for 60 s since the load: fenced
    c.gc.tick()
    assert set(c.gc.consumer_groups["g"].members) == {"a"}
    c.restart()
    assert set(c.gc.consumer_groups["g"].members) == {"a"}


def test_a_static_member_away_keeps_its_partitions_across_a_restart():
    c = Cluster()
    r = c.written(c.gc.consumer_group_heartbeat("g", "s1", 0, instance_id="i1", subscribed_topic_names=["t"],
                                                rebalance_timeout_ms=30_000, owned=[]))
    assert c.gc.consumer_group_heartbeat("g", "s1", -2, instance_id="i1").error == 0
    c.restart()
    m = c.gc.consumer_groups["g"].members["s1"]
    assert (m.member_epoch, m.instance_id, m.assigned) == (-2, "i1", r.assignment)
    # back under a new member id within its session: the same partitions, no rebalance
    back = c.written(c.gc.consumer_group_heartbeat("g", "s2", 0, instance_id="i1", subscribed_topic_names=["t"],
                                                   rebalance_timeout_ms=30_000, owned=[]))
    assert (back.error, back.member_epoch, back.assignment) == (0, r.member_epoch, r.assignment)


def test_a_group_with_an_unreadable_record_is_left_out_and_the_others_load():
    c = Cluster()
    c.join("a", group="g")
    c.join("x", group="h")
    bad = consumer_group_key(CURRENT_MEMBER_ASSIGNMENT, "g", "a")
    c.store.append(partition_for("g", PARTITIONS), [(bad, b"\x00\x00\x00")], 0)
    c.restart()
    assert "g" not in c.gc.consumer_groups and "h" in c.gc.consumer_groups


# --- regex subscriptions ---

def test_a_regex_subscription_is_resolved_on_the_broker_and_follows_new_topics():
    ids = {n: uuid.UUID(int=i + 1) for i, n in enumerate(["pre-a", "pre-b", "pre-c", "other", "xpre-a"])}
    topics = {n: (ids[n], 2) for n in ("pre-a", "pre-b", "other", "xpre-a")}
    c = Cluster(topics)
    r = c.join("a", names=(), regex="pre-.*")
    assert r.error == 0 and r.assignment == {ids["pre-a"]: {0, 1}, ids["pre-b"]: {0, 1}}
    epoch = c.gc.consumer_groups["g"].group_epoch
    topics["pre-c"] = (ids["pre-c"], 1)           # created: the first heartbeat a second later sees it
    assert c.beat("a", r.member_epoch, r.assignment).assignment is None
    c.now += 1000
    r2 = c.beat("a", r.member_epoch, r.assignment)
    assert c.gc.consumer_groups["g"].group_epoch == epoch + 1
    assert r2.assignment == {ids["pre-a"]: {0, 1}, ids["pre-b"]: {0, 1}, ids["pre-c"]: {0}}
    del topics["pre-a"]                           # deleted: gone from the assignment at once
    r3 = c.beat("a", r2.member_epoch, r2.assignment)
    assert c.gc.consumer_groups["g"].group_epoch == epoch + 2
    assert ids["pre-a"] not in (r3.assignment or {}) and ids["pre-c"] in r3.assignment
    # the regex survives a restart
    c.restart()
    assert c.gc.consumer_groups["g"].members["a"].subscribed_topic_regex == "pre-.*"
    r4 = c.beat("a", r3.member_epoch, r3.assignment)
    assert (r4.error, r4.assignment, c.gc.consumer_groups["g"].group_epoch) == (0, None, epoch + 2)


def test_regex_and_names_together_and_bad_regexes():
    topics = {"pre-a": (uuid.UUID(int=1), 1), "t": (uuid.UUID(int=2), 1)}
    c = Cluster(topics)
    r = c.join("a", names=("t",), regex="pre-.*")
    assert set(r.assignment) == {uuid.UUID(int=1), uuid.UUID(int=2)}
    bad = c.join("b", names=(), regex="pre-(")
    assert bad.error == E.InvalidRegularExpressionError.code == 128
    none = c.join("b", names=(), regex=None)
    assert none.error == E.InvalidRequestError.code
