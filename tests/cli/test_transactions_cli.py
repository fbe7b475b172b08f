"""``fastkafka transactions``, run as ``python -m fastkafka transactions ...`` the way
kafka-transactions.sh is used, against real brokers and confluent-kafka's transactional producer.

The open transaction of a producer process that was SIGKILLed shows in ``list`` and ``describe``
as Ongoing with its partitions and in ``describe-producers`` with its first offset; since its
coordinator still has it, ``find-hanging`` leaves it out (Kafka's rule), and ``abort
--start-offset`` ends it all the same. Hanging transactions -- open in a partition while their
coordinator has none there -- are made the two ways they arise: a transactional write arriving
after its transaction was committed (KAFKA-12671), and one by a producer id no transactional id
owns. ``find-hanging`` finds them once older than ``--max-transaction-timeout``, ``abort`` ends
them, and a read_committed consumer's last stable offset then moves past them. Mistakes are one
line with exit status 1. The ``--help`` examples run as tests/cli/test_help_examples.py runs the
other tools' (its TOOLS list does not name this tool). In cluster mode ``list`` asks every broker
and each transaction is described at its own coordinator."""
import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from fastkafka.client.admin import AdminClient
from fastkafka.coordinator import partition_for
from fastkafka.coordinator.transactions import TRANSACTION_STATE_TOPIC
from fastkafka.protocol import ApiKey
from fastkafka.records import build_batch

from support.brokers import running_broker
from support.harness import Cluster, create_replicated
from support.zk import Ensemble, require_java
from test_help_examples import help_examples, run_examples


pytestmark = [pytest.mark.clients, pytest.mark.timeout(300)]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A transactional producer that stops (is SIGKILLed) in the middle of a transaction: argv is
# bootstrap, transactional id, topic, then partition=count pairs.
OPEN_AND_WAIT = """
import sys, time
from confluent_kafka import Producer
bootstrap, txn_id, topic, *spec = sys.argv[1:]
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 0,
              "transaction.timeout.ms": 600000, "log_level": 0})
p.init_transactions(30)
p.begin_transaction()
for part, count in (s.split("=") for s in spec):
    for i in range(int(count)):
        p.produce(topic, b"open-%s-%d" % (part.encode(), i), partition=int(part))
assert p.flush(30) == 0
print("open", flush=True)
time.sleep(600)  # hold the transactions open until killed
"""


def cli(bootstrap: str, *args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "fastkafka", "transactions", "-b", bootstrap, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def rows(out: str) -> list[dict[str, str]]:
    """A table as Kafka's tools print it (values padded, each followed by a tab) as dicts."""
    lines = out.splitlines()
    assert lines, "no table header"
    header = [h.strip() for h in lines[0].split("\t")[:-1]]
    return [dict(zip(header, (v.strip() for v in line.split("\t")[:-1]))) for line in lines[1:]]


def table(bootstrap: str, *args: str) -> list[dict[str, str]]:
    rc, out, err = cli(bootstrap, *args)
    assert rc == 0, err
    assert all(line.endswith("\t") for line in out.splitlines()), out
    return rows(out)


def plain_write(bootstrap: str, topic: str, partition: int, values) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0})
    for v in values:
        p.produce(topic, v, partition=partition)
    assert p.flush(20) == 0


def committed_transaction(bootstrap: str, txn_id: str, topic: str, partition: int, values) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 0, "log_level": 0})
    p.init_transactions(30)
    p.begin_transaction()
    for v in values:
        p.produce(topic, v, partition=partition)
    p.commit_transaction(30)


def open_in_killed_producer(bootstrap: str, txn_id: str, topic: str, counts: dict[int, int]) -> None:
    proc = subprocess.Popen([sys.executable, "-c", OPEN_AND_WAIT, bootstrap, txn_id, topic,
                             *(f"{p}={n}" for p, n in counts.items())], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "open"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)


