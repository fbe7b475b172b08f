"""KIP-848's online migration with real clients (confluent-kafka, librdkafka): a classic group of
consumers (``group.protocol=classic``, eager ``range``) is consuming when a ``group.protocol=consumer``
member joins; the group becomes a consumer group whose classic members keep their protocol, each
partition is owned by one member at a time, offsets committed on revocation carry every handover
(nothing lost, nothing read twice), DescribeGroups and ConsumerGroupDescribe show the group as it
is; when the consumer-protocol member leaves the group is classic again and the classic members
own everything. With ``group.consumer.migration.policy=disabled`` the joining member gets
GROUP_ID_NOT_FOUND, as from Kafka."""
import uuid

import pytest
from confluent_kafka.admin import AdminClient

from support.brokers import running_broker
from support.raw_client import RawClient
from group_members import PARTITIONS, Member, create_topic, owned_once, poll_until, produce, values  # noqa: E402

from fastkafka.protocol import ApiKey  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.timeout(150),
              pytest.mark.broker_config(group_consumer_heartbeat_interval_ms=300, group_initial_rebalance_delay_ms=0)]


def test_a_consumer_member_joins_a_classic_group_and_leaves_it_classic_again(broker):
    topic, group = "migrate", f"g-{uuid.uuid4().hex[:6]}"
    create_topic(broker, topic)
    first = values("a", 40)
    produce(broker, topic, first)
    owners = {}
    classic = [Member(broker, group, topic, owners, "classic") for _ in range(2)]
    poll_until(classic, lambda: owned_once(classic) and all(m.owned for m in classic)
               and sum(len(m.seen) for m in classic) >= 20)

    modern = Member(broker, group, topic, owners, "consumer")
    everyone = classic + [modern]
    poll_until(everyone, lambda: modern.owned and owned_once(everyone))
    raw = RawClient(broker.port)
    (described,) = raw.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [group],
                                                               "include_authorized_operations": False}).groups
    assert described.error_code == 0 and len(described.members) == 3
    assigned = [p for m in described.members for tp in m.assignment.topic_partitions for p in tp.partitions]
    assert sorted(assigned) == list(range(PARTITIONS))
    (classic_view,) = raw.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group],
                                                           "include_authorized_operations": False}).groups
    assert (classic_view.error_code, classic_view.protocol_type) == (0, "consumer")
    assert len(classic_view.members) == 3
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(10).valid}
    assert listed[group].type.name == "CONSUMER"

    second = values("b", 40)
    produce(broker, topic, second)
    poll_until(everyone, lambda: sum(len(m.seen) for m in everyone) >= 80)

    modern.c.close()             # the last consumer-protocol member leaves: classic again
    poll_until(classic, lambda: owned_once(classic) and all(m.owned for m in classic))
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(10).valid}
    assert listed[group].type.name == "CLASSIC"
    (gone,) = raw.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [group],
                                                          "include_authorized_operations": False}).groups
    assert gone.error_code == 69                     # GROUP_ID_NOT_FOUND: not a consumer group now
    (classic_view,) = raw.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group],
                                                           "include_authorized_operations": False}).groups
    assert classic_view.group_state in ("Stable", "CompletingRebalance") and len(classic_view.members) == 2
    raw.sock.close()

    third = values("c", 40)
    produce(broker, topic, third)
    poll_until(classic, lambda: sum(len(m.seen) for m in everyone) >= 120)
    # what a member read of a partition it gave up was committed on revocation: the next owner
    # started after it, so every record was read exactly once across the three generations
    assert sorted(r for m in everyone for r in m.seen) == sorted(first + second + third)
    for m in classic:
        m.c.close()


def test_the_disabled_policy_keeps_a_classic_group_closed_to_consumer_members(tmp_path):
    with running_broker(tmp_path / "data", group_initial_rebalance_delay_ms=0,
                        group_consumer_migration_policy="disabled") as broker:
        topic, group = "no-migration", "closed"
        create_topic(broker, topic)
        produce(broker, topic, values("x", 8))
        member = Member(broker, group, topic, {}, "classic")
        poll_until([member], lambda: len(member.seen) == 8)
        raw = RawClient(broker.port)
        hb = raw.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": group, "member_id": "newcomer", "member_epoch": 0, "rebalance_timeout_ms": 5000,
            "subscribed_topic_names": [topic], "topic_partitions": []})
        assert hb.error_code == 69                   # GROUP_ID_NOT_FOUND, as Kafka answers
        (view,) = raw.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group],
                                                       "include_authorized_operations": False}).groups
        assert (view.group_state, len(view.members)) == ("Stable", 1)
        raw.sock.close()
        member.c.close()
