"""Kafka transactions (KIP-98) end to end with the real clients: commit/abort visibility under
read_committed and read_uncommitted (confluent-kafka, kafka-python, aiokafka, kcat), fencing by
a second producer with the same transactional.id, the coordinator aborting a transaction past its
timeout, the last stable offset in ListOffsets, and consume-transform-produce staying exactly-once
while the broker and the worker are SIGKILLed."""
from __future__ import annotations

import asyncio
import collections
import os
import random
import shutil
import signal
import subprocess
import threading
import time

import pytest


from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,  # noqa: E402
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from support.brokers import free_port, running_broker, serve_process, wait_listening
from support.ctp import WorkerProcess, check_exactly_once, committed_progress, terminate

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]

PARTS = 3          # partitions of the visibility topic
PER = 10           # records per partition per transaction
# A, its commit marker, B, its abort marker, C, its commit marker: per partition
A_AT, B_AT, C_AT, END = 0, PER + 1, 2 * PER + 2, 3 * PER + 3


def tagged(tag):
    return {p: [f"{tag}-{p}-{i}".encode() for i in range(PER)] for p in range(PARTS)}


def expected(read_committed):
    """{partition: [(offset, value)]} a reader from the beginning must see."""
    out = {}
    for p in range(PARTS):
        rows = [(A_AT + i, v) for i, v in enumerate(tagged("A")[p])]
        if not read_committed:
            rows += [(B_AT + i, v) for i, v in enumerate(tagged("B")[p])]
        rows += [(C_AT + i, v) for i, v in enumerate(tagged("C")[p])]
        out[p] = rows
    return out


# ---------------------------------------------------------------- confluent-kafka helpers

def txn_producer(bootstrap, txn_id, **conf):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, **conf})
    p.init_transactions(20)
    return p


def produce_all(p, topic, by_partition):
    """Produce and flush; every delivery report must be a success (the records are in the log)."""
    failures = []

    def report(err, _msg):
        if err is not None:
            failures.append(err)
    for part, values in by_partition.items():
        for v in values:
            p.produce(topic, value=v, partition=part, on_delivery=report)
    assert p.flush(20) == 0
    assert failures == []


def confluent_read(bootstrap, topic, partitions, isolation, timeout=30, on_eof=None):
    """{partition: [(offset, value)]} from the beginning until every partition reports EOF (the
    high watermark, or under read_committed the last stable offset). ``on_eof(partition, offset)``
    is called for each EOF; if it returns False reading goes on past that EOF."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-reader", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    got = {p: [] for p in partitions}
    eof = set()
    deadline = time.monotonic() + timeout
    try:
        while eof != set(partitions) and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                if on_eof is None or on_eof(m.partition(), m.offset()) is not False:
                    eof.add(m.partition())
                continue
            got[m.partition()].append((m.offset(), m.value()))
    finally:
        c.close()
    assert eof == set(partitions), f"no EOF on {set(partitions) - eof} within {timeout}s; read {got}"
    return got


def create(bootstrap, name, partitions):
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(name, partitions, 1)], request_timeout=10)[name].result(15)


# ---------------------------------------------------------------- 1. commit / abort / commit

def write_acb_confluent(bootstrap, topic):
    p = txn_producer(bootstrap, f"{topic}-txn")
    for tag, commit in (("A", True), ("B", False), ("C", True)):
        p.begin_transaction()
        produce_all(p, topic, tagged(tag))
        if commit:
            p.commit_transaction(20)
        else:
            p.abort_transaction(20)


def write_acb_kafka_python(bootstrap, topic):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic}-txn", linger_ms=5,
                      max_block_ms=20_000)
    p.init_transactions()
    for tag, commit in (("A", True), ("B", False), ("C", True)):
        p.begin_transaction()
        futures = [p.send(topic, value=v, partition=part) for part, vs in tagged(tag).items() for v in vs]
        p.flush(20)
        base = {"A": A_AT, "B": B_AT, "C": C_AT}[tag]
        assert sorted((md.partition, md.offset) for md in (f.get(10) for f in futures)) == [
            (part, base + i) for part in range(PARTS) for i in range(PER)]
        if commit:
            p.commit_transaction()
        else:
            p.abort_transaction()
    p.close(timeout=10)


def write_acb_aiokafka(bootstrap, topic):
    from aiokafka import AIOKafkaProducer

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic}-txn", linger_ms=5)
        await p.start()
        try:
            for tag, commit in (("A", True), ("B", False), ("C", True)):
                await p.begin_transaction()
                futures = [await p.send(topic, value=v, partition=part)
                           for part, vs in tagged(tag).items() for v in vs]
                mds = await asyncio.gather(*futures)
                assert len(mds) == PARTS * PER
                if commit:
                    await p.commit_transaction()
                else:
                    await p.abort_transaction()
        finally:
            await p.stop()
    asyncio.run(asyncio.wait_for(go(), 60))


def read_kafka_python(bootstrap, topic, isolation, end=END, timeout=30):
    """Until the position of every partition (which moves past control batches) reaches ``end``."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      isolation_level=isolation, fetch_max_wait_ms=100, auto_offset_reset="earliest")
    tps = [KTP(topic, p) for p in range(PARTS)]
    c.assign(tps)
    c.seek_to_beginning()
    got = {p: [] for p in range(PARTS)}
    deadline = time.monotonic() + timeout
    try:
        while any(c.position(tp) < end for tp in tps) and time.monotonic() < deadline:
            for tp, recs in c.poll(timeout_ms=200).items():
                got[tp.partition].extend((r.offset, r.value) for r in recs)
        positions = {tp.partition: c.position(tp) for tp in tps}
        ends = c.end_offsets(tps)
    finally:
        c.close()
    assert positions == dict.fromkeys(range(PARTS), end), f"positions {positions}; read {got}"
    assert {tp.partition: o for tp, o in ends.items()} == dict.fromkeys(range(PARTS), end)
    return got


