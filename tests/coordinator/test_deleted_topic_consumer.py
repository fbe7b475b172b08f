"""A cooperative-sticky consumer whose subscribed topic is deleted under it (librdkafka's 0113
h_delete_topic, through confluent-kafka): the deleted topic's partitions are reported lost, the
other topic's stay assigned and keep flowing, and close() returns at once.

librdkafka 2.0.2 (Debian's, under kcat and the CI's test-runner) hangs in that close whatever the
broker answers: a removed partition keeps a barrier op holding its own reference in its
unforwarded fetch queue, so it is never freed and its leader's broker handle never terminates
(fixed upstream by confluentinc/librdkafka#4187, in 2.0.3). confluent-kafka bundles a fixed
librdkafka, so this checks our side of the exchange: the Metadata and Fetch answers for a deleted
topic (UNKNOWN_TOPIC_OR_PARTITION, as Kafka's KafkaApis gives) that make the client drop it."""
import time

import pytest

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]


def _consumer(broker):
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-deleted",
                     "auto.offset.reset": "earliest", "enable.auto.commit": True,
                     "partition.assignment.strategy": "cooperative-sticky",
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 100,
                     # the client's own delays before it believes a topic gone: the periodic refresh of the
                     # subscribed topics (0113 sets 3 s), then newer librdkafka's 30 s of propagation grace
                     "topic.metadata.refresh.interval.ms": 1000, "topic.metadata.propagation.max.ms": 1000})


def _produce(broker, topic, n):
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"m%d" % i, partition=i % 2)
    assert p.flush(20) == 0


def _poll_until(consumer, done, got, timeout=30):
    """Poll until ``done()``, adding each message's offset to ``got[topic]``."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"never happened; assignment {consumer.assignment()}, got {got}"
        m = consumer.poll(0.1)
        if m is not None and m.error() is None:
            got.setdefault(m.topic(), []).append(m.offset())


def test_deleted_topic_is_lost_the_other_kept_and_close_is_prompt(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(t, 2, 1) for t in ("kept", "doomed")]).values():
        f.result(10)
    _produce(broker, "kept", 20)
    _produce(broker, "doomed", 20)
    c = _consumer(broker)
    lost, revoked = [], []
    c.subscribe(["kept", "doomed"], on_lost=lambda _c, ps: lost.extend(ps),
                on_revoke=lambda _c, ps: revoked.extend(ps))
    got = {}
    _poll_until(c, lambda: sum(map(len, got.values())) >= 40, got)
    assert {t: sorted(o) for t, o in got.items()} == {t: sorted(list(range(10)) * 2) for t in ("kept", "doomed")}

    admin.delete_topics(["doomed"])["doomed"].result(10)
    _poll_until(c, lambda: {(tp.topic, tp.partition) for tp in c.assignment()} == {("kept", 0), ("kept", 1)}, {})
    # lost (not merely revoked): the topic is gone, so there is nothing to commit for it
    assert sorted((tp.topic, tp.partition) for tp in lost + revoked) == [("doomed", 0), ("doomed", 1)]
    assert lost, "the deleted topic's partitions were revoked, not reported lost"

    _produce(broker, "kept", 10)      # the surviving topic still flows after the rebalance
    more = {}
    _poll_until(c, lambda: len(more.get("kept", [])) >= 10, more)
    assert sorted(more["kept"]) == sorted(list(range(10, 15)) * 2) and "doomed" not in more

    t0 = time.monotonic()
    c.close()
    took = time.monotonic() - t0
    assert took < 5, f"close() took {took:.1f}s after the topic was deleted"
