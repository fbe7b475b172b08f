"""Transactions in cluster mode, over real ZooKeeper and three real brokers, with confluent-kafka's
transactional producer and read_committed consumer.

``__transaction_state`` is created by the first transactional FindCoordinator with
transaction.state.log.replication.factor (3) replicas; a transactional id's coordinator is the
leader of its partition, and the COMMIT/ABORT markers go as WriteTxnMarkers to every partition
leader of the transaction (other brokers included). When the coordinator dies, the partition's
next leader loads the replicated states and the producer carries on with it: what it commits
is read exactly once, what it aborts never."""
import signal
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from fastkafka.coordinator import partition_for
from fastkafka.coordinator.transactions import TRANSACTION_STATE_TOPIC
from fastkafka.protocol import ApiKey

from harness import raw_call, wait_for
from test_replication import create_replicated

pytestmark = [pytest.mark.zk, pytest.mark.timeout(300)]

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


def read(bootstrap: str, isolation: str, timeout: float = 60) -> list[bytes]:
    """Every value of the topic up to each partition's end (the last stable offset under
    read_committed), partition by partition in offset order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
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
    assert eof == set(got), f"no end of {set(got) - eof} within {timeout} s"
    return [v for p in range(PARTITIONS) for v in got[p]]


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
