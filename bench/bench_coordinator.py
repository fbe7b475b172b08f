"""Group coordinator benchmarks: rebalance time for N members joining at once, offset commits/s.

Helpers for bench/test_bench_coordinator.py, which holds the figures:
``.venv/bin/python -m pytest bench/test_bench_coordinator.py -p no:cacheprovider``

1. Rebalance: N confluent-kafka consumers subscribe to one topic at the same moment against a
   real broker (``group.initial.rebalance.delay.ms=0``, so the figure is the protocol's cost and
   not the configured wait); time until every member holds its share. The limit measured in the
   same run is one member alone joining (the fixed cost of JoinGroup+SyncGroup round trips).
2. Offset commits: synchronous commits from one confluent-kafka client (each a full round trip
   plus an append to ``__consumer_offsets``), against the limit of a Heartbeat round trip (a
   request the coordinator answers without touching the log); and the coordinator alone
   (``GroupCoordinator.commit_offsets`` into a real Log, no network) against ``Log.append`` of
   the same batches, which is the storage floor of a commit.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from confluent_kafka import Consumer, TopicPartition  # noqa: E402

from fastkafka.config import LogConfig  # noqa: E402
from fastkafka.coordinator import GroupCoordinator, LogOffsetsStore, OffsetAndMetadata  # noqa: E402
from fastkafka.coordinator.formats import offset_key, offset_value  # noqa: E402
from fastkafka.log.log import Log  # noqa: E402
from fastkafka.records import build_batch  # noqa: E402


def consumer(bootstrap, group):
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000,
                     "heartbeat.interval.ms": 200, "enable.auto.commit": False,
                     "log_level": 0})


def rebalance_seconds(bootstrap, topic, partitions, n, group):
    members = [consumer(bootstrap, group) for _ in range(n)]
    start = threading.Barrier(n + 1)
    done = [None] * n

    def run(i, c):
        start.wait()
        c.subscribe([topic])
        while True:
            c.poll(0.02)
            if c.assignment() and len(c.assignment()) == partitions // n:
                done[i] = time.monotonic()
                return
    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(members)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.monotonic()
    for t in threads:
        t.join(120)
    elapsed = max(done) - t0
    for c in members:
        c.close()
    return elapsed


def sync_commits_per_s(bootstrap, topic, seconds):
    c = consumer(bootstrap, "commit-bench")
    n, off = 0, 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        off += 1
        c.commit(offsets=[TopicPartition(topic, 0, off)], asynchronous=False)
        n += 1
    rate = n / (time.monotonic() - t0)
    c.close()
    return rate


def roundtrips_per_s(bootstrap, topic, seconds):
    """committed() is an OffsetFetch round trip answered from memory: the network limit."""
    c = consumer(bootstrap, "commit-bench")
    n = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        c.committed([TopicPartition(topic, 0)], timeout=10)
        n += 1
    rate = n / (time.monotonic() - t0)
    c.close()
    return rate


def coordinator_commits_per_s(seconds):
    """GroupCoordinator.commit_offsets into a real Log, no network."""
    d = tempfile.mkdtemp()
    logs = {p: Log(os.path.join(d, f"__consumer_offsets-{p}"), LogConfig()) for p in range(1)}
    gc = GroupCoordinator.create(LogOffsetsStore(1, logs.__getitem__))
    n = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        n += 1
        gc.commit_offsets("g", "", -1, {("t", 0): OffsetAndMetadata(n, "", 0)})
    rate = n / (time.monotonic() - t0)
    logs[0].close()
    shutil.rmtree(d)
    return rate


def offset_appends_per_s(seconds):
    """Log.append of the batch one commit writes: the storage floor of a commit."""
    d = tempfile.mkdtemp()
    raw = Log(os.path.join(d, "raw-0"), LogConfig())
    k, v = offset_key("g", "t", 0), offset_value(OffsetAndMetadata(1, "", 0))
    n = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        n += 1
        raw.append(bytearray(build_batch([(k, v, [], 0)])))
    rate = n / (time.monotonic() - t0)
    raw.close()
    shutil.rmtree(d)
    return rate


def solo_join_seconds(bootstrap, topic, group):
    """One member alone joining: the fixed cost of the JoinGroup + SyncGroup round trips."""
    c = consumer(bootstrap, group)
    t0 = time.monotonic()
    c.subscribe([topic])
    while not c.assignment():
        c.poll(0.02)
    elapsed = time.monotonic() - t0
    c.close()
    return elapsed
