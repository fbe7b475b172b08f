"""Replication end to end: RF=3 over three real brokers and real ZooKeeper, real clients, real kills."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from fastkafka import records
from fastkafka.protocol import ApiKey

from harness import Cluster, wait_for
from test_cluster import raw_call, settle

pytestmark = [pytest.mark.zk, pytest.mark.timeout(300)]

NOT_ENOUGH_REPLICAS = 19
LONG_SESSION_MS = 4000     # the most the tests' ensemble allows (tickTime 200)


def create_replicated(cluster, topic: str, partitions: int, rf: int = 3, **configs) -> None:
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})
    settle(a.create_topics([NewTopic(topic, partitions, rf, config={k.replace("_", "."): str(v)
                                                                    for k, v in configs.items()})],
                           operation_timeout=15))
    wait_for(lambda: all((s := cluster.state(topic, p)) and len(s.isr) == rf for p in range(partitions)),
             what=f"{topic}: every partition with {rf} in-sync replicas")


def read_all(cluster, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, list[tuple[int, bytes]]]:
    """Every committed record of ``topic``, as (offset, value) per partition, up to the high watermarks."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"check-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in range(partitions)}
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout
    while any((got[p][-1][0] + 1 if got[p] else 0) < ends[p] for p in got) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got[m.partition()].append((m.offset(), m.value()))
    c.close()
    return got


def partition_files(cluster, topic: str, partition: int) -> dict[int, bytes]:
    """Each broker's bytes of the partition's segments, concatenated in offset order."""
    out = {}
    for b in cluster.brokers.values():
        d = os.path.join(b.log_dir, f"{topic}-{partition}")
        names = sorted(f for f in os.listdir(d) if f.endswith(".log"))
        out[b.broker_id] = b"".join(open(os.path.join(d, f), "rb").read() for f in names)
    return out


def produce_raw(port: int, topic: str, partition: int, acks: int, value: bytes = b"x") -> int:
    batch = records.build_batch([(None, value, [], int(time.time() * 1000))])
    body = {"acks": acks, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    return raw_call(port, ApiKey.PRODUCE, 7, body).responses[0].partition_responses[0].error_code


def test_acks_all_loses_nothing_while_leaders_are_killed(cluster):
    """An idempotent acks=all producer streams while the leader (the controller among them) is
    killed with SIGKILL, again and again: every acknowledged record is there exactly once, in order."""
    create_replicated(cluster, "durable", 3, min_insync_replicas=2)
    acked: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(3)}
    failed = []

    def delivered(err, msg):
        if err is None:
            acked[msg.partition()].append((msg.offset(), msg.value()))
        else:
            failed.append(err)

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                         "message.timeout.ms": 120000, "linger.ms": 5})
    stop = threading.Event()

    def stream():
        i = 0
        while not stop.is_set():
            try:
                producer.produce("durable", value=b"%08d" % i, partition=i % 3, on_delivery=delivered)
                i += 1
            except BufferError:
                pass
            producer.poll(0.002)

    t = threading.Thread(target=stream)
    t.start()
    kills = []
    try:
        for k in range(6):
            part = k % 3
            victim = cluster.state("durable", part).leader
            before = sum(map(len, acked.values()))
            cluster.brokers[victim].kill()
            kills.append(victim)
            wait_for(lambda: cluster.state("durable", part).leader not in (victim, -1), 30,
                     what=f"a new leader for durable-{part}")
            wait_for(lambda: sum(map(len, acked.values())) > before + 50, 60, what="acks with the victim down")
            cluster.brokers[victim].start()
            cluster.wait_registered(set(cluster.brokers))
            wait_for(lambda: all(len(cluster.state("durable", p).isr) == 3 for p in range(3)), 60,
                     what="the restarted broker back in every ISR")
    finally:
        stop.set()
        t.join()
        assert producer.flush(120) == 0
    assert not failed, failed[:5]
    assert len(set(kills)) > 1 and sum(map(len, acked.values())) > 1000

    got = read_all(cluster, "durable", 3)
    for p in range(3):
        values = [v for _, v in got[p]]
        assert len(values) == len(set(values)), f"durable-{p}: duplicates"
        assert values == sorted(values), f"durable-{p}: out of order"
        assert dict(acked[p]).items() <= dict(got[p]).items(), f"durable-{p}: acknowledged records lost or moved"
    # and the replicas agree byte for byte once they have caught up
    for p in range(3):
        wait_for(lambda: len(set(partition_files(cluster, "durable", p).values())) == 1, 30,
                 what=f"durable-{p} identical on every broker")


