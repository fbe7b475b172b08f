"""Transactions in cluster mode, over real ZooKeeper and three real brokers, with confluent-kafka's
transactional producer and read_committed consumer.

``__transaction_state`` is created by the first transactional FindCoordinator with
transaction.state.log.replication.factor (3) replicas; a transactional id's coordinator is the
leader of its partition, and the COMMIT/ABORT markers go as WriteTxnMarkers to every partition
leader of the transaction (other brokers included). When the coordinator dies, the partition's
next leader loads the replicated states and the producer carries on with it: what it commits
is read exactly once, what it aborts never. A consume-transform-produce worker stays exactly-once
while brokers (its transaction coordinator among them) and the worker itself are SIGKILLed."""
import collections
import os
import random
import signal
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from fastkafka.coordinator import partition_for
from fastkafka.coordinator.transactions import TRANSACTION_STATE_TOPIC
from fastkafka.protocol import ApiKey

from support.ctp import WorkerProcess, check_exactly_once, committed_progress
from support.harness import Cluster, create_replicated, raw_call, wait_for


pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(300)]

TOPIC, PARTITIONS = "txn", 3
TXN_PARTITIONS = 6       # the harness's transaction.state.log.num.partitions
TRANSACTION_KEY = 1


def producer(bootstrap: str, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
                  "transaction.timeout.ms": 60000, "message.timeout.ms": 60000})
    p.init_transactions(60)
    return p


def send(p: Producer, tag: bytes, per_partition: int = 5) -> None:
    for part in range(PARTITIONS):
        for i in range(per_partition):
            p.produce(TOPIC, value=b"%s-%d-%d" % (tag, part, i), partition=part)
    assert p.flush(60) == 0