def read_aiokafka(bootstrap, topic, isolation, end=END, timeout=30):
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP

    async def go():
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level=isolation, fetch_max_wait_ms=100, auto_offset_reset="earliest")
        await c.start()
        tps = [ATP(topic, p) for p in range(PARTS)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        got = {p: [] for p in range(PARTS)}
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                positions = {tp.partition: await c.position(tp) for tp in tps}
                if all(pos >= end for pos in positions.values()):
                    break
                for tp, recs in (await c.getmany(timeout_ms=200)).items():
                    got[tp.partition].extend((r.offset, r.value) for r in recs)
            ends = await c.end_offsets(tps)
        finally:
            await c.stop()
        assert positions == dict.fromkeys(range(PARTS), end), f"positions {positions}; read {got}"
        assert {tp.partition: o for tp, o in ends.items()} == dict.fromkeys(range(PARTS), end)
        return got
    return asyncio.run(asyncio.wait_for(go(), timeout + 30))


WRITERS = {"confluent": write_acb_confluent, "kafka-python": write_acb_kafka_python,
           "aiokafka": write_acb_aiokafka}
READERS = {"confluent": lambda b, t, iso: confluent_read(b, t, range(PARTS), iso),
           "kafka-python": read_kafka_python, "aiokafka": read_aiokafka}


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka"])
def test_commit_abort_commit_visibility(broker, client):
    """Commit A, abort B, commit C over 3 partitions: read_committed sees A then C, read_uncommitted
    A, B, C, each at its offset -- one offset per partition taken by each control record, and no
    control record delivered as a message."""
    topic = f"acb-{client}"
    broker.topics.create(topic, PARTS)
    WRITERS[client](broker.bootstrap, topic)
    assert READERS[client](broker.bootstrap, topic, "read_committed") == expected(read_committed=True)
    assert READERS[client](broker.bootstrap, topic, "read_uncommitted") == expected(read_committed=False)


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_kcat_isolation_levels(broker, isolation):
    """Debian's kcat (librdkafka 2.0.2) to EOF under each isolation level."""
    assert shutil.which("kcat"), "kcat is missing: make test installs it (ci/install-debian.sh)"
    topic = "acb-kcat"
    broker.topics.create(topic, PARTS)
    write_acb_confluent(broker.bootstrap, topic)
    r = subprocess.run(["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e",
                        "-X", f"isolation.level={isolation}", "-f", "%p %o %s\n"],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    got = {p: [] for p in range(PARTS)}
    for line in r.stdout.decode().splitlines():
        part, off, value = line.split(" ")
        got[int(part)].append((int(off), value.encode()))
    assert got == expected(read_committed=isolation == "read_committed")


# ---------------------------------------------------------------- 2. fencing

def fence_confluent(bootstrap, topic, txn_id):
    p1 = txn_producer(bootstrap, txn_id)
    p1.begin_transaction()
    produce_all(p1, topic, {0: [b"zombie-%d" % i for i in range(5)]})
    p2 = txn_producer(bootstrap, txn_id)        # bumps the epoch, aborts p1's open transaction
    with pytest.raises(KafkaException) as info:
        p1.commit_transaction(20)
    err = info.value.args[0]
    assert err.fatal(), err
    assert err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), err
    with pytest.raises(KafkaException):         # fatal: nothing more from p1
        p1.begin_transaction()
    p2.begin_transaction()
    produce_all(p2, topic, {0: [b"winner-%d" % i for i in range(5)]})
    p2.commit_transaction(20)


def fence_kafka_python(bootstrap, topic, txn_id):
    from kafka import KafkaProducer
    from kafka.errors import InvalidProducerEpochError, ProducerFencedError

    def producer():
        p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, linger_ms=5,
                          max_block_ms=20_000)
        p.init_transactions()
        return p
    p1 = producer()
    p1.begin_transaction()
    for i in range(5):
        p1.send(topic, value=b"zombie-%d" % i, partition=0)
    p1.flush(20)
    p2 = producer()
    with pytest.raises((ProducerFencedError, InvalidProducerEpochError)):
        p1.commit_transaction()
    p1.close(timeout=5)
    p2.begin_transaction()
    for i in range(5):
        p2.send(topic, value=b"winner-%d" % i, partition=0)
    p2.flush(20)
    p2.commit_transaction()
    p2.close(timeout=10)


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_second_producer_with_same_transactional_id_fences_the_first(broker, client):
    """The zombie's flushed records (offsets 0-4) are aborted by the new producer's InitProducerId
    (abort marker at 5); the new producer's transaction (6-10, commit marker 11) is all that
    read_committed ever shows."""
    topic = f"fence-{client}"
    broker.topics.create(topic, 1)
    {"confluent": fence_confluent, "kafka-python": fence_kafka_python}[client](
        broker.bootstrap, topic, f"fence-{client}-id")
    winners = [(6 + i, b"winner-%d" % i) for i in range(5)]
    zombies = [(i, b"zombie-%d" % i) for i in range(5)]
    assert confluent_read(broker.bootstrap, topic, [0], "read_committed") == {0: winners}
    assert confluent_read(broker.bootstrap, topic, [0], "read_uncommitted") == {0: zombies + winners}


