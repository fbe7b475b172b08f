"""Consumer groups with real clients against a real broker: confluent-kafka (range and
cooperative-sticky), kafka-python, aiokafka, kcat -G; a SIGKILLed member's partitions move."""
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]


def create_and_fill(broker, topic, partitions, n):
    create(broker, topic, partitions)
    fill(broker, topic, partitions, n)


def create(broker, topic, partitions):
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def fill(broker, topic, partitions, n):
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"m%d" % i, partition=i % partitions)
    assert p.flush(20) == 0


def confluent_consumer(broker, group, strategy="range", **extra):
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "partition.assignment.strategy": strategy, "session.timeout.ms": 6000,
                     "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 100, **extra})


def poll_all(consumers, n, timeout=40):
    """Poll every consumer round robin until ``n`` messages arrived in total."""
    got = {id(c): [] for c in consumers}
    deadline = time.monotonic() + timeout
    while sum(map(len, got.values())) < n and time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got[id(c)].append((m.partition(), m.offset()))
    return [got[id(c)] for c in consumers]


def wait_assignment(consumers, predicate, timeout=40):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        sets = [{tp.partition for tp in c.assignment()} for c in consumers]
        if predicate(sets):
            return sets
    raise AssertionError(f"assignment never settled: {[c.assignment() for c in consumers]}")


def disjoint_cover(n):
    def ok(sets):
        union = set().union(*sets)
        return union == set(range(n)) and sum(map(len, sets)) == n and all(sets)
    return ok


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_group_splits_partitions_and_commits(broker, strategy):
    create(broker, "orders", 4)
    t0 = time.monotonic()
    a = confluent_consumer(broker, "g-" + strategy, strategy)
    a.subscribe(["orders"])
    wait_assignment([a], lambda s: s[0] == {0, 1, 2, 3})
    b = confluent_consumer(broker, "g-" + strategy, strategy)
    b.subscribe(["orders"])
    sets = wait_assignment([a, b], disjoint_cover(4))
    assert all(len(s) == 2 for s in sets)
    print("two members settled after", time.monotonic() - t0)
    fill(broker, "orders", 4, 400)
    got = poll_all([a, b], 400)
    assert sorted(x for g in got for x in g) == sorted((p, o) for p in range(4) for o in range(100))
    a.commit(asynchronous=False)
    b.commit(asynchronous=False)
    # committed offsets are visible to a fresh member of the group
    b.close()
    wait_assignment([a], lambda s: s[0] == {0, 1, 2, 3})
    committed = a.committed([tp for tp in a.assignment()], timeout=10)
    assert {tp.partition: tp.offset for tp in committed} == {p: 100 for p in range(4)}
    a.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    groups = admin.list_consumer_groups().result(10)
    assert "g-" + strategy in {g.group_id for g in groups.valid}


def test_kafka_python_group_consume_commit_and_admin(broker):
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
    create_and_fill(broker, "kp", 3, 90)
    c = KafkaConsumer("kp", bootstrap_servers=broker.bootstrap, group_id="kpg",
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=30_000)   # only bounds the wait: we stop at 90
    got = []
    for m in c:
        got.append((m.partition, m.offset))
        if len(got) == 90:
            break
    assert sorted(got) == [(p, o) for p in range(3) for o in range(30)]
    c.commit()
    assert c.committed(TopicPartition("kp", 1)) == 30
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    desc = admin.describe_groups(["kpg"])["kpg"]
    assert desc["group_state"] == "Stable" and desc["protocol_data"] == "range"
    (member,) = desc["members"]
    assert member["client_host"] == "/127.0.0.1"
    assert member["member_assignment"]["assigned_partitions"] == [{"topic": "kp", "partitions": [0, 1, 2]}]
    # ListGroups v4 (KIP-518) and v5 (KIP-848): kafka-python asks for, and is answered, each
    # group's state and type ("classic": the only kind in ZooKeeper mode)
    assert {"group_id": "kpg", "protocol_type": "consumer", "group_state": "Stable",
            "group_type": "classic"} in admin.list_groups()
    assert admin.delete_groups(["kpg"]) == {"kpg": "NON_EMPTY_GROUP"} or \
        admin.delete_groups(["kpg"])["kpg"] != "OK"
    c.close()
    offsets = admin.list_group_offsets("kpg")["kpg"]
    assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 30, 1: 30, 2: 30}
    assert admin.delete_groups(["kpg"]) == {"kpg": "OK"}
    assert admin.list_group_offsets("kpg") == {"kpg": {}}
    admin.close()


