"""``fastkafka mirror`` between two real clusters: records copied intact (keys, headers, CreateTime,
partitions, order), aborted source transactions left out, topic configs copied and followed, new
matching topics and grown partitions picked up while running, keys re-partitioned when the counts
differ, and an active/active pair with prefixes that does not loop."""
from __future__ import annotations

import time

import pytest

from fastkafka.client import AdminClient, Producer, ProducerData, murmur2
from mirror_support import contents, high_watermark, read_topic, wait_for

from confluent_kafka import Producer as CProducer
pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]

T0 = 1_600_000_000_000      # CreateTimes far from now: a copy stamped "now" would show


def end(broker, topic) -> int:
    """The sum of ``topic``'s high watermarks on ``broker`` (0 while it does not exist)."""
    info = broker.topics.get(topic)
    return 0 if info is None else sum(high_watermark(broker, topic, p) for p in range(info.partitions))


def produce_fastkafka(bootstrap, topic, partitions, n, prefix):
    """Small batches (our producer, one send per record group): the mirror merges them."""
    with Producer({"bootstrap.servers": bootstrap, "batch.size": 2048}) as p:
        for i in range(n):
            key = None if i % 7 == 0 else f"k{i % 13}".encode()
            p.send(ProducerData(topic, key, [f"{prefix}-{i}".encode()], partition=i % partitions,
                                headers=[("seq", str(i).encode()), ("empty", None)], timestamp=T0 + i))


def produce_confluent(bootstrap, topic, n, prefix, **conf):
    """Big lz4 batches (librdkafka): the mirror copies them whole."""
    p = CProducer({"bootstrap.servers": bootstrap, "linger.ms": 50, "compression.type": "lz4", **conf})
    for i in range(n):
        p.produce(topic, key=f"u{i % 50}".encode(), value=(f"{prefix}-{i}-".encode() + b"x" * 300),
                  headers=[("origin", b"dc1")], timestamp=T0 + 10_000 + i)
    assert p.flush(30) == 0


def transactions(bootstrap, topic):
    """One committed and one aborted transaction: only the first may be mirrored."""
    p = CProducer({"bootstrap.servers": bootstrap, "transactional.id": "src-txn", "linger.ms": 5})
    p.init_transactions(20)
    for tag, commit in (("committed", True), ("aborted", False)):
        p.begin_transaction()
        for i in range(20):
            p.produce(topic, key=b"t", value=f"{tag}-{i}".encode(), partition=i % 3, timestamp=T0 + 50_000 + i)
        assert p.flush(20) == 0
        (p.commit_transaction if commit else p.abort_transaction)(20)


def test_topics_copied_intact_with_configs(clusters, mirror):
    a, b = clusters
    a.topics.create("orders", 3, configs={"retention.ms": "3600000", "max.message.bytes": "2000000"})
    a.topics.create("profiles", 2, configs={"cleanup.policy": "compact", "segment.bytes": "1048576"})
    a.topics.create("events", 2)
    b.topics.create("events", 3)              # the target's own partition count: keys decide
    produce_fastkafka(a.bootstrap, "orders", 3, 600, "o")
    transactions(a.bootstrap, "orders")
    produce_fastkafka(a.bootstrap, "orders", 3, 60, "o2")       # after the aborted transaction
    produce_confluent(a.bootstrap, "profiles", 3000, "p")
    produce_confluent(a.bootstrap, "events", 500, "e")
    source = {t: read_topic(a.bootstrap, t) for t in ("orders", "profiles", "events")}
    assert sum(map(len, source["orders"].values())) == 600 + 20 + 60

    m = mirror(a, b, "--whitelist", "orders|profiles|events")
    expected = {t: sum(map(len, rows.values())) for t, rows in source.items()}

    def copied():
        return all(end(b, t) >= n for t, n in expected.items())
    wait_for(copied, 30, "the records on the target", m.output)
    assert m.stop() == 0, m.output()     # SIGTERM: the streams commit what they copied, then exit

    # same partition, same order, key/value/headers/CreateTime as the source; nothing aborted
    for t in ("orders", "profiles"):
        assert contents(read_topic(b.bootstrap, t)) == contents(source[t]), t
    got = [r for rows in read_topic(b.bootstrap, "orders").values() for r in rows]
    assert not [r for r in got if r[2].startswith(b"aborted")]
    assert ("empty", None) in got[1][3] and got[1][4] >= T0

    # another partition count: each key's records in its murmur2 partition, in source order
    target_events = read_topic(b.bootstrap, "events")
    assert sorted(r[1:] for rs in target_events.values() for r in rs) == \
        sorted(r[1:] for rs in source["events"].values() for r in rs)
    for p, rows in target_events.items():
        assert all((murmur2(r[1]) & 0x7FFFFFFF) % 3 == p for r in rows)
    by_key = {}
    for rows in target_events.values():
        for r in rows:
            by_key.setdefault(r[1], []).append(r[4])
    assert all(ts == sorted(ts) for ts in by_key.values())

    # topic configs and partition counts copied
    assert b.topics.get("orders").partitions == 3 and b.topics.get("profiles").partitions == 2
    assert b.topics.get("orders").configs["retention.ms"] == "3600000"
    assert b.topics.get("orders").configs["max.message.bytes"] == "2000000"
    assert b.topics.get("profiles").configs["cleanup.policy"] == "compact"
    # SIGTERM committed everything copied to the source group
    with AdminClient({"bootstrap.servers": a.bootstrap}) as admin:
        committed = admin.committed_offsets("KafkaMirror")
    for t in ("orders", "profiles", "events"):
        for p in range(a.topics.get(t).partitions):
            assert committed[t, p] == a.topics.log(t, p).high_watermark, (t, p)


