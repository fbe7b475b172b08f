"""Where a small transaction's time goes, per request, as librdkafka sees it (issue 15).

One confluent-kafka transactional producer runs ``--txns`` transactions of 10 records of 100 B
over ``--partitions`` partitions (begin, produce, commit) against one ``fastkafka serve`` (or
three over ZooKeeper with ``--cluster``) with ``debug=eos,protocol``; it prints the median
milliseconds per transaction and, per request type, how many were sent per transaction and
the median round trip librdkafka measured (``rtt`` in its "Received ...Response" lines: the
broker's time plus the loopback). What is left of a transaction's time is the client's own:
librdkafka sends AddPartitionsToTxn from a 1 ms timer after a transaction's first record,
and retries it 20 ms later on CONCURRENT_TRANSACTIONS (counted as ``concurrent``).

    python bench/txn_steps.py [--cluster] [--partitions 1] [--txns 200]
"""
from __future__ import annotations

import argparse
import logging
import re
import statistics
import tempfile
import time
import uuid
from collections import defaultdict

import bench_transactions as bt
from confluent_kafka import Producer

RTT = re.compile(r"Received (\w+)Response \(.*rtt ([\d.]+)ms\)")


class Rtts(logging.Handler):
    """Collects librdkafka's round trips per response type (the log lines carry them)."""

    def __init__(self):
        super().__init__()
        self.rtts, self.concurrent = defaultdict(list), 0

    def emit(self, record):
        msg = record.getMessage()
        m = RTT.search(msg)
        if m:
            self.rtts[m.group(1)].append(float(m.group(2)))
        elif "CONCURRENT_TRANSACTIONS" in msg:
            self.concurrent += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--txns", type=int, default=200)
    args = ap.parse_args()
    bt.REPLICAS = 3 if args.cluster else 1
    with (bt.cluster if args.cluster else bt.embedded)(tempfile.mkdtemp(prefix="txn-steps-")) as bootstrap:
        bt.create(bootstrap, "steps", args.partitions)
        rtts = Rtts()
        logger = logging.getLogger("txn-steps")
        logger.addHandler(rtts)
        logger.setLevel(logging.DEBUG)
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"steps-{uuid.uuid4()}",
                      "debug": "eos,protocol", "logger": logger})
        p.init_transactions(30)
        took = []
        for i in range(args.txns + 1):
            if i == 1:                     # the first found the coordinator and the leaders
                rtts.rtts.clear()
                rtts.concurrent = 0
            start = time.perf_counter()
            p.begin_transaction()
            for j in range(10):
                p.produce("steps", b"x" * 100, partition=j % args.partitions)
            p.commit_transaction(30)
            took.append(time.perf_counter() - start)
        p.poll(0)
    n = args.txns
    print(f"{n} transactions, {args.partitions} partition(s), {bt.REPLICAS} replica(s): "
          f"median {statistics.median(took[1:]) * 1000:.2f} ms per transaction, "
          f"{rtts.concurrent / n:.2f} CONCURRENT_TRANSACTIONS per transaction")
    for api in ("AddPartitionsToTxn", "Produce", "EndTxn"):
        got = rtts.rtts.get(api, [])
        if got:
            print(f"  {api:20s} {len(got) / n:5.2f} per txn, median rtt {statistics.median(got):.2f} ms")


if __name__ == "__main__":
    main()
