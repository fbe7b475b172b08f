"""A consume-transform-produce worker, run as a subprocess by test_transactions.py.

Reads INPUT as a member of GROUP (read_committed, no auto-commit), writes ``b"out:" + value`` to
OUTPUT and commits the consumed input offsets in the same transaction (send_offsets_to_transaction),
at most BATCH records per transaction. Crash-only: an error the client says is retriable is retried;
one that needs an abort is aborted and the process exits 4; a transaction that hangs exits 5;
anything else exits 3 -- the test then starts a new worker with the same transactional.id, whose init_transactions fences this one. SIGTERM
makes it stop between transactions and exit 0.

    python txn_worker.py confluent 127.0.0.1:9092 in out group txn-id --batch 50 --pause-ms 20
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

stopping = False


def _stop(*_):
    global stopping
    stopping = True


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


class Watchdog:
    """Exit 5 when one transaction takes longer than ``seconds``: kafka-python 3.0.12's blocking
    transactional calls have no timeout, and its transaction manager can drop an
    AddOffsetsToTxn that found the coordinator down (send_offsets_to_transaction then waits
    forever). A new worker's init_transactions fences and aborts whatever this one left open."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.deadline = None
        threading.Thread(target=self._watch, daemon=True).start()

    def arm(self):
        self.deadline = time.monotonic() + self.seconds

    def disarm(self):
        self.deadline = None

    def _watch(self):
        while True:
            time.sleep(0.2)  # the watchdog's check interval
            d = self.deadline
            if d is not None and time.monotonic() > d:
                log(f"a transaction took over {self.seconds}s: exiting")
                os._exit(5)


def run_confluent(a) -> int:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    # metadata.recovery.strategy=none: librdkafka 2.16's re-bootstrap (started when every broker is
    # down, which a one-broker restart always is) decommissions the broker handle a pending
    # TxnOffsetCommit waits on, and send_offsets_to_transaction then hangs until its timeout
    common = {"bootstrap.servers": a.bootstrap, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 300,
              "metadata.recovery.strategy": "none"}
    if os.environ.get("TXN_WORKER_DEBUG"):      # librdkafka debug contexts, e.g. "eos,cgrp"
        common["debug"] = os.environ["TXN_WORKER_DEBUG"]
    c = Consumer({**common, "group.id": a.group, "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 2000,
                  "heartbeat.interval.ms": 300, "fetch.wait.max.ms": 100})
    p = Producer({**common, "transactional.id": a.txn_id, "transaction.timeout.ms": 10_000, "linger.ms": 5})

    def txn_call(fn, *args):
        """librdkafka's documented pattern: retry what is retriable, abort what needs it."""
        deadline = time.monotonic() + 30
        while True:
            try:
                return fn(*args)
            except KafkaException as e:
                err = e.args[0]
                log("txn error", fn.__name__, err, "retriable" if err.retriable() else "",
                    "abortable" if err.txn_requires_abort() else "", "fatal" if err.fatal() else "")
                if err.retriable() and time.monotonic() < deadline:
                    continue
                if err.txn_requires_abort():
                    p.abort_transaction(30)
                    log("aborted; exiting to start again from the committed offsets")
                    os._exit(4)
                raise

    watchdog = Watchdog(a.txn_watchdog_s)
    txn_call(p.init_transactions, 30)
    log("initialised")
    c.subscribe([a.input])
    while not stopping:
        msgs = c.consume(a.batch, 0.5)
        records = []
        for m in msgs:
            if m.error() is None:
                records.append(m)
            elif m.error().fatal():
                raise KafkaException(m.error())
            else:
                log("consumer:", m.error())
        if not records:
            continue
        watchdog.arm()
        txn_call(p.begin_transaction)
        offsets = {}
        for m in records:
            p.produce(a.output, key=m.key(), value=b"out:" + m.value())
            offsets[m.partition()] = m.offset() + 1
        p.poll(0)
        if a.pause_ms:
            time.sleep(a.pause_ms / 1000)   # widen the window in which the transaction is open
        txn_call(p.send_offsets_to_transaction,
                 [TopicPartition(a.input, part, off) for part, off in sorted(offsets.items())],
                 c.consumer_group_metadata(), 30)
        txn_call(p.commit_transaction, 30)
        watchdog.disarm()
        log("committed", sorted(offsets.items()))
    c.close()
    p.flush(10)
    return 0


def run_kafka_python(a) -> int:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata
    if os.environ.get("TXN_WORKER_DEBUG"):
        import logging
        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(threadName)s %(name)s %(message)s")
    c = KafkaConsumer(a.input, bootstrap_servers=a.bootstrap, group_id=a.group,
                      isolation_level="read_committed", enable_auto_commit=False,
                      auto_offset_reset="earliest", session_timeout_ms=2000, heartbeat_interval_ms=300,
                      fetch_max_wait_ms=100, max_poll_records=a.batch, reconnect_backoff_max_ms=300)
    p = KafkaProducer(bootstrap_servers=a.bootstrap, transactional_id=a.txn_id, transaction_timeout_ms=10_000,
                      linger_ms=5, max_block_ms=30_000, reconnect_backoff_max_ms=300)
    watchdog = Watchdog(a.txn_watchdog_s)
    p.init_transactions()
    log("initialised")
    while not stopping:
        polled = c.poll(timeout_ms=500, max_records=a.batch)
        if not polled:
            continue
        watchdog.arm()
        p.begin_transaction()
        try:
            offsets = {}
            for tp, recs in polled.items():
                for m in recs:
                    p.send(a.output, key=m.key, value=b"out:" + m.value)
                offsets[tp] = OffsetAndMetadata(recs[-1].offset + 1, "", -1)
            if a.pause_ms:
                time.sleep(a.pause_ms / 1000)  # widen the window in which the transaction is open
            p.send_offsets_to_transaction(offsets, c.group_metadata())
            p.commit_transaction()
        except Exception as e:
            log("txn error", type(e).__name__, e)
            try:
                p.abort_transaction()
                log("aborted")
            except Exception as e2:
                log("abort failed", type(e2).__name__, e2)
            os._exit(4)
        watchdog.disarm()
        log("committed", sorted((tp.partition, o.offset) for tp, o in offsets.items()))
    c.close()
    p.close(timeout=10)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("client", choices=["confluent", "kafka-python"])
    ap.add_argument("bootstrap")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("group")
    ap.add_argument("txn_id")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--pause-ms", type=int, default=0)
    ap.add_argument("--txn-watchdog-s", type=float, default=10.0)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, _stop)
    try:
        return run_confluent(a) if a.client == "confluent" else run_kafka_python(a)
    except Exception as e:   # crash-only: the test restarts us
        log("exiting on", type(e).__name__, e)
        os._exit(3)


if __name__ == "__main__":
    sys.exit(main())
