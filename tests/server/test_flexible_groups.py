"""The group APIs at their flexible versions (KIP-482), driven with raw requests against a
real broker: what each new field does, and the older versions beside them."""
import pytest

from fastkafka import errors as E
from fastkafka.protocol import ApiKey

from support.raw_client import RawClient as Raw

pytestmark = pytest.mark.broker_config(group_initial_rebalance_delay_ms=0)

PROTOCOLS = [{"name": "range", "metadata": b"\0\1"}]


def join(c, v, group, member_id="", instance=None, protocols=PROTOCOLS, reason=None):
    return c.call(ApiKey.JOIN_GROUP, v, {
        "group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
        "member_id": member_id, "group_instance_id": instance, "protocol_type": "consumer",
        "protocols": protocols, "reason": reason})


def sync(c, v, group, generation, member_id, assignments=(), **protocol):
    return c.call(ApiKey.SYNC_GROUP, v, {
        "group_id": group, "generation_id": generation, "member_id": member_id,
        "assignments": list(assignments), **protocol})


def test_find_coordinator_v4_answers_every_key_and_v3_one(broker):
    c = Raw(broker.port)
    r = c.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g1", "g2"]})
    assert [(x.key, x.node_id, x.port, x.error_code) for x in r.coordinators] == [
        ("g1", broker.broker_id, broker.port, 0), ("g2", broker.broker_id, broker.port, 0)]
    r = c.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["txn"]})
    assert [(x.key, x.error_code) for x in r.coordinators] == [("txn", 0)]
    r = c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g1", "key_type": 0})
    assert (r.error_code, r.node_id, r.port) == (0, broker.broker_id, broker.port)
    # an unknown key type fails the whole request, each key answered with INVALID_REQUEST
    r = c.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 7, "coordinator_keys": ["a", "b"]})
    assert [(x.key, x.error_code) for x in r.coordinators] == [
        ("a", E.InvalidRequestError.code), ("b", E.InvalidRequestError.code)]


def test_join_sync_heartbeat_describe_list_at_the_newest_versions(broker):
    c = Raw(broker.port)
    first = join(c, 9, "g", reason="starting")
    # KIP-394 (v4+): an id first; v7+: an error answers null protocol type and name
    assert first.error_code == E.MemberIdRequiredError.code
    assert (first.protocol_type, first.protocol_name) == (None, None)
    r = join(c, 9, "g", member_id=first.member_id)
    assert (r.error_code, r.generation_id, r.protocol_type, r.protocol_name) == (0, 1, "consumer", "range")
    assert r.leader == r.member_id == first.member_id and r.skip_assignment is False
    mid = r.member_id
    # SyncGroup v5: a protocol that is not the group's is refused, a null one is not checked
    bad = sync(c, 5, "g", 1, mid, protocol_type="consumer", protocol_name="roundrobin")
    assert bad.error_code == E.InconsistentGroupProtocolError.code and bad.protocol_name is None
    bad = sync(c, 5, "g", 1, mid, protocol_type="connect", protocol_name="range")
    assert bad.error_code == E.InconsistentGroupProtocolError.code
    s = sync(c, 5, "g", 1, mid, [{"member_id": mid, "assignment": b"A"}],
             protocol_type="consumer", protocol_name=None)
    assert (s.error_code, s.assignment, s.protocol_type, s.protocol_name) == (0, b"A", "consumer", "range")
    assert sync(c, 3, "g", 1, mid).assignment == b"A"          # v3 still answers
    hb = c.call(ApiKey.HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": mid})
    assert hb.error_code == 0
    d = c.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": False})
    assert [(g.group_id, g.group_state, g.protocol_data, [m.member_id for m in g.members])
            for g in d.groups] == [("g", "Stable", "range", [mid])]
    # ListGroups v4: states_filter, ignoring case; every group's state
    join(c, 5, "other-empty")           # MEMBER_ID_REQUIRED leaves "other-empty" Empty
    lg = c.call(ApiKey.LIST_GROUPS, 4, {"states_filter": []})
    assert {(g.group_id, g.group_state) for g in lg.groups} == {("g", "Stable"), ("other-empty", "Empty")}
    lg = c.call(ApiKey.LIST_GROUPS, 4, {"states_filter": ["stable"]})
    assert [(g.group_id, g.protocol_type, g.group_state) for g in lg.groups] == [("g", "consumer", "Stable")]
    lg = c.call(ApiKey.LIST_GROUPS, 4, {"states_filter": ["Dead", "CompletingRebalance"]})
    assert lg.groups == []
    assert {g.group_id for g in c.call(ApiKey.LIST_GROUPS, 2, {}).groups} == {"g", "other-empty"}


def test_leave_group_v5_answers_each_member(broker):
    c = Raw(broker.port)
    a = join(c, 9, "s", instance="inst-a")                        # static: no MEMBER_ID_REQUIRED
    assert a.error_code == 0
    sync(c, 5, "s", a.generation_id, a.member_id, [{"member_id": a.member_id, "assignment": b""}])
    r = c.call(ApiKey.LEAVE_GROUP, 5, {"group_id": "s", "members": [
        {"member_id": "stale-id", "group_instance_id": "inst-a", "reason": "old process"},
        {"member_id": "", "group_instance_id": "nobody"},
        {"member_id": "ghost", "group_instance_id": None},
        {"member_id": "", "group_instance_id": "inst-a", "reason": "admin removal"}]})
    assert r.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [
        ("stale-id", "inst-a", E.FencedInstanceIdError.code),
        ("", "nobody", E.UnknownMemberIdError.code),
        ("ghost", None, E.UnknownMemberIdError.code),
        ("", "inst-a", 0)]
    d = c.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["s"]})
    assert d.groups[0].group_state == "Empty" and d.groups[0].members == []
    # an unknown group: every member is unknown, the request itself is fine (Kafka's answer)
    r = c.call(ApiKey.LEAVE_GROUP, 3, {"group_id": "nope", "members": [{"member_id": "m"}]})
    assert (r.error_code, [m.error_code for m in r.members]) == (0, [E.UnknownMemberIdError.code])
    # v0-v2 keep the single member id and the top-level error
    r = c.call(ApiKey.LEAVE_GROUP, 2, {"group_id": "nope", "member_id": "m"})
    assert r.error_code == E.UnknownMemberIdError.code
