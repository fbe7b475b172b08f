"""KIP-848 consumer groups with confluent-kafka (``group.protocol=consumer``) across a broker
restart, and with a regex subscription resolved on the broker.

A consumer that read records without committing them goes on after its coordinator restarts
(the group is replayed from ``__consumer_offsets``): same member id and epoch, no revocation or
loss of its partitions, so it neither rejoins nor re-reads from the committed offsets.
A consumer subscribed to ``^prefix.*`` gets the matching topics, not the others, and a matching
topic created later joins its assignment."""
import time
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from support.brokers import free_port, running_broker
from test_consumer_group_protocol import produce as produce_over  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.timeout(150)]

PARTITIONS = 3
SETTINGS = {"group_consumer_heartbeat_interval_ms": 300, "group_initial_rebalance_delay_ms": 0,
            "offsets_topic_num_partitions": 5}


def create_topics(broker, *names):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names]).values():
        f.result(10)


def produce(broker, topic, values):
    produce_over(broker, topic, values, PARTITIONS)


class Recorder:
    """A consumer-protocol consumer that records what it reads and every change of assignment."""

    def __init__(self, bootstrap, group, subscription):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000})
        self.seen: list[tuple[str, bytes]] = []
        self.events: list[tuple[str, list]] = []
        self.c.subscribe(subscription, on_assign=self._on("assign"), on_revoke=self._on("revoke"),
                         on_lost=self._on("lost"))

    def _on(self, what):
        return lambda consumer, tps: self.events.append((what, sorted((t.topic, t.partition) for t in tps)))

    def poll_until(self, done, timeout=45):
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, (len(self.seen), self.events)
            m = self.c.poll(0.1)
            if m is not None:
                assert m.error() is None, m.error()
                self.seen.append((m.topic(), m.value()))


def values(prefix, n):
    return [f"{prefix}-{i}".encode() for i in range(n)]


def test_a_consumer_goes_on_across_a_coordinator_restart_without_rebalance_or_rereading(tmp_path):
    port = free_port()
    settings = dict(SETTINGS, listeners=f"PLAINTEXT://127.0.0.1:{port}")
    topic, group = "kip848-restart", f"g-{uuid.uuid4().hex[:6]}"
    with running_broker(tmp_path / "data", **settings) as broker:
        create_topics(broker, topic)
        produce(broker, topic, values("a", 30))
        r = Recorder(broker.bootstrap, group, [topic])
        r.poll_until(lambda: len(r.seen) == 30)
        before = broker.group_coordination().groups.consumer_groups[group]
        (member_id, member), = before.members.items()
        epoch, group_epoch = member.member_epoch, before.group_epoch
        # nothing committed: a consumer that lost its partitions would read them all again
    with running_broker(tmp_path / "data", **settings) as broker:
        produce(broker, topic, values("b", 30))
        r.poll_until(lambda: len(r.seen) >= 60)
        time.sleep(1)          # a duplicate still in flight would arrive now
        r.c.poll(0.5)
        assert sorted(v for _, v in r.seen) == sorted(values("a", 30) + values("b", 30))
        assert r.events == [("assign", [(topic, p) for p in range(PARTITIONS)])]
        after = broker.group_coordination().groups.consumer_groups[group]
        assert list(after.members) == [member_id]
        assert (after.members[member_id].member_epoch, after.group_epoch) == (epoch, group_epoch)
        r.c.close()
        assert after.members == {}


def test_a_regex_subscription_is_resolved_on_the_broker(tmp_path):
    group = f"g-{uuid.uuid4().hex[:6]}"
    with running_broker(tmp_path / "data", **SETTINGS) as broker:
        create_topics(broker, "kip848re-a", "kip848re-b", "kip848other")
        for t in ("kip848re-a", "kip848re-b", "kip848other"):
            produce(broker, t, values(t, 6))
        r = Recorder(broker.bootstrap, group, ["^kip848re-.*"])
        r.poll_until(lambda: len(r.seen) == 12)
        assert sorted(r.seen) == sorted([("kip848re-a", v) for v in values("kip848re-a", 6)] +
                                        [("kip848re-b", v) for v in values("kip848re-b", 6)])
        g = broker.group_coordination().groups.consumer_groups[group]
        (m,) = g.members.values()
        # librdkafka sends its regexes joined: "(^a)|(^b)"; the broker resolves them (fullmatch)
        assert m.subscribed_topic_regex == "(^kip848re-.*)" and m.subscribed_topic_names == ()
        epoch = g.group_epoch
        # a matching topic created later: the next heartbeat resolves it, the group epoch moves on
        create_topics(broker, "kip848re-c")
        produce(broker, "kip848re-c", values("kip848re-c", 6))
        r.poll_until(lambda: len(r.seen) == 18)
        assert sorted(v for t, v in r.seen if t == "kip848re-c") == sorted(values("kip848re-c", 6))
        assert g.group_epoch > epoch
        assert not [t for t, _ in r.seen if t == "kip848other"]
        r.c.close()
