"""The group-based ConsumerConnector against our broker's group coordinator."""
import threading

import pytest
from rdkafka_helpers import confluent_write, create_topic

from fastkafka.client import Producer, ProducerData
from fastkafka.client.admin import AdminClient
from fastkafka.client.connection import BrokerConnection
from fastkafka.client.consumer_connector import (Blacklist, ConsumerTimeout, Whitelist,
                                                 create_consumer)
from fastkafka.protocol import ApiKey

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]

GROUP_APIS = (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
              ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.LEAVE_GROUP)


@pytest.fixture(autouse=True)
def needs_group_coordinator(broker):
    with BrokerConnection("127.0.0.1", broker.port) as conn:
        missing = [k for k in GROUP_APIS if not conn.connect().supports(k)]
    if missing:
        pytest.skip(f"the broker does not advertise the group APIs {missing} yet")


def connector(broker, group, **kw):
    return create_consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                            "auto.offset.reset": "smallest", "consumer.timeout.ms": 1500,
                            "heartbeat.interval.ms": 300, "metadata.refresh.interval.ms": 200, **kw})


def drain(stream):
    out = []
    try:
        for m in stream:
            out.append(m)
    except ConsumerTimeout:
        pass
    return out


def test_streams_split_partitions_and_commit(broker, topic):
    create_topic(broker.bootstrap, topic, 4)
    msgs = [(b"k%d" % i, b"v%d" % i, [("i", b"%d" % i)], i % 4, 1_700_000_000_000 + i) for i in range(80)]
    confluent_write(broker.bootstrap, topic, msgs)
    c = connector(broker, f"g-{topic}", **{"enable.auto.commit": False})
    streams = c.create_message_streams({topic: 2})[topic]
    assert len(streams) == 2
    got = [drain(s) for s in streams]
    parts = [{m.partition for m in g} for g in got]
    assert parts[0] and parts[1] and not parts[0] & parts[1]      # a partition feeds one stream
    every = sorted((m.partition, m.offset, m.key, m.message, m.timestamp, m.headers) for g in got for m in g)
    assert every == sorted((p, i // 4, k, v, ts, h) for i, (k, v, h, p, ts) in enumerate(msgs))
    c.commit_offsets()
    c.shutdown()
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        assert admin.committed_offsets(f"g-{topic}") == {(topic, p): 20 for p in range(4)}
    # a new member of the same group resumes after the committed offsets
    confluent_write(broker.bootstrap, topic, [(None, b"new", None, 1, None)])
    c = connector(broker, f"g-{topic}")
    [s] = c.create_message_streams({topic: 1})[topic]
    assert [(m.partition, m.offset, m.message) for m in drain(s)] == [(1, 20, b"new")]
    c.shutdown()


def test_two_members_share_the_partitions(broker, topic):
    create_topic(broker.bootstrap, topic, 4)
    confluent_write(broker.bootstrap, topic, [(None, b"x%d" % i, None, i % 4, None) for i in range(40)])
    group = f"g-{topic}"
    a = connector(broker, group, **{"consumer.timeout.ms": 3000})
    b = connector(broker, group, **{"consumer.timeout.ms": 3000})
    [sa] = a.create_message_streams({topic: 1})[topic]
    results = {}
    t = threading.Thread(target=lambda: results.setdefault("b", b.create_message_streams({topic: 1})))
    t.start()
    got_a = drain(sa)       # a keeps heartbeating; b's join rebalances the group
    t.join(30)
    got_b = drain(results["b"][topic][0])
    a.commit_offsets()
    b.commit_offsets()
    a.shutdown()
    b.shutdown()
    assert b.owned and a.owned and not (a.owned & b.owned) and len(a.owned | b.owned) == 4
    assert {(m.partition, m.offset) for m in got_a + got_b} == {(i % 4, i // 4) for i in range(40)}


def test_whitelist_picks_up_a_topic_created_later(broker, topic):
    c = connector(broker, f"g-{topic}", **{"consumer.timeout.ms": 8000})
    [s] = c.create_message_streams_by_filter(Whitelist(f"{topic}-.*"), 1)
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        p.send(ProducerData(f"{topic}-late", b"k", [b"hello"]))
        p.send(ProducerData(f"other-{topic}", b"k", [b"not me"]))
    m = next(iter(s))
    c.shutdown()
    assert (m.topic, m.key, m.message) == (f"{topic}-late", b"k", b"hello")


def test_blacklist_filter():
    f = Blacklist("secret.*, __.*")
    assert f.matches("orders") and not f.matches("secret-x") and not f.matches("__consumer_offsets")
    assert not f.matches("orders", internal=True)
    assert Whitelist("a|b").matches("a") and not Whitelist("a").matches("ab")