def read_topic(bootstrap: str, topic: str, isolation: str, partitions: int = PARTITIONS,
               timeout: float = 60) -> dict[int, list[bytes]]:
    """Every value of ``topic`` up to each partition's end (the last stable offset under
    read_committed), per partition in offset order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    eof: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while eof != set(got) and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                eof.add(m.partition())
                continue
            eof.discard(m.partition())
            got[m.partition()].append(m.value())
    finally:
        c.close()
    assert eof == set(got), f"{topic}: no end of {set(got) - eof} within {timeout} s"
    return got


def read(bootstrap: str, isolation: str) -> list[bytes]:
    """Every value of TOPIC (see :func:`read_topic`), partition by partition."""
    got = read_topic(bootstrap, TOPIC, isolation)
    return [v for p in sorted(got) for v in got[p]]


def values(tag: bytes, per_partition: int = 5) -> list[bytes]:
    return [b"%s-%d-%d" % (tag, part, i) for part in range(PARTITIONS) for i in range(per_partition)]


def coordinator(cluster, txn_id: str) -> int:
    st = cluster.state(TRANSACTION_STATE_TOPIC, partition_for(txn_id, TXN_PARTITIONS))
    return -1 if st is None else st.leader


def find_txn_coordinator(port: int, txn_id: str):
    r = raw_call(port, ApiKey.FIND_COORDINATOR, 1, {"key": txn_id, "key_type": TRANSACTION_KEY})
    return r.error_code, r.node_id


def test_commit_and_abort_across_leaders_on_three_brokers(cluster):
    create_replicated(cluster, TOPIC, PARTITIONS)
    leaders = {cluster.state(TOPIC, p).leader for p in range(PARTITIONS)}
    assert len(leaders) > 1                                  # markers go to other brokers too
    p = producer(cluster.bootstrap, "app-1")
    wait_for(lambda: all(len(cluster.state(TRANSACTION_STATE_TOPIC, q).isr) == 3 for q in range(TXN_PARTITIONS)),
             30, what=f"{TRANSACTION_STATE_TOPIC} with 3 in-sync replicas per partition")
    for b in cluster.brokers.values():                       # every broker names the same coordinator
        assert find_txn_coordinator(b.port, "app-1") == (0, coordinator(cluster, "app-1"))

    p.begin_transaction()
    send(p, b"a")
    p.commit_transaction(60)
    p.begin_transaction()
    send(p, b"b")
    p.abort_transaction(60)
    p.begin_transaction()
    send(p, b"c")
    p.commit_transaction(60)

    assert sorted(read(cluster.bootstrap, "read_committed")) == sorted(values(b"a") + values(b"c"))
    assert sorted(read(cluster.bootstrap, "read_uncommitted")) == sorted(values(b"a") + values(b"b") + values(b"c"))


@pytest.mark.crash
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_the_coordinator_dies_mid_transaction(cluster, how):
    """The producer has written an open transaction (Ongoing is replicated); its coordinator
    dies; the producer's commit goes to the partition's next leader, which loaded the state and
    writes the markers: the transaction is read once, and the next one works too."""
    create_replicated(cluster, TOPIC, PARTITIONS)
    txn_id = f"dies-{how.lower()}"
    p = producer(cluster.bootstrap, txn_id)
    p.begin_transaction()
    send(p, b"before")
    p.commit_transaction(60)
    p.begin_transaction()
    send(p, b"open")
    victim = coordinator(cluster, txn_id)
    if how == "SIGKILL":
        cluster.brokers[victim].kill()
    else:
        cluster.brokers[victim].signal(signal.SIGTERM)
        assert cluster.brokers[victim].wait_exit(60) == 0
    new = wait_for(lambda: (c := coordinator(cluster, txn_id)) not in (victim, -1) and c, 60,
                   what="the transaction state partition's new leader")
    p.commit_transaction(60)
    p.begin_transaction()
    send(p, b"after")
    p.abort_transaction(60)
    p.begin_transaction()
    send(p, b"last")
    p.commit_transaction(60)

    live = ",".join(b.bootstrap for b in cluster.brokers.values() if b.broker_id != victim)
    got = read(live, "read_committed")
    assert sorted(got) == sorted(values(b"before") + values(b"open") + values(b"last")), \
        f"coordinator {victim} -> {new}"
    assert len(got) == len(set(got))


# ------------------------------------------------ consume-transform-produce through broker kills

CTP_IN, CTP_OUT, CTP_GROUP, CTP_TXN_ID = "ctp-in", "ctp-out", "ctp-group", "ctp-cluster"
CTP_PARTS = 3           # partitions of the input and of the output topic (replication factor 3)
CTP_RECORDS = 2000      # input records, each with a unique id
CTP_BATCH = 10          # records per transaction (at most): ~200 transactions, kills land among them
CTP_BROKER_KILLS = int(os.environ.get("TXN_BROKER_KILLS", 20))  # SIGKILLs of a broker per run, at random
CTP_WORKER_KILLS = int(os.environ.get("TXN_WORKER_KILLS", 2))   # points of progress; and of the worker
CTP_DEADLINE = 180      # seconds for the whole run to finish (20 kills: ~85 s here)
INTERNAL = ("__consumer_offsets", TRANSACTION_STATE_TOPIC)   # 6 partitions each (the harness's)


def group_coordinator(cluster) -> int:
    st = cluster.state("__consumer_offsets", partition_for(CTP_GROUP, TXN_PARTITIONS))
    return -1 if st is None else st.leader


def ctp_diagnosis(cluster) -> str:
    """What ZooKeeper and the brokers say about the run's topics, group and transactional id, and
    the brokers' logged errors (for a failure's message)."""
    exits = {i: b.proc.returncode for i, b in cluster.brokers.items() if b.proc is not None and not b.alive()}
    lines = [f"alive {sorted(i for i, b in cluster.brokers.items() if b.alive())}, exited {exits}, registered "
             f"{sorted(cluster.registered())}, controller {cluster.controller()}, txn coordinator "
             f"{coordinator(cluster, CTP_TXN_ID)}, group coordinator {group_coordinator(cluster)}"]
    for t in (CTP_IN, CTP_OUT) + INTERNAL:
        for p in range(TXN_PARTITIONS if t in INTERNAL else CTP_PARTS):
            s = cluster.state(t, p)
            lines.append(f"  {t}-{p}: " + ("no state" if s is None else
                                           f"leader {s.leader} isr {list(s.isr)} epoch {s.leader_epoch}"))
    try:
        for iso in ("read_committed", "read_uncommitted"):
            c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"diag-{time.monotonic_ns()}",
                          "isolation.level": iso})
            for t in (CTP_IN, CTP_OUT):
                ends = [c.get_watermark_offsets(TopicPartition(t, p), timeout=5)[1] for p in range(CTP_PARTS)]
                lines.append(f"{t} {iso} end offsets {ends}")
            c.close()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})    # alive until the future resolves
        g = admin.describe_consumer_groups([CTP_GROUP])[CTP_GROUP].result(10)
        lines.append(f"group {g.state} members " + "; ".join(
            f"{m.member_id} {sorted(tp.partition for tp in m.assignment.topic_partitions)}" for m in g.members))
    except Exception as e:   # the report must not hide the failure it explains
        lines.append(f"(diagnosis failed: {type(e).__name__}: {e})")
    for i, b in cluster.brokers.items():
        bad = [ln for ln in b.output().splitlines() if "Traceback" in ln or " ERROR " in ln or "Error" in ln]
        lines.append(f"--- broker {i} ({b.stderr_path}): {len(bad)} error lines\n" + "\n".join(bad[-10:]))
    return "\n".join(lines)


def in_sync(cluster, topics) -> bool:
    """Every partition of ``topics`` has a live leader and all its replicas in the ISR."""
    live = cluster.registered()
    for t in topics:
        try:
            assignment = cluster.assignment(t)
        except Exception:  # noqa: BLE001 -- not created yet
            return False
        for p, replicas in assignment.items():
            s = cluster.state(t, p)
            if s is None or s.leader not in live or set(s.isr) != set(replicas):
                return False
    return True


@pytest.mark.crash
@pytest.mark.timeout(300)
def test_consume_transform_produce_exactly_once_through_broker_kills(ensemble, tmp_path, request):
    """txn_worker.py (confluent) turns CTP_RECORDS input records of ctp-in (3 partitions, RF 3)
    into ctp-out records, committing the input offsets in each transaction, against the three
    brokers. At random points of the group's committed progress a broker is SIGKILLed -- in turn
    the worker's transaction coordinator (leader of its __transaction_state partition) and another
    broker picked at random -- and restarted once ZooKeeper dropped its session, so that at most one
    broker is down at a time (before the next kill every broker is back in every ISR); the worker
    is SIGKILLed CTP_WORKER_KILLS times. In the end read_committed shows every input id in the
    output exactly once, and the group's committed offsets are the input's end offsets.
    (TXN_SEED=<n> replays one run's kill points.)"""
    # the worker's session.timeout.ms is 2 s: a killed worker's partitions move on quickly
    with Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3,
                 **{"group.min.session.timeout.ms": 500}) as cluster:
        ctp_through_broker_kills(cluster, tmp_path)


