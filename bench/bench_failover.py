"""Failover: from SIGKILL of a partition's leader to the first acks=all produce acknowledged by its
new leader, against the limit ``zookeeper.session.timeout.ms + 2 s`` (issue 14's benchmark).

Real ZooKeeper and three ``fastkafka serve`` processes on this machine (the test harness of
tests/cluster). A topic of RF=3, ``min.insync.replicas=2``, one partition per broker. Each of the
``--kills`` rounds picks a partition -- led by the controller in every other round, by another
broker in the rest, as far as the leaders allow -- and SIGKILLs its leader. Two producers time
the failover:

* raw: from the kill on, one acks=all Produce at a time (a fresh connection, Metadata asked of a
  live broker first, 20 ms between failed attempts) until one is acknowledged -- the broker side
  alone;
* client: an idempotent acks=all confluent-kafka producer (short retry and reconnect back-offs,
  everything else default) writing to every partition all along; the figure is the first
  acknowledgement of a record given to it after the kill, on the victim's partition and on the
  slowest of the others (whose leaders lived but lost a follower).

Where the time goes is read off ZooKeeper, polled every 10 ms from the kill (the victim's
registration gone = its session expired; the state znode naming a new leader = the controller's
election) and off the new leader's log (the line saying it leads in the new epoch). The victim is
restarted and back in every ISR before the next round.

    python bench/bench_failover.py [--kills 10] [--session-ms 2000] [--seed N]
"""
from __future__ import annotations

import argparse
import bisect
import math
import os
import random
import re
import socket
import struct
import sys
import threading
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from support.harness import SESSION_MS, Cluster, wait_for  # noqa: E402
from support.zk import Ensemble  # noqa: E402

from fastkafka import protocol as P  # noqa: E402
from fastkafka import records  # noqa: E402
from fastkafka.protocol import ApiKey  # noqa: E402
from scratch import scratch_dir  # noqa: E402

TOPIC = "failover"
GIVE_UP_S = 90.0
LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \w+ [\w.]+: (.*)$")


def call(host: str, port: int, key: int, version: int, body, timeout: float):
    """One request on a fresh connection; the decoded response."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(P.encode_request(key, version, 1, body, "bench-failover"))
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            buf += chunk
    return P.decode_response(key, version, buf[4:])[1]


def metadata_leader(cluster, asked: int, partition: int) -> int:
    """The leader of ``partition`` that broker ``asked`` names in a Metadata response (-1: none)."""
    b = cluster.brokers[asked]
    md = call(b.host, b.port, ApiKey.METADATA, 8, {
        "topics": [{"name": TOPIC}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}, 5)
    for t in md.topics:
        for p in t.partitions:
            if t.name == TOPIC and p.partition_index == partition:
                return p.leader_id
    return -1


def produce_all(cluster, leader: int, partition: int, timeout_ms: int) -> int:
    b = cluster.brokers[leader]
    batch = records.build_batch([(None, b"probe", [], int(time.time() * 1000))])
    r = call(b.host, b.port, ApiKey.PRODUCE, 7, {"acks": -1, "timeout_ms": timeout_ms, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}]}, timeout_ms / 1000 + 5)
    return r.responses[0].partition_responses[0].error_code


class Stream:
    """An idempotent acks=all confluent-kafka producer writing to every partition in turn (a
    record every 2 ms), on its own thread; per partition, the (enqueued, acknowledged) monotonic
    times of each delivered record."""

    def __init__(self, bootstrap: str, partitions: int):
        self.partitions = partitions
        self.acks: dict[int, list[tuple[float, float]]] = {p: [] for p in range(partitions)}
        self.failed = 0
        self._p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                            "linger.ms": 1, "retry.backoff.ms": 20, "reconnect.backoff.ms": 20,
                            "reconnect.backoff.max.ms": 200, "message.timeout.ms": 300000})
        self._run = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._run.set()
        self._thread.start()

    def stop(self) -> None:
        self._run.clear()
        self._thread.join()
        self._p.flush(60)

    def first_ack_after(self, partition: int, t: float) -> float | None:
        """When the first record enqueued at or after ``t`` was acknowledged (None: not yet)."""
        acks = self.acks[partition]     # in order of enqueueing: the producer is idempotent
        i = bisect.bisect_left(acks, t, key=lambda a: a[0])
        return acks[i][1] if i < len(acks) else None

    def _loop(self) -> None:
        i = 0
        while self._run.is_set():
            p = i % self.partitions
            enq = time.monotonic()

            def done(err, _msg, p=p, enq=enq):
                if err is None:
                    self.acks[p].append((enq, time.monotonic()))
                else:
                    self.failed += 1
            try:
                self._p.produce(TOPIC, b"x" * 100, partition=p, on_delivery=done)
                i += 1
            except BufferError:
                pass
            self._p.poll(0.002)


class ZkWatch:
    """From the kill on, polls ZooKeeper every 10 ms: when the victim's registration vanished, when
    the state znode named a new leader (and which, in which epoch), when a new controller stood."""

    def __init__(self, cluster, victim: int, partition: int, was_controller: bool):
        self.cluster, self.victim, self.partition, self.was_controller = cluster, victim, partition, was_controller
        self.gone = self.elected = self.controller = None
        self.new_leader = self.new_epoch = -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> ZkWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        c = self.cluster
        while not self._stop.is_set() and None in (self.gone, self.elected, self.controller):
            now = time.monotonic()
            if self.gone is None and self.victim not in c.registered():
                self.gone = now
            if self.elected is None:
                s = c.state(TOPIC, self.partition)
                if s is not None and s.leader not in (self.victim, -1):
                    self.elected, self.new_leader, self.new_epoch = now, s.leader, s.leader_epoch
            if self.controller is None and (not self.was_controller or c.controller() not in (self.victim, -1)):
                self.controller = now
            time.sleep(0.01)


def log_time(cluster, broker: int, needle: str, after_wall: float) -> float | None:
    """Wall-clock time of the first line of ``broker``'s log after ``after_wall`` containing ``needle``."""
    for line in cluster.brokers[broker].output().splitlines():
        m = LOG_LINE.match(line)
        if m and needle in m.group(2):
            t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if t >= after_wall - 0.001:
                return t
    return None


