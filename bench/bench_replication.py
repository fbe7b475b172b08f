"""Replication's cost: produce to RF=3 with acks=all against RF=1 on the same three brokers, and a
follower's catch-up rate against a consumer reading the same bytes (issue 14's benchmarks).

Real ZooKeeper and three ``fastkafka serve`` processes on this machine (the test harness of
tests/cluster), confluent-kafka as the client. The compared things alternate within one run:
each round produces the same records to ``rf1`` (one replica, acks=1 -- what one copy costs) and
to ``rf3`` (three replicas, min.insync.replicas=2, acks=all). Catch-up: one follower of ``lag``
is stopped (kill -9) while ``--catchup-mb`` are produced, then restarted; the time until its log
holds everything is compared with a consumer reading the same partition from the start.

    python bench/bench_replication.py [--rounds 3] [--mb 64] [--catchup-mb 256]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from support.harness import Cluster, wait_for  # noqa: E402
from support.zk import Ensemble  # noqa: E402
from scratch import scratch_dir  # noqa: E402

VALUE = 1000


def create(cluster, topic: str, partitions: int, rf: int, **config) -> None:
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, rf, config=config)], operation_timeout=15).values():
        f.result()
    wait_for(lambda: all((s := cluster.state(topic, p)) and len(s.isr) == rf for p in range(partitions)),
             what=f"{topic} in sync")


def produce(cluster, topic: str, mb: int, acks: str, partition: int | None = None) -> float:
    """Seconds to produce ``mb`` MiB of VALUE-byte records and have them all acknowledged."""
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks, "linger.ms": 5,
                  "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})
    value = b"x" * VALUE
    n = mb * (1 << 20) // VALUE
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                if partition is None:
                    p.produce(topic, value)
                else:
                    p.produce(topic, value, partition=partition)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(300) == 0
    return time.perf_counter() - start


def log_bytes(cluster, broker_id: int, topic: str, partition: int) -> int:
    d = os.path.join(cluster.brokers[broker_id].log_dir, f"{topic}-{partition}")
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))


def consume_all(cluster, topic: str, partition: int, count: int) -> float:
    start = time.perf_counter()
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"bench-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "fetch.max.bytes": 1 << 24})
    c.assign([TopicPartition(topic, partition, 0)])
    got = 0
    while got < count:
        for m in c.consume(10000, 1.0):
            if not m.error():
                got += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--catchup-mb", type=int, default=256)
    args = ap.parse_args()
    tmp = scratch_dir("bench-replication-")
    with Ensemble(os.path.join(tmp, "zk")) as zk, Cluster(tmp, zk.connect + "/bench", 3) as cluster:
        create(cluster, "rf1", 3, 1)
        create(cluster, "rf3", 3, 3, **{"min.insync.replicas": "2"})
        print(f"produce {args.mb} MiB of {VALUE}-byte records per run, confluent-kafka, 3 brokers here")
        ratios = []
        for r in range(args.rounds):
            t1 = produce(cluster, "rf1", args.mb, "1")
            t3 = produce(cluster, "rf3", args.mb, "all")
            ratios.append(t1 / t3)
            print(f"round {r}: RF=1 acks=1 {args.mb / t1:7.1f} MiB/s   RF=3 acks=all {args.mb / t3:7.1f} MiB/s"
                  f"   ratio {t1 / t3:.2f}x")
        print(f"RF=3 acks=all / RF=1: {min(ratios):.2f}-{max(ratios):.2f}x (target >= 0.5x)")

        create(cluster, "lag", 1, 3)
        leader = cluster.state("lag", 0).leader
        follower = next(b for b in cluster.brokers if b != leader)
        cluster.brokers[follower].kill()
        produce(cluster, "lag", args.catchup_mb, "1", partition=0)
        target = log_bytes(cluster, leader, "lag", 0)
        wait_for(lambda: follower not in cluster.registered(), 30, what="the stopped follower's session gone")
        start = time.perf_counter()     # includes its start-up, as the consumer's time includes its own
        cluster.brokers[follower].start()
        wait_for(lambda: log_bytes(cluster, follower, "lag", 0) >= target, 600, 0.02, what="caught up")
        catchup = time.perf_counter() - start
        count = args.catchup_mb * (1 << 20) // VALUE
        read = consume_all(cluster, "lag", 0, count)
        print(f"catch-up of {args.catchup_mb} MiB: follower {args.catchup_mb / catchup:7.1f} MiB/s "
              f"(from its restart), consumer {args.catchup_mb / read:7.1f} MiB/s; ratio {read / catchup:.2f}x "
              "(target >= 0.8x)")


if __name__ == "__main__":
    main()