# ---------------------------------------------------------------- 3. transaction timeout

TXN_TIMEOUT_MS = 3000


def test_coordinator_aborts_a_transaction_past_its_timeout(tmp_path):
    """A transaction left open past transaction.timeout.ms is aborted by the coordinator (which
    looks every 200 ms here). Until then read_committed stops at its first offset -- plain records
    written after it are held back -- and afterwards gets them; the open transaction's records
    are never delivered, and its producer is fenced."""
    with running_broker(tmp_path / "data",
                        transaction_abort_timed_out_transaction_cleanup_interval_ms=200) as b:
        topic = "timeout"
        b.topics.create(topic, 1)
        plain = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        produce_all(plain, topic, {0: [b"before-%d" % i for i in range(5)]})        # 0-4
        opened = time.monotonic()
        tp = txn_producer(b.bootstrap, "timeout-id", **{"transaction.timeout.ms": TXN_TIMEOUT_MS})
        tp.begin_transaction()
        produce_all(tp, topic, {0: [b"never-%d" % i for i in range(3)]})           # 5-7
        produce_all(plain, topic, {0: [b"after-%d" % i for i in range(5)]})         # 8-12
        eofs = []

        def on_eof(_part, offset):
            eofs.append((offset, time.monotonic() - opened))
            return offset == 14          # past the abort marker at 13: the end
        got = confluent_read(b.bootstrap, topic, [0], "read_committed", timeout=TXN_TIMEOUT_MS / 1000 + 15,
                             on_eof=on_eof)
        assert got == {0: [(i, b"before-%d" % i) for i in range(5)]
                       + [(8 + i, b"after-%d" % i) for i in range(5)]}
        # the reader stood at the last stable offset (5) before the coordinator's abort ...
        assert eofs[0][0] == 5, eofs
        assert eofs[0][1] < TXN_TIMEOUT_MS / 1000, eofs
        # ... and reached the end only once the transaction had been open its whole timeout
        assert eofs[-1][0] == 14 and eofs[-1][1] >= TXN_TIMEOUT_MS / 1000, eofs
        with pytest.raises(KafkaException) as info:
            tp.commit_transaction(10)
        err = info.value.args[0]
        assert err.fatal() and err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), err
        assert confluent_read(b.bootstrap, topic, [0], "read_uncommitted")[0][5:8] == [
            (5 + i, b"never-%d" % i) for i in range(3)]


