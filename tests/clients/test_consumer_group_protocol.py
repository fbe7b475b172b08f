"""KIP-848's consumer group protocol with confluent-kafka (librdkafka 2.16, ``group.protocol=consumer``):
the server-side assignors split partitions between members, a partition is never consumed by two
members at once, offsets committed on revocation carry the handover with nothing lost or read twice,
a leaving member's partitions go back; classic groups keep working beside consumer groups (and a
classic consumer may join a consumer group: tests/clients/test_group_migration_clients.py has the
migration); and ConsumerGroupDescribe answers raw clients and the AdminClient."""
import uuid

import pytest
from confluent_kafka.admin import AdminClient

from support.raw_client import RawClient
from group_members import PARTITIONS, Member, create_topic, poll_until, produce, values  # noqa: E402

from fastkafka.protocol import ApiKey  # noqa: E402

# members are told to heartbeat every 300 ms so a handover takes a few heartbeats, not seconds
pytestmark = [pytest.mark.clients, pytest.mark.timeout(120),
              pytest.mark.broker_config(group_consumer_heartbeat_interval_ms=300, group_initial_rebalance_delay_ms=0)]


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_members_split_partitions_and_hand_them_over_without_loss_or_duplicates(broker, assignor):
    topic, group = f"kip848-{assignor}", f"g-{uuid.uuid4().hex[:6]}"
    create_topic(broker, topic)
    first = values("a", 40)
    produce(broker, topic, first)
    owners = {}
    a = Member(broker, group, topic, owners, assignor=assignor)
    # one member: every partition; it reads half the records and commits nothing yet
    poll_until([a], lambda: len(a.owned) == PARTITIONS and len(a.seen) >= 20)

    b = Member(broker, group, topic, owners, assignor=assignor)
    poll_until([a, b], lambda: len(a.owned) == len(b.owned) == PARTITIONS // 2)
    assert a.owned.isdisjoint(b.owned)
    second = values("b", 40)
    produce(broker, topic, second)
    everything = sorted(first + second)
    poll_until([a, b], lambda: len(a.seen) + len(b.seen) >= len(everything))
    # what a read of the partitions it gave up was committed on revocation: b started after it
    assert sorted(a.seen + b.seen) == everything
    for m in (a, b):
        m.c.commit(asynchronous=False)

    # b leaves: its partitions go back to a, which reads on from b's committed offsets
    b.c.close()
    for p in list(owners):
        if owners[p] is b:
            del owners[p]
    poll_until([a], lambda: len(a.owned) == PARTITIONS)
    third = values("c", 20)
    produce(broker, topic, third)
    before = len(a.seen)
    poll_until([a], lambda: len(a.seen) >= before + len(third))
    assert sorted(a.seen + b.seen) == sorted(everything + third)
    a.c.close()


def test_classic_and_consumer_protocol_groups_side_by_side(broker):
    topic = "kip848-mixed"
    create_topic(broker, topic)
    produce(broker, topic, values("m", 20))
    classic = Member(broker, "classic-group", topic, {}, protocol="classic")
    modern = Member(broker, "modern-group", topic, {})
    poll_until([classic, modern], lambda: len(classic.seen) == len(modern.seen) == 20)
    assert sorted(classic.seen) == sorted(modern.seen) == sorted(values("m", 20))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(10).valid}
    assert listed["modern-group"].type.name == "CONSUMER"
    assert listed["classic-group"].type.name == "CLASSIC"
    # a classic consumer may join the consumer group (KIP-848's migration path, as Kafka 4 lets
    # it): it gets a share of the partitions once the consumer-protocol member gives them up
    joiner = Member(broker, "modern-group", topic, modern.owners, protocol="classic")
    poll_until([modern, joiner], lambda: joiner.owned and modern.owned
               and sorted(joiner.owned | modern.owned) == list(range(PARTITIONS)))
    joiner.c.close()
    classic.c.close()
    modern.c.close()


def test_describe_consumer_group_raw_and_through_the_admin_client(broker):
    topic, group = "kip848-describe", "described"
    create_topic(broker, topic)
    produce(broker, topic, values("d", 8))
    a = Member(broker, group, topic, {})
    poll_until([a], lambda: len(a.seen) == 8)
    topic_id = broker.topics.get(topic).topic_id

    raw = RawClient(broker.port)
    resp = raw.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [group, "no-such-group"],
                                                        "include_authorized_operations": False})
    g, missing = resp.groups
    assert (g.error_code, g.group_state, g.assignor_name) == (0, "Stable", "uniform")
    assert g.group_epoch == g.assignment_epoch >= 1
    (m,) = g.members
    assert m.member_epoch == g.group_epoch and m.subscribed_topic_names == [topic]
    (tp,) = m.assignment.topic_partitions
    assert (tp.topic_id, tp.topic_name, tp.partitions) == (topic_id, topic, list(range(PARTITIONS)))
    assert m.target_assignment.topic_partitions[0].partitions == list(range(PARTITIONS))
    assert missing.error_code == 69          # GROUP_ID_NOT_FOUND

    # a heartbeat of a raw member joins it; the group's epoch moves on and its target splits
    hb = raw.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": "raw-member", "member_epoch": 0, "rebalance_timeout_ms": 5000,
        "subscribed_topic_names": [topic], "topic_partitions": []})
    assert (hb.error_code, hb.member_id, hb.member_epoch) == (0, "raw-member", g.group_epoch + 1)
    assert hb.heartbeat_interval_ms == 300
    left = raw.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {"group_id": group, "member_id": "raw-member",
                                                         "member_epoch": -1})
    assert (left.error_code, left.member_epoch) == (0, -1)
    raw.sock.close()

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    desc = admin.describe_consumer_groups([group])[group].result(10)
    assert desc.type.name == "CONSUMER" and desc.partition_assignor == "uniform"
    (member,) = desc.members
    assert sorted(tp.partition for tp in member.assignment.topic_partitions) == list(range(PARTITIONS))
    assert {tp.topic for tp in member.assignment.topic_partitions} == {topic}
    a.c.close()
