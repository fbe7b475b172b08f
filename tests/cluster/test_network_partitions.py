"""Jepsen-style network partitions of a replicated cluster (issue 14).

ZooKeeper and three brokers each run on a host of their own (a network namespace, :mod:`netns`);
the test process in the root namespace is the clients and the nemesis. While an idempotent
acks=all producer and a re-reading consumer run, the nemesis cuts a broker off and heals it
again, ``Mode.cuts`` times (``CUTS`` for the first two modes):

* ``isolated``: the leader loses the other brokers and ZooKeeper, but the clients still reach it.
  Clients outside the partition are Jepsen's setting, and the one that tests something a kill -9
  (test_replication.py) does not: a zombie leader that still takes produce requests, appends them
  and serves fetches while a new leader is elected behind its back.
* ``zookeeper``: the leader loses ZooKeeper only; it still reaches the other brokers (and they it),
  so followers that have not yet seen the new state znode may keep fetching from it.
* ``follower``: a *follower* of the partition is cut off, the clients still reaching it (as in
  ``isolated``: a client that asks it for metadata hears its stale view). Every other cut it loses
  the other brokers and ZooKeeper (its session expires and the controller drops it from every
  ISR), otherwise the other brokers only: it keeps its session, so only the leaders' own ISR
  upkeep (``replica.lag.time.max.ms``, ``FOLLOWER_LAG_MS`` in this mode) takes it out. Once it is
  out of the ISRs, every partition it only follows must go on taking writes while it is still cut
  off (``PROGRESS`` acknowledgements each, its ISR the leader and the other follower: still
  ``min.insync.replicas=2``); after the heal it must come back into every ISR. Partitions it
  leads fare as in ``isolated`` (cut from ZooKeeper too) or shrink to itself alone and take no
  acks=all writes until the heal (cut from the brokers only).
* ``zk-kill``: the leader loses ZooKeeper only, and another broker is killed (SIGKILL) while it
  is cut: at once, before the controller has noticed the cut (the ISR still names both
  brokers gone), or once a new leader is elected — that new leader itself (a second election with
  the old leader still cut off) or the remaining follower (the new leader's ISR shrinks to one).
  Every partition of every topic must then be led by the one broker left; after the heal the
  killed broker restarts and every ISR must fill again.

The last two modes write to two topics (``TOPICS``), so each cut hits partitions of both at once.

Each cut lasts until the controller has elected a new leader (ZooKeeper expires the old one's
session after ``zookeeper.session.timeout.ms``) or the follower left the ISR, plus ``HOLD_S`` of
writes to the new leader; the nemesis then heals and waits until every ISR is full again.

The checker then reads the final log and asserts, for every partition of every topic: every
acknowledged record is at its acknowledged offset; the acknowledgements came in offset order; no
value is in the log twice (but for copies the client itself sent again under a bumped producer
epoch, never acknowledged: :func:`resent_after_epoch_bump`), nor in a partition it was not sent
to; nothing a consumer ever read changed or vanished; and the three replicas' segment files end
up byte-identical. A floor on the number of acknowledgements (proportional to the mode's cuts)
keeps a dead producer from passing.
"""
from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from itertools import pairwise

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fastkafka.records import iter_batches

from support.harness import Cluster, create_replicated, wait_for
from support.zk import Ensemble, require_java
from netns import Network, NetworkUnavailable
from test_replication import partition_files, read_all

pytestmark = [pytest.mark.crash, pytest.mark.clients, pytest.mark.zk, pytest.mark.partition, pytest.mark.timeout(900)]

TOPIC, PARTITIONS = "jepsen", 3
TOPICS = {TOPIC: PARTITIONS, "jepsen-b": 3}    # the several-topics modes' workload
CUTS = 20
HOLD_S = 0.5            # writes go to the new leader while the old one is still cut off
RATE = 300              # records per second offered by the producer (over all partitions)
MIN_ACKED = 10000       # all partitions together, over a run of CUTS cuts (some 20000 come)
REREAD_S = 2.0          # how often the consumer seeks back to re-read the recent tail
REREAD_BACK = 300       # ... by this many offsets per partition
FOLLOWER_LAG_MS = 3000  # replica.lag.time.max.ms in the follower mode (the default 30 s is too slow)
PROGRESS = 20           # acknowledgements each partition a cut-off follower only follows must get