def raw_failover(cluster, victim: int, partition: int, t0: float) -> tuple[float | None, float | None, int]:
    """Produce attempts from the kill on: (first Metadata naming a live leader, first acks=all
    acknowledgement) as monotonic times, and the number of attempts."""
    asked = [b for b in sorted(cluster.brokers) if b != victim]
    named = None
    attempts = 0
    while time.monotonic() - t0 < GIVE_UP_S:
        attempts += 1
        try:
            leader = metadata_leader(cluster, asked[attempts % len(asked)], partition)
            if leader in (victim, -1):
                time.sleep(0.02)
                continue
            named = named or time.monotonic()
            if produce_all(cluster, leader, partition, 30000) == 0:
                return named, time.monotonic(), attempts
        except OSError:
            pass
        time.sleep(0.02)
    return named, None, attempts


def create(cluster, partitions: int) -> None:
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in a.create_topics([NewTopic(TOPIC, partitions, 3, config={"min.insync.replicas": "2"})],
                             operation_timeout=15).values():
        f.result()
    wait_for(lambda: all((s := cluster.state(TOPIC, p)) and len(s.isr) == 3 for p in range(partitions)), 60,
             what=f"{TOPIC} in sync")


def in_sync(cluster, partitions: int) -> bool:
    live = cluster.registered()
    return all((s := cluster.state(TOPIC, p)) and s.leader in live and set(s.isr) == live == set(cluster.brokers)
               for p in range(partitions))


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def dist(values: list[float], limit: float) -> str:
    if not values:
        return "n/a"
    figs = [min(values), percentile(values, 0.5), percentile(values, 0.9), max(values)]
    return ("min/median/p90/max " + " / ".join(f"{v:.2f}" for v in figs) + " s = "
            + " / ".join(f"{v / limit:.2f}" for v in figs) + "x the limit")


def fmt(t: float | None) -> str:
    return "   -  " if t is None else f"{t:6.2f}"


