"""The group-based ConsumerConnector against our broker's group coordinator."""
import threading
import time

import pytest

from fastkafka.client import Producer, ProducerData
from fastkafka.client.admin import AdminClient
from fastkafka.client.connection import BrokerConnection
from fastkafka import errors
from fastkafka.client.config import ClientConfig
from fastkafka.client.consumer_connector import (Blacklist, ConsumerConnector, ConsumerTimeout,
                                                 Whitelist, create_consumer)
from fastkafka.client.group_member import decode_assignment
from fastkafka.protocol import ApiKey

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]

GROUP_APIS = (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
              ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.LEAVE_GROUP)

from support.rdkafka_helpers import confluent_write, create_topic
from support.waits import wait_for


@pytest.fixture(autouse=True)
def needs_group_coordinator(broker):
    with BrokerConnection("127.0.0.1", broker.port) as conn:
        missing = [k for k in GROUP_APIS if not conn.connect().supports(k)]
    assert not missing, f"the broker does not advertise the group APIs {missing}"


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


def settled(*connectors):
    """Every connector has applied the generation its membership last joined, all the same one."""
    gens = {(c.generation_seen, c.member.generation) for c in connectors}
    return len(gens) == 1 and all(g == m and g is not None and g >= 0 for g, m in gens)


def coordinator_view(broker, group):
    """``{member_id: assigned partitions}`` as the group coordinator has it."""
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        g = admin.describe_group(group)
    assert g.group_state == "Stable"
    return {m.member_id: decode_assignment(m.member_assignment) for m in g.members}


def test_two_members_share_the_partitions(broker, topic):
    create_topic(broker.bootstrap, topic, 4)
    everything = {(i % 4, i // 4) for i in range(40)}
    confluent_write(broker.bootstrap, topic, [(None, b"x%d" % i, None, i % 4, None) for i in range(40)])
    group = f"g-{topic}"
    a = connector(broker, group, **{"consumer.timeout.ms": 1000})
    b = connector(broker, group, **{"consumer.timeout.ms": 1000})
    [sa] = a.create_message_streams({topic: 1})[topic]
    assert a.owned == {(topic, p) for p in range(4)}
    results = {}
    t = threading.Thread(target=lambda: results.setdefault("b", b.create_message_streams({topic: 1})))
    t.start()
    got_a = drain(sa)       # a keeps heartbeating; b's join rebalances the group
    t.join(60)
    assert not t.is_alive()
    [sb] = results["b"][topic]
    got_b = drain(sb)
    # a learns of the rebalance from a heartbeat: wait for both to hold the new generation
    wait_for(lambda: settled(a, b), 60, what="a and b on one generation")
    assert b.owned and a.owned and not (a.owned & b.owned) and len(a.owned | b.owned) == 4
    assert coordinator_view(broker, group) == {a.member.member_id: a.owned,
                                               b.member.member_id: b.owned}
    # what a had fetched for b's partitions but not handed out was cut short and left to b
    def seen():
        return {(m.partition, m.offset) for m in got_a + got_b}
    while seen() != everything:
        more_a, more_b = drain(sa), drain(sb)
        assert more_a or more_b, f"never delivered: {sorted(everything - seen())}"
        got_a, got_b = got_a + more_a, got_b + more_b
    assert {m.partition for m in got_b} <= {p for _, p in b.owned}
    a.commit_offsets()
    b.commit_offsets()
    a.shutdown()
    assert not a.owned      # a member that left owns nothing
    # b hears of the rebalance a's leaving started and takes every partition
    wait_for(lambda: len(b.owned) == 4 and settled(b), 60, what="b owning all four partitions")
    assert coordinator_view(broker, group) == {b.member.member_id: b.owned}
    b.shutdown()
    assert not b.owned


def test_a_refused_commit_gives_up_the_partitions(broker, topic):
    """A member the coordinator expelled (it missed a rebalance) hears it from its next commit:
    UNKNOWN_MEMBER_ID there must end its ownership at once, not at its next heartbeat."""
    create_topic(broker.bootstrap, topic, 2)
    confluent_write(broker.bootstrap, topic, [(None, b"x%d" % i, None, i % 2, None) for i in range(4)])
    group, both = f"g-{topic}", {(topic, 0), (topic, 1)}
    # a heartbeats far too rarely to notice b's rebalance before the coordinator gives up on it
    a = connector(broker, group, **{"heartbeat.interval.ms": 240_000, "session.timeout.ms": 300_000,
                                    "rebalance.timeout.ms": 2000, "enable.auto.commit": False})
    b = connector(broker, group, **{"rebalance.timeout.ms": 2000})
    [sa] = a.create_message_streams({topic: 1})[topic]
    next(sa)                                    # handed out, not committed yet
    b.create_message_streams({topic: 1})        # a misses this rebalance and is dropped from it
    assert b.owned == both
    assert a.owned == both                      # a cannot know yet: the window eager groups have
    with pytest.raises(errors.UnknownMemberIdError):
        a.commit_offsets()
    wait_for(lambda: settled(a, b) and a.owned and b.owned, 60, what="a back in the group")
    assert not (a.owned & b.owned) and a.owned | b.owned == both
    assert coordinator_view(broker, group) == {a.member.member_id: a.owned,
                                               b.member.member_id: b.owned}
    a.shutdown()
    b.shutdown()


class Unanswered:
    """A membership whose coordinator stops answering after the first join."""
    rejoin_needed = False

    def __init__(self, tps):
        self.tps, self.member_id, self.generation, self.joins = tps, "m", -1, 0

    def join(self, topics):
        self.joins += 1
        if self.joins > 1:
            raise errors.CoordinatorNotAvailableError("no answer")
        self.generation = 1
        return set(self.tps)

    def heartbeat(self):
        raise errors.CoordinatorNotAvailableError("no answer")

    def commit(self, offsets):
        raise errors.CoordinatorNotAvailableError("no answer")

    def committed(self, tps):
        return {}

    def leave(self):
        pass


def test_a_session_without_heartbeats_gives_up_the_partitions(broker, topic):
    """No heartbeat answered for session.timeout.ms: the coordinator has handed the partitions
    to other members by now, so this one stops handing them out and tries to join again."""
    create_topic(broker.bootstrap, topic, 1)
    membership = Unanswered({(topic, 0)})
    c = ConsumerConnector(ClientConfig({
        "bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}", "session.timeout.ms": 1500,
        "heartbeat.interval.ms": 100, "retry.backoff.ms": 50}), membership=membership)
    start = time.monotonic()
    c.create_message_streams({topic: 1})
    assert c.owned == {(topic, 0)}
    wait_for(lambda: not c.owned and membership.joins > 1, 60, what="the partitions given up")
    assert time.monotonic() - start >= 1.5      # not before the session could have run out
    c.shutdown()
    assert c._thread is not None and not c._thread.is_alive()


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