@dataclass(frozen=True)
class Mode:
    cuts: int
    topics: dict[str, int] = field(default_factory=lambda: {TOPIC: PARTITIONS})
    props: dict = field(default_factory=dict)     # the brokers' overrides

    @property
    def min_acked(self) -> int:
        return MIN_ACKED * self.cuts // CUTS


MODES = {
    "isolated": Mode(CUTS),
    "zookeeper": Mode(CUTS),
    "follower": Mode(8, TOPICS, {"replica.lag.time.max.ms": FOLLOWER_LAG_MS}),
    "zk-kill": Mode(8, TOPICS),
}


@pytest.fixture
def hosts(tmp_path, mode):
    """ZooKeeper on host ``zk``, brokers 1-3 on hosts ``b1``-``b3``: (network, cluster)."""
    require_java()
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
        cluster = stack.enter_context(Cluster(tmp_path, f"{zk.connect}/partitions", 3, hosts=placement,
                                              **MODES[mode].props))
        yield net, cluster


class Workload:
    """The clients: an idempotent acks=all producer and a consumer, each on its own thread,
    recording the history the checker judges. Record ``i`` (value ``b"%09d" % i``) goes to
    ``targets[i % len(targets)]``, round robin over every partition of every topic."""

    def __init__(self, bootstrap: str, topics: dict[str, int] | None = None):
        self.bootstrap = bootstrap
        self.topics = dict(topics or {TOPIC: PARTITIONS})
        self.targets = [(t, p) for t, n in self.topics.items() for p in range(n)]
        self.acked: dict[tuple[str, int], list[tuple[int, bytes]]] = {tp: [] for tp in self.targets}
        self.failed: list = []
        self.seen: dict[tuple[str, int, int], bytes] = {}
        self.changed: list[tuple[str, int, int, bytes, bytes]] = []
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
            self.acked[msg.topic(), msg.partition()].append((msg.offset(), msg.value()))
        else:
            self.failed.append((msg.topic(), msg.partition(), msg.value(), str(err)))

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                             "message.timeout.ms": 240000, "linger.ms": 5,
                             "topic.metadata.refresh.interval.ms": 1000})
        i, start = 0, time.monotonic()
        while not self._stop.is_set():
            behind = int((time.monotonic() - start) * RATE) - i
            for _ in range(max(0, min(behind, 50))):
                topic, partition = self.targets[i % len(self.targets)]
                try:
                    producer.produce(topic, value=b"%09d" % i, partition=partition, on_delivery=self._delivered)
                    i += 1
                except BufferError:
                    break
            producer.poll(0.01)
        left = producer.flush(200)
        if left:
            self.failed.append(("", -1, b"", f"{left} records neither acknowledged nor failed after flush"))

    def _consume(self) -> None:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"jepsen-{time.monotonic_ns()}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                      "topic.metadata.refresh.interval.ms": 1000})
        c.assign([TopicPartition(t, p, 0) for t, p in self.targets])
        last = {tp: -1 for tp in self.targets}
        reread = time.monotonic() + REREAD_S
        try:
            while not self._stop.is_set():
                m = c.poll(0.2)
                if m is not None:
                    if m.error():
                        self.consumer_errors.append(str(m.error()))
                    else:
                        key, value = (m.topic(), m.partition(), m.offset()), m.value()
                        before = self.seen.setdefault(key, value)
                        if before != value:
                            self.changed.append((*key, before, value))
                        last[key[:2]] = max(last[key[:2]], key[2])
                if time.monotonic() >= reread:   # read the recent tail again, from whoever leads now
                    reread = time.monotonic() + REREAD_S
                    for (t, p), o in last.items():
                        if o >= 0:
                            c.seek(TopicPartition(t, p, max(0, o - REREAD_BACK)))
        finally:
            c.close()


def full_isr(cluster, targets=None) -> bool:
    return all((s := cluster.state(t, p)) is not None and len(s.isr) == 3 and s.leader > 0
               for t, p in (targets or [(TOPIC, p) for p in range(PARTITIONS)]))


def states(cluster, targets) -> dict:
    return {f"{t}-{p}": cluster.state(t, p) for t, p in targets}