def test_isr_follows_a_paused_follower_and_acks_all_needs_min_insync(ensemble, tmp_path, request):
    props = {"replica.lag.time.max.ms": 1000, "zookeeper.session.timeout.ms": LONG_SESSION_MS}
    with Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3, **props) as cluster:
        create_replicated(cluster, "isr", 1, min_insync_replicas=2)
        leader = cluster.state("isr", 0).leader
        f1, f2 = [b for b in cluster.brokers if b != leader]
        port = cluster.brokers[leader].port

        cluster.brokers[f1].signal(signal.SIGSTOP)   # lagging, but its ZooKeeper session lives on
        try:
            wait_for(lambda: set(cluster.state("isr", 0).isr) == {leader, f2}, 3.5, what="the ISR shrinks")
            assert f1 in cluster.registered()        # shrunk by the leader's lag check, not a session loss
            assert produce_raw(port, "isr", 0, acks=-1) == 0
        finally:
            cluster.brokers[f1].signal(signal.SIGCONT)
        wait_for(lambda: set(cluster.state("isr", 0).isr) == {leader, f1, f2}, 20, what="it rejoins")

        cluster.brokers[f1].kill()
        cluster.brokers[f2].kill()
        wait_for(lambda: cluster.state("isr", 0).isr == (leader,), 20, what="the ISR is the leader alone")
        assert produce_raw(port, "isr", 0, acks=-1) == NOT_ENOUGH_REPLICAS
        out = subprocess.run([sys.executable, "-m", "fastkafka", "topics", "-b", cluster.brokers[leader].bootstrap,
                              "describe", "--under-replicated-partitions"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        assert f"Partition: 0\tLeader: {leader}\t" in out and f"Isr: {leader}\t" in out and "Topic: isr" in out
        assert produce_raw(port, "isr", 0, acks=1) == 0
        got = read_all(cluster, "isr", 1)[0]
        assert [v for _, v in got] == [b"x", b"x"]   # the refused one was never written


def test_divergent_tail_is_truncated_by_leader_epoch(cluster):
    """A leader appends an acks=1 tail its followers never get, and dies; the new leader takes
    other writes; the old leader comes back, truncates by epoch, and all logs end up identical."""
    create_replicated(cluster, "tail", 1)
    old = cluster.state("tail", 0).leader
    followers = [b for b in cluster.brokers if b != old]
    port = cluster.brokers[old].port
    for i in range(3):
        assert produce_raw(port, "tail", 0, acks=-1, value=b"committed-%d" % i) == 0
    for f in followers:
        cluster.brokers[f].signal(signal.SIGSTOP)
    try:
        time.sleep(0.7)   # their long polls in flight (replica.fetch.wait.max.ms 500) answer empty first
        for i in range(2):
            assert produce_raw(port, "tail", 0, acks=1, value=b"lost-%d" % i) == 0
        cluster.brokers[old].kill()
    finally:
        for f in followers:
            cluster.brokers[f].signal(signal.SIGCONT)
    new = wait_for(lambda: (s := cluster.state("tail", 0)).leader not in (old, -1) and s.leader, 30,
                   what="a new leader")
    for i in range(4):
        assert produce_raw(cluster.brokers[new].port, "tail", 0, acks=1, value=b"new-%d" % i) == 0
    cluster.brokers[old].start()
    cluster.wait_registered(set(cluster.brokers))
    wait_for(lambda: len(cluster.state("tail", 0).isr) == 3, 30, what="the old leader back in sync")
    wait_for(lambda: len(set(partition_files(cluster, "tail", 0).values())) == 1, 30,
             what="identical logs on every broker")
    values = [v for _, v in read_all(cluster, "tail", 1)[0]]
    assert values == [b"committed-0", b"committed-1", b"committed-2"] + [b"new-%d" % i for i in range(4)]