def kill_one(cluster, stream: Stream, rng: random.Random, k: int, n: int) -> dict:
    """SIGKILL the leader of a partition (led by the controller when ``k`` is even, if one is),
    time the failover, restart the victim and wait until it is back in every ISR."""
    controller = wait_for(lambda: (c := cluster.controller()) in cluster.brokers and c, 30, what="a controller")
    leaders = {p: cluster.state(TOPIC, p).leader for p in range(n)}
    want = k % 2 == 0
    part = rng.choice([p for p in range(n) if (leaders[p] == controller) == want] or list(range(n)))
    victim = leaders[part]
    watch = ZkWatch(cluster, victim, part, victim == controller)
    t0, wall0 = time.monotonic(), time.time()
    watch.start()
    cluster.brokers[victim].kill()
    named, raw, attempts = raw_failover(cluster, victim, part, t0)
    wait_for(lambda: all(stream.first_ack_after(p, t0) for p in range(n)), GIVE_UP_S,
             what="client acks on every partition")
    wait_for(lambda: None not in (watch.gone, watch.elected, watch.controller), 30, what="ZooKeeper's view")
    watch.stop()
    leads = log_time(cluster, watch.new_leader, f"{TOPIC}-{part}: leader in epoch {watch.new_epoch}", wall0)
    row = {"kill": k, "victim": victim, "controller": victim == controller, "part": part,
           "expired": watch.gone - t0, "elected": watch.elected - t0,
           "leads": None if leads is None else leads - wall0,
           "named": None if named is None else named - t0, "raw": None if raw is None else raw - t0,
           "client": stream.first_ack_after(part, t0) - t0,
           "others": max(stream.first_ack_after(p, t0) for p in range(n) if p != part) - t0, "attempts": attempts}
    print(f"{k:4} {victim:6} {'yes' if row['controller'] else 'no ':4} {part:4} | {fmt(row['expired'])}  "
          f"{fmt(row['elected'])} {fmt(row['leads'])}  {fmt(row['named'])}  {fmt(row['raw'])} | "
          f"{fmt(row['client'])}  {fmt(row['others'])}", flush=True)
    cluster.brokers[victim].start()
    cluster.wait_registered(set(cluster.brokers), 60)
    wait_for(lambda: in_sync(cluster, n), 120, what="the victim back in every ISR")
    t1 = time.monotonic()     # and the client's acks flowing on every partition again
    wait_for(lambda: all(stream.first_ack_after(p, t1) for p in range(n)), GIVE_UP_S,
             what="client acks after the restart")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--session-ms", type=int, default=SESSION_MS,
                    help="zookeeper.session.timeout.ms (the tests' ensemble allows 400-4000)")
    ap.add_argument("--seed", type=int, default=None, help="seed of the choice of partitions (printed)")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    rng = random.Random(seed)
    limit = args.session_ms / 1000 + 2.0
    n = 3
    tmp = scratch_dir("bench-failover-")
    print(f"{args.kills} leader kills, 3 brokers, RF=3, min.insync.replicas=2, zookeeper.session.timeout.ms "
          f"{args.session_ms}: limit {limit:.1f} s; seed {seed}; logs in {tmp}")
    with Ensemble(os.path.join(tmp, "zk")) as zk, \
            Cluster(tmp, zk.connect + "/bench", n, **{"zookeeper.session.timeout.ms": args.session_ms}) as cluster:
        create(cluster, n)
        stream = Stream(cluster.bootstrap, n)
        stream.start()
        rows: list[dict] = []
        print("kill victim ctrl part | expired elected leads  metadata  raw ack | client ack  others | "
              "(seconds after SIGKILL)")
        try:
            wait_for(lambda: all(stream.first_ack_after(p, time.monotonic() - 1) for p in range(n)), 60,
                     what="the client's first acks")
            rows = [kill_one(cluster, stream, rng, k, n) for k in range(args.kills)]
        finally:
            stream.stop()
        assert stream.failed == 0, f"{stream.failed} records not delivered"

    def col(key, ctrl=None):
        return [r[key] for r in rows if r[key] is not None and (ctrl is None or r["controller"] == ctrl)]

    print(f"\nlimit = zookeeper.session.timeout.ms + 2 s = {limit:.2f} s; figures over {len(rows)} kills "
          f"({sum(r['controller'] for r in rows)} of the controller)")
    for key, what in [("raw", "raw acks=all, first ack by the new leader"),
                      ("client", "confluent-kafka, victim's partition"),
                      ("others", "confluent-kafka, slowest other partition")]:
        print(f"{what}:")
        print(f"  all            {dist(col(key), limit)}")
        print(f"  controller     {dist(col(key, True), limit)}")
        print(f"  not controller {dist(col(key, False), limit)}")
    print("where the time goes (medians, s after SIGKILL): "
          + ", ".join(f"{name} {percentile(col(key), 0.5):.2f}" for key, name in
                      [("expired", "session expired"), ("elected", "new leader in ZooKeeper"),
                       ("leads", "new leader acts"), ("named", "Metadata names it"), ("raw", "raw ack"),
                       ("client", "client ack"), ("others", "other partitions' client acks")] if col(key)))


if __name__ == "__main__":
    main()