def clock() -> str:
    """Wall-clock time as the brokers' logs print it, to find a cut in them."""
    now = time.time()
    return time.strftime("%H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"


def cut_leader(net, cluster, workload: Workload, mode: str, k: int, p: int) -> str:
    """``isolated`` and ``zookeeper``: cut the leader of TOPIC-p off until a new one is elected."""
    victim = cluster.state(TOPIC, p).leader
    host = net.hosts[f"b{victim}"]
    peers = [net.hosts["zk"]] + [net.hosts[f"b{b}"] for b in cluster.brokers if b != victim and mode == "isolated"]
    t0 = time.monotonic()
    net.cut(host, peers)
    try:
        new = wait_for(lambda: (s := cluster.state(TOPIC, p)) and s.leader not in (victim, -1) and s.leader, 60,
                       what=f"{TOPIC}-{p}: a leader other than the cut-off broker {victim}")
        elected = time.monotonic() - t0
        time.sleep(HOLD_S)  # the cut held a while: writes go on
    finally:
        net.heal()
    return f"{TOPIC}-{p} leader {victim} -> {new} after {elected:.1f}s"


def cut_follower(net, cluster, workload: Workload, k: int, p: int) -> str:
    """``follower``: cut a follower of TOPIC-p off (even cuts: from the brokers and ZooKeeper, odd
    cuts: from the brokers only) until it left the ISRs, then require writes to go on."""
    targets = workload.targets
    state = cluster.state(TOPIC, p)
    followers = sorted(b for b in state.isr if b != state.leader)
    victim = followers[(k // 2) % len(followers)]
    with_zk = k % 2 == 0
    led = {tp for tp in targets if cluster.state(*tp).leader == victim}
    followed = [tp for tp in targets if tp not in led]
    peers = ([net.hosts["zk"]] if with_zk else []) + [net.hosts[f"b{b}"] for b in cluster.brokers if b != victim]

    def out_of_sync():
        for tp in targets:
            s = cluster.state(*tp)
            if s is None:
                return False
            if with_zk or tp not in led:       # a live leader other than the victim, the victim out of its ISR
                if victim in s.isr or s.leader in (victim, -1):
                    return False
            elif s.isr != (victim,):           # the victim still leads, alone: nobody reaches it to fetch
                return False
        return True

    t0 = time.monotonic()
    net.cut(net.hosts[f"b{victim}"], peers)
    try:
        try:
            wait_for(out_of_sync, 60, interval=0.1, what="the cut-off follower out of the ISRs")
        except TimeoutError:
            pytest.fail(f"cut {k}: follower {victim} (cut off from {'ZooKeeper and ' if with_zk else ''}"
                        f"the brokers) still in an ISR after 60 s: {states(cluster, targets)}")
        shrunk = time.monotonic() - t0
        before = {tp: len(workload.acked[tp]) for tp in followed}
        try:
            wait_for(lambda: all(len(workload.acked[tp]) >= before[tp] + PROGRESS for tp in followed), 30,
                     what="writes with the follower out of the ISR")
        except TimeoutError:
            stuck = {f"{t}-{q}": len(workload.acked[t, q]) - before[t, q] for t, q in followed}
            pytest.fail(f"cut {k}: follower {victim} out of the ISRs and still cut off, but the partitions it "
                        f"only follows took too few acks=all writes in 30 s (new acks per partition: {stuck}); "
                        f"{states(cluster, targets)}")
        progressed = time.monotonic() - t0 - shrunk
        time.sleep(HOLD_S)  # the cut held a while: writes go on
        rest = {b for b in cluster.brokers if b != victim}
        short = {f"{t}-{q}": s for t, q in followed if (s := cluster.state(t, q)) is None or set(s.isr) != rest}
        if short:     # the leader and the other follower must have stayed in sync all along
            pytest.fail(f"cut {k}: with follower {victim} cut off, these ISRs are not {sorted(rest)}: {short}")
    finally:
        net.heal()
    return (f"{TOPIC}-{p} follower {victim} cut from {'zk+brokers' if with_zk else 'brokers'} (leads "
            f"{sorted(f'{t}-{q}' for t, q in led)}): out of the ISRs after {shrunk:.1f}s, "
            f"writes went on {progressed:.1f}s later")


def cut_zookeeper_and_kill(net, cluster, workload: Workload, k: int, p: int) -> str:
    """``zk-kill``: cut the leader of TOPIC-p off from ZooKeeper and kill another broker
    (even cuts: at once, one of the followers in turn; odd cuts: once a new leader is elected, that
    leader or the other follower in turn); every partition must then be led by the third broker.
    Heal, restart the killed broker."""
    targets = workload.targets
    leader = cluster.state(TOPIC, p).leader
    others = sorted(b for b in cluster.brokers if b != leader)
    late = k % 2 == 1
    t0 = time.monotonic()
    net.cut(net.hosts[f"b{leader}"], [net.hosts["zk"]])
    try:
        if late:
            new = wait_for(lambda: (s := cluster.state(TOPIC, p)) and s.leader not in (leader, -1) and s.leader, 60,
                           what=f"{TOPIC}-{p}: a leader other than {leader}, cut off from ZooKeeper")
            victim = new if (k // 2) % 2 == 0 else next(b for b in others if b != new)
            how = f"new leader {new} elected after {time.monotonic() - t0:.1f}s, then killed " + (
                "it" if victim == new else f"follower {victim}")
        else:
            victim = others[(k // 2) % 2]
            how = f"killed {victim} at once"
        killed_at = time.monotonic()
        cluster.brokers[victim].kill()
        survivor = next(b for b in others if b != victim)
        try:
            wait_for(lambda: all((s := cluster.state(*tp)) and s.leader == survivor for tp in targets), 60,
                     interval=0.1, what=f"broker {survivor} leading everything")
        except TimeoutError:
            pytest.fail(f"cut {k}: broker {leader} cut off from ZooKeeper, broker {victim} killed; broker "
                        f"{survivor} does not lead every partition after 60 s: {states(cluster, targets)} "
                        f"(registered {sorted(cluster.registered())}, controller {cluster.controller()})")
        elected = time.monotonic() - killed_at
        time.sleep(HOLD_S)  # the cut held a while: writes go on
    finally:
        net.heal()
    cluster.brokers[victim].start()
    cluster.wait_registered(set(cluster.brokers), 60)
    return (f"{TOPIC}-{p} leader {leader} cut from zk, {how}; {survivor} led all {elected:.1f}s after the kill, "
            f"{victim} restarted")


def nemesis(net, cluster, workload: Workload, mode: str, events: list) -> None:
    targets = workload.targets
    for k in range(MODES[mode].cuts):
        p = k % PARTITIONS
        wait_for(lambda: full_isr(cluster, targets), 120, interval=0.1, what="every ISR full before the cut")
        before, cut_at = workload.acked_count(), clock()
        if mode == "follower":
            what = cut_follower(net, cluster, workload, k, p)
        elif mode == "zk-kill":
            what = cut_zookeeper_and_kill(net, cluster, workload, k, p)
        else:
            what = cut_leader(net, cluster, workload, mode, k, p)
        t1 = time.monotonic()
        try:
            wait_for(lambda: full_isr(cluster, targets), 120, interval=0.1, what="every ISR full again")
        except TimeoutError:
            pytest.fail(f"cut {k} ({what}): ISRs not full 120 s after healing: {states(cluster, targets)}")
        wait_for(lambda: workload.acked_count() > before, 60, what="acknowledgements during the cycle")
        events.append(f"cut {k:2d} at {cut_at}: {what}; ISR full {time.monotonic() - t1:.1f}s after healing; "
                      f"acked {workload.acked_count()}")


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


def producer_epochs(cluster, topic: str, partition: int) -> dict[int, int]:
    """Offset -> the producer epoch of its batch, from one replica's segment files."""
    data = next(iter(partition_files(cluster, topic, partition).values()))
    return {o: b.producer_epoch for b in iter_batches(data, check_crc=False) if not b.is_control
            for o in range(b.base_offset, b.base_offset + b.last_offset_delta + 1)}


def resent_after_epoch_bump(offsets: list[int], acked: set[int], epochs: dict[int, int]) -> bool:
    """Is a value in the log at every one of ``offsets`` because the client sent it again as a new
    record (KIP-360)? librdkafka bumps its producer epoch producer-wide after an
    OUT_OF_ORDER_SEQUENCE_NUMBER on any partition and renumbers every message it holds as not
    persisted -- among them a batch whose old leader appended it, saw it replicated to the next
    leader, then lost the leadership and answered NOT_LEADER_OR_FOLLOWER, as Kafka's
    DelayedProduce answers too. A broker can only catch a retry within one producer epoch (so can
    Kafka's). So: every copy but the last was never acknowledged and is of an older epoch than the
    last. A copy in the same epoch, or one that was acknowledged, is still a broker's duplicate."""
    last = max(offsets)
    return all(o not in acked and epochs.get(o, -1) < epochs.get(last, -1) for o in offsets if o != last)


def check(cluster, workload: Workload) -> None:
    """The history against the final log (see the module docstring)."""
    final = {(t, p): records for t, n in workload.topics.items()
             for p, records in read_all(cluster, t, n, timeout=120).items()}
    logs = {tp: dict(records) for tp, records in final.items()}
    problems = []
    for tp in workload.targets:
        name = "%s-%d" % tp
        offsets = [o for o, _ in workload.acked[tp]]
        if any(a >= b for a, b in pairwise(offsets)):
            bad = next((a, b) for a, b in pairwise(offsets) if a >= b)
            problems.append(f"{name}: acknowledged out of offset order, e.g. {bad}")
        lost = [(o, v, logs[tp].get(o)) for o, v in workload.acked[tp] if logs[tp].get(o) != v]
        if lost:
            problems.append(f"{name}: {len(lost)} acknowledged records lost or moved "
                            f"(offset, acked value, final value), e.g. {lost[:5]}")
        copies: dict[bytes, list[int]] = {}
        for o, v in final[tp]:
            copies.setdefault(v, []).append(o)
        twice = {v: os_ for v, os_ in copies.items() if len(os_) > 1}
        if twice:
            epochs = producer_epochs(cluster, *tp)
            acked_at = {o for o, _ in workload.acked[tp]}
            resent = sorted(v for v, os_ in twice.items() if resent_after_epoch_bump(os_, acked_at, epochs))
            if resent:
                print(f"{name}: {len(resent)} values the client re-sent under a bumped producer epoch "
                      f"(never acknowledged before): {resent[:5]}")
            dups = sorted(set(twice) - set(resent))
            if dups:
                problems.append(f"{name}: {len(dups)} values written more than once, e.g. {dups[:5]}")
        stray = [(o, v) for o, v in final[tp] if workload.targets[int(v) % len(workload.targets)] != tp]
        if stray:
            problems.append(f"{name}: {len(stray)} records sent to another partition, e.g. {stray[:5]}")
        if [o for o, _ in final[tp]] != list(range(len(final[tp]))):
            problems.append(f"{name}: the final log's offsets are not 0..{len(final[tp]) - 1}")
    if workload.changed:
        problems.append(f"{len(workload.changed)} offsets read with two different values "
                        f"(topic, partition, offset, first, later), e.g. {workload.changed[:5]}")
    unstable = [(t, p, o, v, logs[t, p].get(o)) for (t, p, o), v in workload.seen.items() if logs[t, p].get(o) != v]
    if unstable:
        problems.append(f"{len(unstable)} records a consumer read are not in the final log as read "
                        f"(topic, partition, offset, read, final), e.g. {sorted(unstable)[:5]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("mode", list(MODES))
def test_acknowledged_writes_survive_partitions(hosts, mode):
    """The nemesis cuts a broker off the mode's number of times while the clients write and read;
    then the history is checked against the final log and the replicas' files."""
    net, cluster = hosts
    spec = MODES[mode]
    for topic, partitions in spec.topics.items():
        create_replicated(cluster, topic, partitions, min_insync_replicas=2)
    workload = Workload(cluster.bootstrap, spec.topics).start()
    events: list[str] = []
    started = time.monotonic()
    try:
        wait_for(lambda: workload.acked_count() >= 100, 60, what="a first hundred acknowledgements")
        nemesis(net, cluster, workload, mode, events)
        healed = workload.acked_count()
        wait_for(lambda: workload.acked_count() >= healed + 100, 60, what="a hundred writes to the healed cluster")
    finally:
        net.heal()
        workload.stop()
        print(f"{mode}: {len(events)} cuts in {time.monotonic() - started:.0f}s", *events,
              f"consumer errors: {len(workload.consumer_errors)} {sorted(set(workload.consumer_errors))[:5]}",
              sep="\n")
    assert not workload.failed, f"{len(workload.failed)} records failed, e.g. {workload.failed[:5]}"
    acked = {"%s-%d" % tp: len(a) for tp, a in workload.acked.items()}
    assert sum(acked.values()) >= spec.min_acked and \
        min(acked.values()) >= spec.min_acked // (2 * len(workload.targets)), acked
    assert len(workload.seen) >= sum(acked.values()) // 2, "the consumer read too little to judge"
    check(cluster, workload)
    for topic, p in workload.targets:
        try:
            wait_for(lambda: len(set(partition_files(cluster, topic, p).values())) == 1, 30,
                     what=f"{topic}-{p} byte-identical on every broker")
        except TimeoutError:
            pytest.fail(f"{topic}-{p}: the replicas' logs differ; first at "
                        f"{first_difference(partition_files(cluster, topic, p))}")