def test_aiokafka_group(broker):
    import aiokafka
    create_and_fill(broker, "aio", 2, 50)

    async def run():
        c = aiokafka.AIOKafkaConsumer("aio", bootstrap_servers=broker.bootstrap, group_id="aiog",
                                      auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        try:
            got = []
            while len(got) < 50:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=500), 30)
                for msgs in batch.values():
                    got += [(m.partition, m.offset) for m in msgs]
            await c.commit()
            tp = aiokafka.TopicPartition("aio", 0)
            return sorted(got), await c.committed(tp)
        finally:
            await c.stop()
    got, committed = asyncio.run(run())
    assert got == [(p, o) for p in range(2) for o in range(25)]
    assert committed == 25


def test_kcat_balanced_consumer(broker):
    assert shutil.which("kcat"), "kcat is missing: make test installs it (ci/install-debian.sh)"
    create_and_fill(broker, "kc", 2, 20)
    # -G: balanced consumer group; exits after 20 messages
    r = subprocess.run(["kcat", "-b", broker.bootstrap, "-G", "kcg", "kc", "-o", "beginning",
                        "-c", "20", "-f", "%p:%o\n", "-X", "session.timeout.ms=6000"],
                       capture_output=True, text=True, timeout=60)
    rows = sorted(r.stdout.split())
    assert rows == sorted(f"{p}:{o}" for p in range(2) for o in range(10)), r.stderr
    desc = broker.coordination.groups.describe_group("kcg")
    assert desc.error == 0 and desc.protocol_type == "consumer"


MEMBER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "killg", "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"})
    c.subscribe(["kill"])
    while True:
        c.poll(0.2)
        if c.assignment():
            print("assigned", flush=True)
""")


@pytest.mark.crash
def test_sigkilled_member_loses_partitions_after_session_timeout(broker):
    create_and_fill(broker, "kill", 4, 4)
    a = confluent_consumer(broker, "killg")
    a.subscribe(["kill"])
    wait_assignment([a], lambda s: s[0] == {0, 1, 2, 3})
    proc = subprocess.Popen([sys.executable, "-c", MEMBER, broker.bootstrap], stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    try:
        wait_assignment([a], lambda s: len(s[0]) == 2)
        assert proc.stdout.readline().strip() == "assigned"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        killed = time.monotonic()
        wait_assignment([a], lambda s: s[0] == {0, 1, 2, 3}, timeout=30)
        # not before the session timeout expired (6 s), well before a rebalance timeout
        assert 4.0 < time.monotonic() - killed < 20
    finally:
        if proc.poll() is None:
            proc.kill()
        a.close()


def test_replaced_static_member_is_fenced(broker):
    """A second process with the same group.instance.id takes the member's place; the first
    must get the fatal FENCED_INSTANCE_ID (KIP-345), not UNKNOWN_MEMBER_ID and a silent rejoin
    that would leave two processes owning the same partitions."""
    from confluent_kafka import KafkaError
    create(broker, "fence", 2)
    a = confluent_consumer(broker, "fg", **{"group.instance.id": "inst-f"})
    a.subscribe(["fence"])
    wait_assignment([a], lambda s: len(s[0]) == 2)
    b = confluent_consumer(broker, "fg", **{"group.instance.id": "inst-f"})
    b.subscribe(["fence"])
    wait_assignment([b], lambda s: len(s[0]) == 2)
    fatal = None
    deadline = time.monotonic() + 20
    try:
        while fatal is None and time.monotonic() < deadline:
            m = a.poll(0.2)
            if m is not None and m.error() is not None and m.error().code() == KafkaError._FATAL:
                fatal = m.error()
            b.poll(0)
    finally:
        b.close()
        a.close()
    assert fatal is not None and "fenced by other consumer" in fatal.str(), fatal


def test_static_member_restart_keeps_its_partitions_without_rebalance(broker):
    create(broker, "st", 4)
    a = confluent_consumer(broker, "stg", **{"group.instance.id": "inst-a", "session.timeout.ms": 10000})
    a.subscribe(["st"])
    b = confluent_consumer(broker, "stg")
    b.subscribe(["st"])
    sets = wait_assignment([a, b], disjoint_cover(4))
    group = broker.coordination.groups.manager.get("stg")
    generation = group.generation_id
    a.close()                                 # a static member does not leave the group on close
    assert len(group.members) == 2
    a2 = confluent_consumer(broker, "stg", **{"group.instance.id": "inst-a", "session.timeout.ms": 10000})
    a2.subscribe(["st"])
    wait_assignment([a2, b], lambda s: s == sets)
    assert group.generation_id == generation and group.state == "Stable"
    a2.close()
    b.close()
