"""Transactions' cost (issue 15's benchmarks), each figure against its limit in the same run.

* Transactional produce: confluent-kafka with ``transactional.id``, 1,000 records of 1 KB per
  transaction (begin, produce, commit), against the same client idempotent (enable.idempotence,
  acks=all) producing the same records. Target >= 0.7x.
* read_committed fetch: a confluent-kafka consumer with ``isolation.level=read_committed`` reading
  a topic where 10% of the transactions were aborted, against ``read_uncommitted`` reading the same
  topic (it returns more records: the figure is bytes of the log per second). Target >= 0.9x.

* ``--small``: committed transactions per second of one confluent-kafka transactional producer
  whose transactions are small (``SMALL`` records of 100 B over 1 or 10 partitions: begin,
  produce, commit), against the same client idempotent sending the same batches one at a time
  (produce, flush): what the coordinator's round trips (AddPartitionsToTxn, EndTxn, the markers)
  cost per batch.

One ``fastkafka serve`` process on this machine, or with ``--cluster`` three of them over a real
ZooKeeper (topics with 3 replicas, ``__transaction_state`` too: the coordinator's states and the
markers wait for replication, the markers go to the leader as WriteTxnMarkers); the compared
things alternate within each round.

    python bench/bench_transactions.py [--rounds 3] [--mb 64] [--cluster] [--small [--seconds 5]]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from support.brokers import free_port, serve_process, wait_listening  # noqa: E402
from scratch import scratch_dir  # noqa: E402

VALUE = 1000
PER_TXN = 1000
SMALL = 10


REPLICAS = 1            # 3 with --cluster


def create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, REPLICAS)], operation_timeout=15).values():
        f.result()


@contextlib.contextmanager
def embedded(data: str):
    port = free_port()
    proc = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                         "--override", f"log.dirs={data}", "--log-level", "WARNING")
    try:
        wait_listening(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)


@contextlib.contextmanager
def cluster(data: str):
    from support.harness import Cluster   # noqa: PLC0415 (tests/support: real ZooKeeper and brokers)
    from support.zk import Ensemble        # noqa: PLC0415
    with Ensemble(os.path.join(data, "zk")) as zk, Cluster(data, zk.connect, 3) as c:
        yield c.bootstrap


def _produce_all(p: Producer, topic: str, n: int, value: bytes) -> None:
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value, partition=0)
                break
            except BufferError:      # a full queue: serve callbacks, wait briefly (not 10 ms)
                p.poll(0.0005)
    p.poll(0)


def idempotent(bootstrap: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    value = b"x" * VALUE
    start = time.perf_counter()
    for _ in range(0, n, PER_TXN):
        _produce_all(p, topic, PER_TXN, value)
    assert p.flush(300) == 0
    return time.perf_counter() - start


def transactional(bootstrap: str, topic: str, n: int, abort_every: int = 0) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4()}",
                  "linger.ms": 5})
    p.init_transactions(30)
    value = b"x" * VALUE
    start = time.perf_counter()
    for i in range(n // PER_TXN):
        p.begin_transaction()
        _produce_all(p, topic, PER_TXN, value)
        if abort_every and i % abort_every == abort_every - 1:
            assert p.flush(60) == 0     # librdkafka's abort purges what it has not sent yet
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
    return time.perf_counter() - start


def consume(bootstrap: str, topic: str, isolation: str, end: int) -> tuple[float, int]:
    """Seconds to read partition 0 to ``end`` (the log end, markers included), records seen."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 10 << 20})
    c.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    start = time.perf_counter()
    while True:
        msgs = c.consume(10000, 1.0)
        seen += sum(1 for m in msgs if m.error() is None)
        pos = c.position([TopicPartition(topic, 0)])[0].offset
        if pos >= end:
            break
    took = time.perf_counter() - start
    c.close()
    return took, seen