def test_new_topics_partitions_and_config_changes_followed(clusters, mirror):
    a, b = clusters
    m = mirror(a, b, "--whitelist", "new.*", "--config-sync-interval-ms", "500")
    # running, with nothing to mirror yet: its first progress line follows its first topic refresh
    wait_for(lambda: "records/s" in m.output(), 30, "the mirror's first progress line", m.output)
    a.topics.create("new-1", 2)
    a.topics.create("other", 1)
    produce_confluent(a.bootstrap, "new-1", 200, "n", **{"linger.ms": 1})
    wait_for(lambda: end(b, "new-1") == 200, 30, "new-1 mirrored", m.output)
    assert b.topics.get("other") is None

    a.topics.alter_configs("new-1", {"retention.ms": "7200000"})
    wait_for(lambda: b.topics.get("new-1").configs.get("retention.ms") == "7200000", 15,
             "the config change followed", m.output)
    a.topics.add_partitions("new-1", 3)
    wait_for(lambda: b.topics.get("new-1").partitions == 3, 15, "the target topic grown", m.output)
    with Producer({"bootstrap.servers": a.bootstrap}) as p:
        p.send(ProducerData("new-1", None, [b"on the new partition"], partition=2, timestamp=T0))
    wait_for(lambda: high_watermark(b, "new-1", 2) == 1, 15, "the new partition mirrored", m.output)
    assert m.stop() == 0
    assert contents(read_topic(b.bootstrap, "new-1")) == contents(read_topic(a.bootstrap, "new-1"))


def test_active_active_with_prefixes_does_not_loop(clusters, mirror):
    a, b = clusters
    for c, tag in ((a, "A"), (b, "B")):
        c.topics.create("orders", 2)
        produce_confluent(c.bootstrap, "orders", 300, tag)
    ab = mirror(a, b, "--whitelist", ".*", "--source-alias", "A", "--target-alias", "B", "--prefix-topics",
                name="a-to-b")
    ba = mirror(b, a, "--whitelist", ".*", "--source-alias", "B", "--target-alias", "A", "--prefix-topics",
                name="b-to-a")

    def done():
        return end(b, "A.orders") == 300 and end(a, "B.orders") == 300
    wait_for(done, 30, "both directions mirrored", lambda: ab.output() + ba.output())
    time.sleep(2.5)       # several topic refreshes: a loop would have shown by now
    assert ab.stop() == 0 and ba.stop() == 0
    # each side holds its own, the other's copy, and the offset-translation topics of the mirror
    # into it (named after the source; never mirrored on)
    assert sorted(t for t in a.topics.all() if not t.startswith("__")) == \
        ["B.checkpoints.internal", "B.orders", "mm2-offset-syncs.B.internal", "orders"]
    assert sorted(t for t in b.topics.all() if not t.startswith("__")) == \
        ["A.checkpoints.internal", "A.orders", "mm2-offset-syncs.A.internal", "orders"]
    assert contents(read_topic(b.bootstrap, "A.orders")) == contents(read_topic(a.bootstrap, "orders"))
    assert contents(read_topic(a.bootstrap, "B.orders")) == contents(read_topic(b.bootstrap, "orders"))