# ---------------------------------------------------------------- 4. last stable offset

def end_offsets_both_ways(bootstrap, topic, partitions):
    """{isolation: {partition: end offset}} from ListOffsets(latest) as kafka-python and aiokafka
    send it; the two clients must agree."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    out = {}
    for iso in ("read_committed", "read_uncommitted"):
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level=iso)
        kp = {tp.partition: o for tp, o in c.end_offsets([KTP(topic, p) for p in partitions]).items()}
        c.close()

        async def aio():
            ac = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level=iso)
            await ac.start()
            try:
                return {tp.partition: o for tp, o in
                        (await ac.end_offsets([ATP(topic, p) for p in partitions])).items()}
            finally:
                await ac.stop()
        aio_ends = asyncio.run(asyncio.wait_for(aio(), 30))
        assert kp == aio_ends, (iso, kp, aio_ends)
        out[iso] = kp
    return out


def test_list_offsets_latest_answers_the_last_stable_offset(broker):
    topic = "lso"
    broker.topics.create(topic, 2)
    plain = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    produce_all(plain, topic, {0: [b"p%d" % i for i in range(5)], 1: [b"q%d" % i for i in range(4)]})
    tp = txn_producer(broker.bootstrap, "lso-id")
    tp.begin_transaction()
    produce_all(tp, topic, {0: [b"t%d" % i for i in range(3)]})                   # p0 5-7
    produce_all(plain, topic, {0: [b"late"], 1: [b"r0", b"r1"]})                  # p0 8, p1 4-5
    ends = end_offsets_both_ways(broker.bootstrap, topic, [0, 1])
    assert ends == {"read_committed": {0: 5, 1: 6}, "read_uncommitted": {0: 9, 1: 6}}
    tp.commit_transaction(20)                                                     # marker p0 9
    ends = end_offsets_both_ways(broker.bootstrap, topic, [0, 1])
    assert ends == {"read_committed": {0: 10, 1: 6}, "read_uncommitted": {0: 10, 1: 6}}
    tp.begin_transaction()
    produce_all(tp, topic, {1: [b"u0", b"u1"]})                                   # p1 6-7
    ends = end_offsets_both_ways(broker.bootstrap, topic, [0, 1])
    assert ends == {"read_committed": {0: 10, 1: 6}, "read_uncommitted": {0: 10, 1: 8}}
    tp.abort_transaction(20)                                                      # marker p1 8
    ends = end_offsets_both_ways(broker.bootstrap, topic, [0, 1])
    assert ends == {"read_committed": {0: 10, 1: 9}, "read_uncommitted": {0: 10, 1: 9}}
    got = confluent_read(broker.bootstrap, topic, [0, 1], "read_committed")
    assert [v for _, v in got[0]] == [b"p%d" % i for i in range(5)] + [b"t0", b"t1", b"t2", b"late"]
    assert [v for _, v in got[1]] == [b"q%d" % i for i in range(4)] + [b"r0", b"r1"]


# ---------------------------------------------------------------- 5. exactly-once under SIGKILL

N_RECORDS = 2000       # input records, each with a unique id
CTP_PARTS = 3          # partitions of the input and of the output topic
BATCH = 50             # records per transaction (at most)
BROKER_KILLS = int(os.environ.get("TXN_BROKER_KILLS", 20))  # SIGKILLs of the broker per run, at random
WORKER_KILLS = int(os.environ.get("TXN_WORKER_KILLS", 2))   # points of progress; and of the worker
CTP_DEADLINE = 150     # seconds for the whole run to finish (20 kills: ~25 s confluent, ~75 s kafka-python)


class BrokerProcess:
    """``fastkafka serve`` on a fixed port and data dir, SIGKILLed and restarted; its stderr is
    drained (so the pipe never fills) and kept for the report."""

    def __init__(self, data):
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.args = ["--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
                     "--override", f"log.dirs={data}",
                     "--override", "group.initial.rebalance.delay.ms=0",
                     "--override", "group.min.session.timeout.ms=500",
                     # few internal partitions: each restart after a SIGKILL re-validates them all
                     "--override", "offsets.topic.num.partitions=5",
                     "--override", "transaction.state.log.num.partitions=5",
                     "--log-level", "WARNING"]
        self.logs = []
        self.proc = None

    def start(self):
        self.proc = serve_process(*self.args)
        lines = []
        self.logs.append(lines)
        threading.Thread(target=lambda f=self.proc.stderr: lines.extend(f), daemon=True).start()
        wait_listening(self.port, self.proc)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc is not None:
            terminate(self.proc)

    def report(self):
        return "".join(f"--- broker run {i}\n" + "".join(lines[-30:]) for i, lines in enumerate(self.logs))


def diagnose(bootstrap):
    """What the broker says about the run's topics and group (for a failure's message)."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    lines = []
    try:
        for iso in ("read_committed", "read_uncommitted"):
            c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level=iso,
                              request_timeout_ms=5000)
            for t in ("ctp-in", "ctp-out"):
                ends = c.end_offsets([KTP(t, p) for p in range(CTP_PARTS)])
                lines.append(f"{t} {iso} end offsets {sorted((tp.partition, o) for tp, o in ends.items())}")
            c.close()
        admin = AdminClient({"bootstrap.servers": bootstrap})    # alive until the future resolves
        g = admin.describe_consumer_groups(["ctp-group"])["ctp-group"].result(5)
        lines.append(f"group {g.state} members " + "; ".join(
            f"{m.member_id} {sorted(tp.partition for tp in m.assignment.topic_partitions)}" for m in g.members))
    except Exception as e:   # the report must not hide the failure it explains
        lines.append(f"(diagnosis failed: {type(e).__name__}: {e})")
    return "\n".join(lines)


