"""The seeds' ZooKeeper consumer group: 3 consumers on 6 partitions, then one leaves."""
import json

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from fastkafka.cluster import znodes
from fastkafka.cluster.zk_consumer import ZkConsumerGroup, range_assign

from support.harness import wait_for


pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(120)]


def test_range_assign_is_the_seeds_rule():
    threads = ["c-0", "a-0", "b-0"]
    got = {}
    for t in threads:
        got.update(range_assign(range(7), threads, {t}))
    assert got == {0: "a-0", 1: "a-0", 2: "a-0", 3: "b-0", 4: "b-0", 5: "c-0", 6: "c-0"}
    assert range_assign([0], ["a-0", "b-0"], {"b-0"}) == {}


def test_three_consumers_on_six_partitions_rebalance_when_one_leaves(cluster):
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in a.create_topics([NewTopic("zkc", 6, 1)], operation_timeout=15).values():
        f.result()
    connect = cluster.connect
    members = [ZkConsumerGroup(connect, "g", session_timeout_ms=4000, rebalance_backoff_ms=200,
                               consumer_id=f"host:{i}") for i in range(3)]
    try:
        for m in members:
            m.start({"zkc": 1})

        def settled(ms, per):
            owned = [sorted(p for _, p in m.assignment) for m in ms]
            return all(len(o) == per for o in owned) and sorted(sum(owned, [])) == list(range(6)) and owned
        owned = wait_for(lambda: settled(members, 2), 30, what="2 partitions each")
        assert owned == [[0, 1], [2, 3], [4, 5]]  # contiguous ranges in sorted consumer order
        reg = json.loads(cluster.zk.get(znodes.consumer_id_path("g", "host:0"))[0])
        assert reg["subscription"] == {"zkc": 1} and reg["pattern"] == "static"
        assert cluster.zk.exists(znodes.consumer_id_path("g", "host:0")).ephemeralOwner != 0
        assert cluster.zk.get(znodes.owner_path("g", "zkc", 3))[0] == b"host:1-0"

        members[0].commit({("zkc", 0): 42})
        assert members[2].committed("zkc", 0) == 42 and members[2].committed("zkc", 5) is None
        assert cluster.zk.get(znodes.offset_path("g", "zkc", 0))[0] == b"42"

        members.pop(1).shutdown()
        owned = wait_for(lambda: settled(members, 3), 30, what="3 partitions each")
        assert owned == [[0, 1, 2], [3, 4, 5]]
        assert cluster.zk.get(znodes.owner_path("g", "zkc", 3))[0] == b"host:2-0"
    finally:
        for m in members:
            m.shutdown()
