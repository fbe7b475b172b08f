"""Jepsen-style network partitions of a replicated cluster (issue 14).

ZooKeeper and three brokers each run on a host of their own (a network namespace, :mod:`netns`);
the test process in the root namespace is the clients and the nemesis. While an idempotent
acks=all producer and a re-reading consumer run, the nemesis cuts the leader of a partition off
and heals it again, ``CUTS`` times:

* ``isolated``: the leader loses the other brokers and ZooKeeper, but the clients still reach it.
  Clients outside the partition are Jepsen's setting, and the one that tests something a kill -9
  (test_replication.py) does not: a zombie leader that still takes produce requests, appends them
  and serves fetches while a new leader is elected behind its back.
* ``zookeeper``: the leader loses ZooKeeper only; it still reaches the other brokers (and they it),
  so followers that have not yet seen the new state znode may keep fetching from it.

Each cut lasts until the controller has elected a new leader (ZooKeeper expires the old one's
session after ``zookeeper.session.timeout.ms``) plus ``HOLD_S`` of writes to the new leader; the
nemesis then heals and waits until every ISR is full again.

The checker then reads the final log and asserts: every acknowledged record is at its
acknowledged offset; per partition the acknowledgements came in offset order; no value is in the
log twice; nothing a consumer ever read changed or vanished; and the three replicas' segment
files end up byte-identical. A floor on the number of acknowledgements keeps a dead producer
from passing.
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from itertools import pairwise

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fastkafka.records import iter_batches

from harness import Cluster, wait_for
from netns import Network, NetworkUnavailable
from test_replication import create_replicated, partition_files, read_all
from zk import Ensemble, java_available

pytestmark = [pytest.mark.zk, pytest.mark.partition, pytest.mark.timeout(900)]

TOPIC, PARTITIONS = "jepsen", 3
CUTS = 20
HOLD_S = 0.5            # writes go to the new leader while the old one is still cut off
RATE = 300              # records per second offered by the producer
MIN_ACKED = 10000       # all partitions together, over the whole run (some 20000 come)
REREAD_S = 2.0          # how often the consumer seeks back to re-read the recent tail
REREAD_BACK = 300       # ... by this many offsets per partition


@pytest.fixture
def hosts(tmp_path):
    """ZooKeeper on host ``zk``, brokers 1-3 on hosts ``b1``-``b3``: (network, cluster)."""
    if not java_available():
        pytest.skip("Debian's zookeeper package and java are needed (make test installs them)")
    with contextlib.ExitStack() as stack:
        try:
            net = stack.enter_context(Network())
            zk_host = net.add_host("zk")
            for i in (1, 2, 3):
                net.add_host(f"b{i}")
        except NetworkUnavailable as e:
            pytest.fail(f"this machine cannot build the test's network of namespaces: {e}")
        zk = stack.enter_context(Ensemble(tmp_path / "zk", host=zk_host.ip, netns=zk_host.netns))
        placement = {i: (net.hosts[f"b{i}"].ip, net.hosts[f"b{i}"].netns) for i in (1, 2, 3)}
        cluster = stack.enter_context(Cluster(tmp_path, f"{zk.connect}/partitions", 3, hosts=placement))
        yield net, cluster


class Workload:
    """The clients: an idempotent acks=all producer and a consumer, each on its own thread,
    recording the history the checker judges."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.acked: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        self.failed: list = []
        self.seen: dict[tuple[int, int], bytes] = {}
        self.changed: list[tuple[int, int, bytes, bytes]] = []
        self.consumer_errors: list = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._produce, name="jepsen-producer"),
                         threading.Thread(target=self._consume, name="jepsen-consumer")]

    def acked_count(self) -> int:
        return sum(map(len, self.acked.values()))

    def start(self) -> "Workload":
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(240)

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked[msg.partition()].append((msg.offset(), msg.value()))
        else:
            self.failed.append((msg.partition(), msg.value(), str(err)))

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                             "message.timeout.ms": 240000, "linger.ms": 5,
                             "topic.metadata.refresh.interval.ms": 1000})
        i, start = 0, time.monotonic()
        while not self._stop.is_set():
            behind = int((time.monotonic() - start) * RATE) - i
            for _ in range(max(0, min(behind, 50))):
                try:
                    producer.produce(TOPIC, value=b"%09d" % i, partition=i % PARTITIONS,
                                     on_delivery=self._delivered)
                    i += 1
                except BufferError:
                    break
            producer.poll(0.01)
        left = producer.flush(200)
        if left:
            self.failed.append((-1, b"", f"{left} records neither acknowledged nor failed after flush"))

    def _consume(self) -> None:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"jepsen-{time.monotonic_ns()}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                      "topic.metadata.refresh.interval.ms": 1000})
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        last = {p: -1 for p in range(PARTITIONS)}
        reread = time.monotonic() + REREAD_S
        try:
            while not self._stop.is_set():
                m = c.poll(0.2)
                if m is not None:
                    if m.error():
                        self.consumer_errors.append(str(m.error()))
                    else:
                        key, value = (m.partition(), m.offset()), m.value()
                        before = self.seen.setdefault(key, value)
                        if before != value:
                            self.changed.append((*key, before, value))
                        last[key[0]] = max(last[key[0]], key[1])
                if time.monotonic() >= reread:   # read the recent tail again, from whoever leads now
                    reread = time.monotonic() + REREAD_S
                    for p, o in last.items():
                        if o >= 0:
                            c.seek(TopicPartition(TOPIC, p, max(0, o - REREAD_BACK)))
        finally:
            c.close()