def ctp_through_broker_kills(cluster, tmp_path) -> None:
    seed = int(os.environ.get("TXN_SEED") or random.randrange(1 << 30))
    print(f"kill points chosen with TXN_SEED={seed}")
    rng = random.Random(seed)
    create_replicated(cluster, CTP_IN, CTP_PARTS)
    create_replicated(cluster, CTP_OUT, CTP_PARTS)
    src = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    ids = [b"id-%05d" % i for i in range(CTP_RECORDS)]
    for i, v in enumerate(ids):
        src.produce(CTP_IN, value=v, partition=i % CTP_PARTS)
    assert src.flush(60) == 0
    in_ends = {p: len(ids[p::CTP_PARTS]) for p in range(CTP_PARTS)}

    monitor = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": CTP_GROUP,
                        "isolation.level": "read_committed", "reconnect.backoff.max.ms": 300,
                        "metadata.recovery.strategy": "none"})   # see txn_worker.py
    worker = WorkerProcess(["confluent", cluster.bootstrap, CTP_IN, CTP_OUT, CTP_GROUP, CTP_TXN_ID,
                            "--batch", str(CTP_BATCH), "--pause-ms", "20"], tmp_path)
    worker.start()
    def points(n: int) -> list[int]:      # kill points: sums of the group's committed offsets
        return [rng.randrange(CTP_RECORDS // 20, CTP_RECORDS * 9 // 10) for _ in range(n)]
    kills = sorted([(at, "broker") for at in points(CTP_BROKER_KILLS)]
                   + [(at, "worker") for at in points(CTP_WORKER_KILLS)])
    done: list[tuple] = []
    progress = None
    t0 = time.monotonic()

    def why() -> str:
        return (f"TXN_SEED={seed}, kills done {done}, still to do {kills}, committed {progress} of {in_ends}, "
                f"worker runs {worker.runs} exits {worker.exits}, {time.monotonic() - t0:.1f} s in\n"
                f"{ctp_diagnosis(cluster)}\n{worker.report()}")

    def settle(what: str, wait) -> None:
        try:
            wait()
        except (TimeoutError, RuntimeError) as e:
            pytest.fail(f"{what}: {e}; " + why())

    def kill_broker(at: int, total: int) -> None:
        coord = coordinator(cluster, CTP_TXN_ID)
        if sum(1 for d in done if d[1] != "worker") % 2 == 0:
            role, victim = "coordinator", coord
        else:
            role, victim = "other", rng.choice(sorted(set(cluster.brokers) - {coord}))
        assert victim in cluster.brokers, f"no transaction coordinator for {CTP_TXN_ID}: " + why()
        group = group_coordinator(cluster)
        time.sleep(rng.uniform(0, 0.1))          # land anywhere inside a transaction
        k0 = time.monotonic()
        cluster.brokers[victim].kill()
        settle(f"kill of {role} {victim}", lambda: wait_for(lambda: victim not in cluster.registered(), 30,
                                                             what=f"broker {victim}'s session gone"))
        if role == "coordinator":
            settle(f"kill of {role} {victim}", lambda: wait_for(
                lambda: coordinator(cluster, CTP_TXN_ID) not in (victim, -1), 30,
                what=f"a new transaction coordinator after broker {victim}"))
        cluster.brokers[victim].start()
        settle(f"restart of {victim}", lambda: cluster.wait_registered(set(cluster.brokers), 60))
        done.append((at, f"{role} {victim}" + (" (group coordinator)" if victim == group else ""), total,
                     f"back in {time.monotonic() - k0:.1f} s"))

    try:
        deadline = t0 + CTP_DEADLINE
        while True:
            assert time.monotonic() < deadline, "no exactly-once finish in time: " + why()
            for i, b in cluster.brokers.items():
                assert b.alive(), f"broker {i} died by itself: " + why()
            worker.ensure_running()
            progress = committed_progress(monitor, CTP_IN, CTP_PARTS)
            total = sum(progress.values()) if progress else None
            if total is not None and kills and total >= kills[0][0]:
                if kills[0][1] == "broker":   # one broker down at a time: the last one is back in sync
                    settle(f"before the kill at {kills[0][0]}", lambda: wait_for(
                        lambda: in_sync(cluster, (CTP_IN, CTP_OUT) + INTERNAL), 60,
                        what="every broker back in every ISR"))
                at, what = kills.pop(0)
                if what == "broker":
                    kill_broker(at, total)
                else:
                    time.sleep(rng.uniform(0, 0.1))  # land anywhere inside a transaction
                    worker.kill()
                    done.append((at, "worker", total))
            elif not kills and progress == in_ends:
                break
            else:
                time.sleep(0.05)  # poll interval
        worker.stop()
        print(f"{time.monotonic() - t0:.1f} s, kills {done}, worker runs {worker.runs} exits {worker.exits}")
        assert len(done) == CTP_BROKER_KILLS + CTP_WORKER_KILLS
        assert all(code in (3, 4, 5) for code in worker.exits), why()

        out = read_topic(cluster.bootstrap, CTP_OUT, "read_committed", CTP_PARTS)
        check_exactly_once(cluster.bootstrap, collections.Counter(v for rows in out.values() for v in rows), ids,
                           CTP_GROUP, CTP_IN, in_ends, why)
    finally:
        monitor.close()
        worker.stop()