def stray_write(bootstrap: str, topic: str, partition: int, value: bytes, *, producer_id=None, epoch=0,
                sequence=0, age_ms: int = 0) -> int:
    """A transactional batch at the partition's leader that no AddPartitionsToTxn announced, by
    ``producer_id`` (None: a fresh one from InitProducerId, which no transactional id owns),
    stamped ``age_ms`` in the past. Returns its offset: where the transaction now open starts."""
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        conn = admin.cluster.connection(admin.describe_topics([topic])[topic].partitions[partition].leader)
        if producer_id is None:
            r = conn.request(ApiKey.INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout_ms": 60000})
            assert r.error_code == 0, r
            producer_id, epoch = r.producer_id, r.producer_epoch
        batch = build_batch([(None, value, [], int(time.time() * 1000) - age_ms)], producer_id=producer_id,
                            producer_epoch=epoch, base_sequence=sequence, is_transactional=True)
        r = conn.request(ApiKey.PRODUCE, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
        p = r.responses[0].partition_responses[0]
        assert p.error_code == 0, r
        return p.base_offset


def read_committed(bootstrap: str, topic: str, partition: int, timeout: float = 30) -> tuple[list[bytes], int]:
    """What a read_committed consumer gets from the start of the partition, and the offset where it
    reports the end: the last stable offset."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{time.monotonic_ns()}", "log_level": 0,
                  "enable.auto.commit": False, "isolation.level": "read_committed",
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, partition, 0)])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                return got, m.offset()
            got.append(m.value())
    finally:
        c.close()
    raise AssertionError(f"no end of {topic}-{partition} within {timeout} s")


def open_producers(bootstrap: str, topic: str, partition: int) -> list[dict[str, str]]:
    return [r for r in table(bootstrap, "describe-producers", "--topic", topic, "--partition", str(partition))
            if r["CurrentTransactionStartOffset"] != "None"]


@pytest.mark.crash
def test_an_open_transaction_is_listed_described_and_can_be_aborted(broker):
    topic = "txcli-open"
    broker.topics.create(topic, 2)
    plain_write(broker.bootstrap, topic, 0, [b"before-%d" % i for i in range(4)])           # 0-3
    before = time.time() * 1000
    open_in_killed_producer(broker.bootstrap, "txcli-open-1", topic, {0: 3, 1: 2})          # 4-6, 0-1
    plain_write(broker.bootstrap, topic, 0, [b"after"])                                    # 7

    listed = [r for r in table(broker.bootstrap, "list") if r["TransactionalId"] == "txcli-open-1"]
    assert len(listed) == 1 and listed[0]["Coordinator"] == "0" and listed[0]["TransactionState"] == "Ongoing"
    pid = listed[0]["ProducerId"]
    assert [r["TransactionalId"] for r in table(broker.bootstrap, "list", "--producer-id", pid)] == ["txcli-open-1"]
    assert "txcli-open-1" in {r["TransactionalId"] for r in table(broker.bootstrap, "list", "--state", "Ongoing")}
    assert "txcli-open-1" not in {r["TransactionalId"]
                                  for r in table(broker.bootstrap, "list", "--state", "CompleteCommit")}
    assert "txcli-open-1" in {r["TransactionalId"] for r in table(broker.bootstrap, "list", "--duration-filter", "0")}
    assert "txcli-open-1" not in {r["TransactionalId"]
                                  for r in table(broker.bootstrap, "list", "--duration-filter", "3600000")}

    [d] = table(broker.bootstrap, "describe", "--transactional-id", "txcli-open-1")
    assert (d["CoordinatorId"], d["TransactionalId"], d["ProducerId"], d["ProducerEpoch"]) == (
        "0", "txcli-open-1", pid, "0")
    assert (d["TransactionState"], d["TransactionTimeoutMs"]) == ("Ongoing", "600000")
    assert d["TopicPartitions"] == f"{topic}-0,{topic}-1"
    assert before - 1000 <= int(d["CurrentTransactionStartTimeMs"]) <= time.time() * 1000
    assert 0 <= int(d["TransactionDurationMs"]) < 120_000

    [p0] = open_producers(broker.bootstrap, topic, 0)
    assert (p0["ProducerId"], p0["ProducerEpoch"], p0["CurrentTransactionStartOffset"]) == (pid, "0", "4")
    assert (p0["LastSequence"], p0["LatestCoordinatorEpoch"]) == ("2", "-1")        # no marker yet
    [p1] = open_producers(broker.bootstrap, topic, 1)
    assert (p1["ProducerId"], p1["CurrentTransactionStartOffset"]) == (pid, "0")
    [same] = [r for r in table(broker.bootstrap, "describe-producers", "--topic", topic, "--partition", "0",
                               "--broker-id", "0") if r["ProducerId"] == pid]
    assert same == p0
    # its coordinator still has both partitions to end (at its timeout): not hanging, in Kafka's sense
    assert table(broker.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0") == []

    assert read_committed(broker.bootstrap, topic, 0) == ([b"before-%d" % i for i in range(4)], 4)
    rc, out, err = cli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", "4")
    assert (rc, out) == (0, ""), err
    assert read_committed(broker.bootstrap, topic, 0) == ([b"before-%d" % i for i in range(4)] + [b"after"], 9)
    assert open_producers(broker.bootstrap, topic, 0) == []
    assert [r["CurrentTransactionStartOffset"] for r in open_producers(broker.bootstrap, topic, 1)] == ["0"]


def test_find_hanging_finds_stray_transactions_and_abort_ends_them(broker):
    topic = "txcli-hang"
    broker.topics.create(topic, 2)
    # 1. written after its transaction was committed: the coordinator has no partition left to end
    committed_transaction(broker.bootstrap, "txcli-late-1", topic, 0, [b"a0", b"a1"])         # 0-1, marker 2
    [late] = table(broker.bootstrap, "describe", "--transactional-id", "txcli-late-1")
    assert (late["TransactionState"], late["TopicPartitions"]) == ("CompleteCommit", "")
    [before] = table(broker.bootstrap, "describe-producers", "--topic", topic, "--partition", "0")
    late_at = stray_write(broker.bootstrap, topic, 0, b"late", producer_id=int(late["ProducerId"]),
                          epoch=int(late["ProducerEpoch"]), sequence=int(before["LastSequence"]) + 1)
    assert late_at == 3
    # 2. by a producer id that no transactional id owns, an hour ago
    stray_at = stray_write(broker.bootstrap, topic, 1, b"stray", age_ms=3_600_000)
    plain_write(broker.bootstrap, topic, 0, [b"c0", b"c1"])                                   # 4-5
    plain_write(broker.bootstrap, topic, 1, [b"d0"])                                          # 1
    assert read_committed(broker.bootstrap, topic, 0) == ([b"a0", b"a1"], 3)
    assert read_committed(broker.bootstrap, topic, 1) == ([], 0)

    # the default maximum transaction timeout (15 min) sees only the old one
    found = [r for r in table(broker.bootstrap, "find-hanging", "--broker-id", "0") if r["Topic"] == topic]
    assert [(r["Partition"], r["StartOffset"], r["Duration(min)"]) for r in found] == [("1", str(stray_at), "60")]
    found = table(broker.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0")
    assert [(r["Topic"], r["Partition"], r["StartOffset"]) for r in found] == [(topic, "0", "3"), (topic, "1", "0")]
    assert (found[0]["ProducerId"], found[0]["ProducerEpoch"]) == (late["ProducerId"], late["ProducerEpoch"])
    assert found[0]["CoordinatorEpoch"] == before["LatestCoordinatorEpoch"]
    assert table(broker.bootstrap, "find-hanging", "--topic", topic, "--partition", "1",
                 "--max-transaction-timeout", "0") == found[1:]

    # the one at 3 by --start-offset; the other with its producer id, epoch and coordinator epoch
    rc, out, err = cli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", "3")
    assert (rc, out) == (0, ""), err
    assert read_committed(broker.bootstrap, topic, 0) == ([b"a0", b"a1", b"c0", b"c1"], 7)
    rc, out, err = cli(broker.bootstrap, "abort", "--topic", topic, "--partition", "1", "--producer-id",
                       found[1]["ProducerId"], "--producer-epoch", found[1]["ProducerEpoch"],
                       "--coordinator-epoch", found[1]["CoordinatorEpoch"])
    assert (rc, out) == (0, ""), err
    assert read_committed(broker.bootstrap, topic, 1) == ([b"d0"], 3)
    assert table(broker.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0") == []
    assert open_producers(broker.bootstrap, topic, 0) == open_producers(broker.bootstrap, topic, 1) == []


@pytest.fixture(scope="module")
def mistakes_topic(broker):
    broker.topics.create("txcli-mistakes", 1)
    plain_write(broker.bootstrap, "txcli-mistakes", 0, [b"x"])


@pytest.mark.parametrize("args, message", [
    (["describe", "--transactional-id", "txcli-nobody"],
     "Failed to describe transaction state of transactional-id `txcli-nobody`: "),
    (["describe-producers", "--topic", "txcli-missing", "--partition", "0"],
     "Failed to describe producers for partition txcli-missing-0 on leader: "),
    (["abort", "--topic", "txcli-mistakes", "--partition", "0"],
     "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or "
     "with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"),
    (["abort", "--topic", "txcli-mistakes", "--partition", "0", "--producer-id", "5", "--producer-epoch", "0"],
     "Missing required argument --coordinator-epoch"),
    (["abort", "--topic", "txcli-mistakes", "--partition", "0", "--start-offset", "0"],
     "Could not find any open transactions starting at offset 0 on partition txcli-mistakes-0"),
    (["find-hanging"],
     "The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search"),
    (["find-hanging", "--broker-id", "0", "--partition", "0"],
     "The --partition argument requires --topic to be provided"),
])
def test_mistakes_are_one_line_with_status_1(broker, mistakes_topic, args, message):
    rc, out, err = cli(broker.bootstrap, *args)
    assert (rc, out) == (1, "")
    assert err.startswith(f"fastkafka transactions: error: {message}") and err.count("\n") == 1, err
    if args[0] == "describe":
        assert err.rstrip().endswith("(TRANSACTIONAL_ID_NOT_FOUND)"), err


def test_the_help_examples_run(tmp_path_factory, tmp_path):
    """The examples, in order, as test_help_examples.py runs the other tools' (bash, ``fastkafka``
    pointing at this tree, ``-b`` the broker), on a broker with a topic orders holding a committed
    transaction and a hanging one: the last example must have aborted that one."""
    examples = help_examples("transactions")
    assert len(examples) >= 5 and all(" transactions " in e for e in examples), examples
    with running_broker(tmp_path_factory.mktemp("examples")) as b:
        b.topics.create("orders", 2)
        committed_transaction(b.bootstrap, "billing-1", "orders", 0, [b"paid"])
        at = stray_write(b.bootstrap, "orders", 1, b"stray", age_ms=3_600_000)
        assert read_committed(b.bootstrap, "orders", 1) == ([], at)
        failures = run_examples(examples, lambda ex: b.bootstrap, tmp_path)
        assert not failures, "\n".join(failures)
        assert table(b.bootstrap, "find-hanging", "--topic", "orders") == []
        assert read_committed(b.bootstrap, "orders", 1) == ([], at + 2)      # past the stray write and its marker


CLUSTER_TOPIC = "txcli-cluster"


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory):
    """Brokers 1-3 with a topic of three partitions on three replicas each and, in it, an open
    transaction for each ``__transaction_state`` partition (the harness has six), so that their
    coordinators differ: ``(cluster, {transactional id: (producer, partition written)})``."""
    require_java()
    with Ensemble(tmp_path_factory.mktemp("zk"), size=1) as zk, \
            Cluster(tmp_path_factory.mktemp("brokers"), f"{zk.connect}/txcli", 3) as cluster:
        create_replicated(cluster, CLUSTER_TOPIC, 3, rf=3)
        ids: dict[int, str] = {}
        for i in range(1000):
            ids.setdefault(partition_for(f"txcli-c{i}", 6), f"txcli-c{i}")
        txns = {}
        for n, tid in enumerate(sorted(ids.values())):
            p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, "linger.ms": 0,
                          "log_level": 0})
            p.init_transactions(60)
            p.begin_transaction()
            p.produce(CLUSTER_TOPIC, b"open", partition=n % 3)
            assert p.flush(30) == 0
            txns[tid] = (p, n % 3)
        yield cluster, txns


def leader_and_followers(cluster, partition: int) -> tuple[int, list[int]]:
    leader = cluster.state(CLUSTER_TOPIC, partition).leader
    return leader, [b for b in (1, 2, 3) if b != leader]


@pytest.mark.zk
def test_in_cluster_mode_each_transaction_is_found_at_its_coordinator(txn_cluster):
    """``list`` asks every broker: each transaction is listed with the leader of its
    ``__transaction_state`` partition as its coordinator, and described there; producers are
    described at a partition's leader; ``find-hanging`` and ``abort`` go to the leaders, and the
    abort marker is replicated (read_committed gets past it)."""
    cluster, txns = txn_cluster
    coordinators = {tid: cluster.state(TRANSACTION_STATE_TOPIC, partition_for(tid, 6)).leader for tid in txns}
    assert len(set(coordinators.values())) > 1, coordinators

    listed = {r["TransactionalId"]: r for r in table(cluster.bootstrap, "list")}
    assert {tid: listed[tid]["Coordinator"] for tid in txns} == {t: str(c) for t, c in coordinators.items()}
    assert all(listed[tid]["TransactionState"] == "Ongoing" for tid in txns)
    for tid, (_, partition) in txns.items():
        [d] = table(cluster.bootstrap, "describe", "--transactional-id", tid)
        assert (d["CoordinatorId"], d["TransactionState"], d["TopicPartitions"]) == (
            str(coordinators[tid]), "Ongoing", f"{CLUSTER_TOPIC}-{partition}")

    leader, _ = leader_and_followers(cluster, 0)
    at_leader = table(cluster.bootstrap, "describe-producers", "--topic", CLUSTER_TOPIC, "--partition", "0")
    assert {r["ProducerId"] for r in at_leader} == {listed[tid]["ProducerId"] for tid, (_, p) in txns.items()
                                                    if p == 0}
    assert table(cluster.bootstrap, "describe-producers", "--topic", CLUSTER_TOPIC, "--partition", "0",
                 "--broker-id", str(leader)) == at_leader

    at = stray_write(cluster.bootstrap, CLUSTER_TOPIC, 0, b"stray", age_ms=3_600_000)
    found = table(cluster.bootstrap, "find-hanging", "--topic", CLUSTER_TOPIC)
    assert [(r["Topic"], r["Partition"], r["StartOffset"]) for r in found] == [(CLUSTER_TOPIC, "0", str(at))]
    rc, out, err = cli(cluster.bootstrap, "abort", "--topic", CLUSTER_TOPIC, "--partition", "0", "--start-offset",
                       str(at))
    assert (rc, out) == (0, ""), err
    assert table(cluster.bootstrap, "find-hanging", "--topic", CLUSTER_TOPIC, "--max-transaction-timeout", "0") == []
    for p, _ in txns.values():
        p.abort_transaction(30)
    assert read_committed(cluster.bootstrap, CLUSTER_TOPIC, 0)[1] > at


@pytest.mark.zk
def test_in_cluster_mode_a_follower_describes_its_producers(txn_cluster):
    """kafka-transactions.sh's --broker-id asks that replica, leader or follower: find-hanging
    --broker-id looks at every partition the broker holds a replica of."""
    cluster, _ = txn_cluster
    _, followers = leader_and_followers(cluster, 1)
    at_leader = table(cluster.bootstrap, "describe-producers", "--topic", CLUSTER_TOPIC, "--partition", "1")
    assert table(cluster.bootstrap, "describe-producers", "--topic", CLUSTER_TOPIC, "--partition", "1",
                 "--broker-id", str(followers[0])) == at_leader
    at = stray_write(cluster.bootstrap, CLUSTER_TOPIC, 1, b"stray", age_ms=3_600_000)
    found = table(cluster.bootstrap, "find-hanging", "--broker-id", str(followers[1]))
    assert [(r["Topic"], r["Partition"], r["StartOffset"]) for r in found] == [(CLUSTER_TOPIC, "1", str(at))]