@pytest.mark.crash
@pytest.mark.timeout(240)
@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_consume_transform_produce_exactly_once_through_broker_and_worker_kills(tmp_path, client):
    """txn_worker.py turns N_RECORDS input records into output records, committing the input
    offsets in each transaction (send_offsets_to_transaction), against a ``fastkafka serve``
    process; the broker is SIGKILLed and restarted on its port and data dir BROKER_KILLS times and
    the worker WORKER_KILLS times, at random points of the group's committed progress. In the end
    read_committed shows every input id in the output exactly once, and the group's committed
    offsets are the input's end offsets. (TXN_SEED=<n> replays one run's kill points.)"""
    seed = int(os.environ.get("TXN_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    broker = BrokerProcess(tmp_path / "data")
    broker.start()
    worker = None
    monitor = None
    try:
        a = AdminClient({"bootstrap.servers": broker.bootstrap})
        fs = a.create_topics([NewTopic(t, CTP_PARTS, 1) for t in ("ctp-in", "ctp-out")], request_timeout=10)
        for f in fs.values():
            f.result(15)
        src = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        ids = [b"id-%05d" % i for i in range(N_RECORDS)]
        produce_all(src, "ctp-in", {p: ids[p::CTP_PARTS] for p in range(CTP_PARTS)})
        in_ends = {p: len(ids[p::CTP_PARTS]) for p in range(CTP_PARTS)}

        monitor = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ctp-group",
                            "isolation.level": "read_committed", "reconnect.backoff.max.ms": 300,
                            "metadata.recovery.strategy": "none"})   # see txn_worker.py
        worker = WorkerProcess([client, broker.bootstrap, "ctp-in", "ctp-out", "ctp-group", f"ctp-{client}",
                                "--batch", str(BATCH), "--pause-ms", "20"], tmp_path)
        worker.start()
        kills = sorted([(rng.randrange(N_RECORDS // 20, N_RECORDS * 9 // 10), "broker")
                        for _ in range(BROKER_KILLS)]
                       + [(rng.randrange(N_RECORDS // 20, N_RECORDS * 9 // 10), "worker")
                          for _ in range(WORKER_KILLS)])
        done = []
        progress = None

        def why():
            return (f"seed {seed}, kills done {done}, still to do {kills}, committed {progress}, worker runs "
                    f"{worker.runs} exits {worker.exits}\n{diagnose(broker.bootstrap)}\n{worker.report()}\n"
                    f"{broker.report()}")
        deadline = time.monotonic() + CTP_DEADLINE
        while True:
            assert time.monotonic() < deadline, "no exactly-once finish in time: " + why()
            assert broker.proc.poll() is None, "broker died by itself: " + why()
            worker.ensure_running()
            progress = committed_progress(monitor, "ctp-in", CTP_PARTS)
            total = sum(progress.values()) if progress else None
            if total is not None and kills and total >= kills[0][0]:
                at, what = kills.pop(0)
                time.sleep(rng.uniform(0, 0.1))          # land anywhere inside a transaction
                if what == "broker":
                    broker.kill()
                    broker.start()
                else:
                    worker.kill()
                done.append((at, what, total))
            elif not kills and progress == in_ends:
                break
            else:
                time.sleep(0.05)  # poll interval
        worker.stop()
        assert len(done) == BROKER_KILLS + WORKER_KILLS
        assert all(code in (3, 4, 5) for code in worker.exits), why()

        out = confluent_read(broker.bootstrap, "ctp-out", range(CTP_PARTS), "read_committed", timeout=30)
        check_exactly_once(broker.bootstrap, collections.Counter(v for rows in out.values() for _, v in rows), ids,
                           "ctp-group", "ctp-in", in_ends, why)
        assert not any("Traceback" in line for lines in broker.logs for line in lines), broker.report()
    finally:
        if monitor is not None:
            monitor.close()
        if worker is not None:
            worker.stop()
        broker.stop()


# ---------------------------------------------------------------- KIP-447: OffsetFetch require_stable

def test_offset_fetch_require_stable_waits_for_the_transaction(broker):
    """Offsets sent to an open transaction are UNSTABLE_OFFSET_COMMIT to an OffsetFetch v7 with
    require_stable (a consumer must not start from them yet); without it the group's committed
    offset answers (none yet). Once the transaction commits, both answer the new offset, and a
    confluent-kafka read_committed consumer (which asks with require_stable) starts there."""
    from fastkafka.client.connection import BrokerConnection
    from fastkafka.protocol import ApiKey
    broker.topics.create("stable", 1)
    group = "stable-group"
    member = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    p = txn_producer(broker.bootstrap, "stable-txn")
    p.begin_transaction()
    p.produce("stable", value=b"x", partition=0)
    p.send_offsets_to_transaction([TopicPartition("stable", 0, 7)], member.consumer_group_metadata(), 20)

    def fetch(require_stable: bool):
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            r = conn.request(ApiKey.OFFSET_FETCH, {"group_id": group, "require_stable": require_stable,
                                                   "topics": [{"name": "stable", "partition_indexes": [0]}]},
                             version=7)
        part = r.topics[0].partitions[0]
        return r.error_code, part.error_code, part.committed_offset

    UNSTABLE = 88
    assert fetch(True) == (0, UNSTABLE, -1)
    assert fetch(False) == (0, 0, -1)
    p.commit_transaction(20)
    assert fetch(True) == fetch(False) == (0, 0, 7)
    member.close()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "isolation.level": "read_committed"})
    try:
        assert c.committed([TopicPartition("stable", 0)], timeout=10)[0].offset == 7
    finally:
        c.close()