def full_isr(cluster) -> bool:
    return all((s := cluster.state(TOPIC, p)) is not None and len(s.isr) == 3 and s.leader > 0
               for p in range(PARTITIONS))


def clock() -> str:
    """Wall-clock time as the brokers' logs print it, to find a cut in them."""
    now = time.time()
    return time.strftime("%H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"


def nemesis(net, cluster, workload: Workload, mode: str, events: list) -> None:
    zk_host = net.hosts["zk"]
    for k in range(CUTS):
        p = k % PARTITIONS
        wait_for(lambda: full_isr(cluster), 120, interval=0.1, what="every ISR full before the cut")
        victim = cluster.state(TOPIC, p).leader
        host = net.hosts[f"b{victim}"]
        peers = [zk_host] + [net.hosts[f"b{b}"] for b in cluster.brokers if b != victim and mode == "isolated"]
        before, t0, cut_at = workload.acked_count(), time.monotonic(), clock()
        net.cut(host, peers)
        try:
            new = wait_for(lambda: (s := cluster.state(TOPIC, p)) and s.leader not in (victim, -1) and s.leader, 60,
                           what=f"{TOPIC}-{p}: a leader other than the cut-off broker {victim}")
            elected = time.monotonic() - t0
            time.sleep(HOLD_S)
        finally:
            net.heal()
        t1 = time.monotonic()
        try:
            wait_for(lambda: full_isr(cluster), 120, interval=0.1, what="every ISR full again")
        except TimeoutError:
            pytest.fail(f"cut {k}: ISRs not full 120 s after healing broker {victim}: "
                        f"{[cluster.state(TOPIC, q) for q in range(PARTITIONS)]}")
        wait_for(lambda: workload.acked_count() > before, 60, what="acknowledgements during the cycle")
        events.append(f"cut {k:2d} at {cut_at}: {TOPIC}-{p} leader {victim} -> {new} after {elected:.1f}s; "
                      f"ISR full {time.monotonic() - t1:.1f}s after healing; acked {workload.acked_count()}")


def first_difference(files: dict[int, bytes]) -> str:
    """The first batch at which the replicas' logs differ, as each broker holds it."""
    walks = {b: list(iter_batches(data, check_crc=False)) for b, data in files.items()}
    for i in range(max(map(len, walks.values()))):
        here = {b: w[i] if i < len(w) else None for b, w in walks.items()}
        if len({bytes(x.buffer) if x is not None else None for x in here.values()}) > 1:
            return "; ".join(
                f"broker {b}: " + ("nothing" if x is None else
                                   f"offset {x.base_offset} leader epoch {x.partition_leader_epoch} producer "
                                   f"{x.producer_id}/{x.producer_epoch} sequence {x.base_sequence} crc {x.crc}")
                for b, x in here.items())
    return "they hold the same batches (a partial batch at the end?)"


def check(cluster, workload: Workload) -> None:
    """The history against the final log (see the module docstring)."""
    final = read_all(cluster, TOPIC, PARTITIONS, timeout=120)
    logs = {p: dict(final[p]) for p in range(PARTITIONS)}
    problems = []
    for p in range(PARTITIONS):
        offsets = [o for o, _ in workload.acked[p]]
        if any(a >= b for a, b in pairwise(offsets)):
            bad = next((a, b) for a, b in pairwise(offsets) if a >= b)
            problems.append(f"{TOPIC}-{p}: acknowledged out of offset order, e.g. {bad}")
        lost = [(o, v, logs[p].get(o)) for o, v in workload.acked[p] if logs[p].get(o) != v]
        if lost:
            problems.append(f"{TOPIC}-{p}: {len(lost)} acknowledged records lost or moved "
                            f"(offset, acked value, final value), e.g. {lost[:5]}")
        dups = sorted(v for v, n in Counter(v for _, v in final[p]).items() if n > 1)
        if dups:
            problems.append(f"{TOPIC}-{p}: {len(dups)} values written more than once, e.g. {dups[:5]}")
        if [o for o, _ in final[p]] != list(range(len(final[p]))):
            problems.append(f"{TOPIC}-{p}: the final log's offsets are not 0..{len(final[p]) - 1}")
    if workload.changed:
        problems.append(f"{len(workload.changed)} offsets read with two different values "
                        f"(partition, offset, first, later), e.g. {workload.changed[:5]}")
    unstable = [(p, o, v, logs[p].get(o)) for (p, o), v in workload.seen.items() if logs[p].get(o) != v]
    if unstable:
        problems.append(f"{len(unstable)} records a consumer read are not in the final log as read "
                        f"(partition, offset, read, final), e.g. {sorted(unstable)[:5]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("mode", ["isolated", "zookeeper"])
def test_acknowledged_writes_survive_partitions(hosts, mode):
    """The nemesis cuts the leader off ``CUTS`` times while the clients write and read; then the
    history is checked against the final log and the replicas' files."""
    net, cluster = hosts
    create_replicated(cluster, TOPIC, PARTITIONS, min_insync_replicas=2)
    workload = Workload(cluster.bootstrap).start()
    events: list[str] = []
    started = time.monotonic()
    try:
        wait_for(lambda: workload.acked_count() >= 100, 60, what="a first hundred acknowledgements")
        nemesis(net, cluster, workload, mode, events)
        time.sleep(1)      # some writes to the healed cluster
    finally:
        net.heal()
        workload.stop()
        print(f"{mode}: {len(events)} cuts in {time.monotonic() - started:.0f}s", *events,
              f"consumer errors: {len(workload.consumer_errors)} {sorted(set(workload.consumer_errors))[:5]}",
              sep="\n")
    assert not workload.failed, f"{len(workload.failed)} records failed, e.g. {workload.failed[:5]}"
    acked = {p: len(a) for p, a in workload.acked.items()}
    assert sum(acked.values()) >= MIN_ACKED and min(acked.values()) >= MIN_ACKED // (2 * PARTITIONS), acked
    assert len(workload.seen) >= sum(acked.values()) // 2, "the consumer read too little to judge"
    check(cluster, workload)
    for p in range(PARTITIONS):
        try:
            wait_for(lambda: len(set(partition_files(cluster, TOPIC, p).values())) == 1, 30,
                     what=f"{TOPIC}-{p} byte-identical on every broker")
        except TimeoutError:
            pytest.fail(f"{TOPIC}-{p}: the replicas' logs differ; first at "
                        f"{first_difference(partition_files(cluster, TOPIC, p))}")