def small_batches(bootstrap: str, topic: str, partitions: int, seconds: float, transactional: bool) -> float:
    """Batches per second: SMALL records of 100 B over ``partitions``, each batch committed as a
    transaction (``transactional``) or produced idempotently and flushed."""
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True}
    if transactional:
        conf["transactional.id"] = f"bench-{uuid.uuid4()}"
    p = Producer(conf)
    if transactional:
        p.init_transactions(30)
    value = b"x" * 100

    def one() -> None:
        if transactional:
            p.begin_transaction()
        for i in range(SMALL):
            p.produce(topic, value, partition=i % partitions)
        if transactional:
            p.commit_transaction(30)
        else:
            assert p.flush(30) == 0
    one()                          # the leaders known (and the coordinator found)
    done = 0
    start = time.perf_counter()
    while (took := time.perf_counter() - start) < seconds:
        one()
        done += 1
    return done / took


def compare_small(bootstrap: str, rounds: int, seconds: float) -> None:
    for n in (1, 10):
        create(bootstrap, f"small-{n}", n)
    print(f"batches of {SMALL} records of 100 B, {REPLICAS} replica(s), {seconds} s each")
    for r in range(rounds):
        for n in (1, 10):
            kinds = [False, True] if r % 2 == 0 else [True, False]
            rate = {k: small_batches(bootstrap, f"small-{n}", n, seconds, k) for k in kinds}
            print(f"round {r}: {n:2d} partition(s): idempotent {rate[False]:7.1f} batches/s  "
                  f"transactional {rate[True]:7.1f} txn/s  ratio {rate[True] / rate[False]:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--cluster", action="store_true", help="three brokers, topics with 3 replicas")
    ap.add_argument("--small", action="store_true", help="small transactions per second")
    ap.add_argument("--seconds", type=float, default=5.0, help="--small: seconds per figure")
    args = ap.parse_args()
    global REPLICAS
    REPLICAS = 3 if args.cluster else 1
    n = args.mb * (1 << 20) // VALUE // PER_TXN * PER_TXN
    data = scratch_dir("bench-txn-")
    with (cluster if args.cluster else embedded)(data) as bootstrap:
        if args.small:
            compare_small(bootstrap, args.rounds, args.seconds)
            return
        print(f"{n} records of {VALUE} B, {PER_TXN} per transaction, {REPLICAS} replica(s)")
        for r in range(args.rounds):
            t_idem, t_txn = f"idem-{r}", f"txn-{r}"
            create(bootstrap, t_idem)
            create(bootstrap, t_txn)
            if r % 2:          # alternate which goes first (the page cache warms for the second)
                b = transactional(bootstrap, t_txn, n)
                a = idempotent(bootstrap, t_idem, n)
            else:
                a = idempotent(bootstrap, t_idem, n)
                b = transactional(bootstrap, t_txn, n)
            mib = n * VALUE / (1 << 20)
            print(f"round {r}: produce idempotent {mib / a:7.1f} MiB/s  transactional "
                  f"{mib / b:7.1f} MiB/s  ratio {a / b:.2f}x")
            t_mix = f"mixed-{r}"
            create(bootstrap, t_mix)
            transactional(bootstrap, t_mix, n, abort_every=10)
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-end"})
            end = c.get_watermark_offsets(TopicPartition(t_mix, 0), 10)[1]
            c.close()
            if r % 2:
                rc, n_rc = consume(bootstrap, t_mix, "read_committed", end)
                ru, n_ru = consume(bootstrap, t_mix, "read_uncommitted", end)
            else:
                ru, n_ru = consume(bootstrap, t_mix, "read_uncommitted", end)
                rc, n_rc = consume(bootstrap, t_mix, "read_committed", end)
            assert n_rc == n - n // PER_TXN // 10 * PER_TXN and n_ru == n, (n_rc, n_ru)
            print(f"round {r}: fetch read_uncommitted {mib / ru:7.1f} MiB/s  read_committed "
                  f"{mib / rc:7.1f} MiB/s of log  ratio {ru / rc:.2f}x")


if __name__ == "__main__":
    main()
