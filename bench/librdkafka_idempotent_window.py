"""librdkafka's idempotent producer against its plain one, with the broker's CPU per GB beside each:
shows the idempotent figure is client-bound (one Produce in flight per partition; RESULTS.md says why).

One ``fastkafka serve`` subprocess, N x 1000 B records to one partition per run (``linger.ms`` 5,
``batch.size`` 1 MB, ``queue.buffering.max.messages`` 1M so the producing loop never waits), the cases
alternating round by round.

    .venv/bin/python bench/librdkafka_idempotent_window.py [--records 200000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from support.brokers import free_port, serve_process, wait_listening  # noqa: E402
from loadgen import cpu_seconds  # noqa: E402
from scratch import scratch_dir  # noqa: E402

CASES = {"plain": {}, "idempotent": {"enable.idempotence": True}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    port = free_port()
    broker = serve_process("--log-level", "WARNING", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                           "--override", f"log.dirs={scratch_dir('bench-idem-')}")
    try:
        wait_listening(port, broker)
        bootstrap = f"127.0.0.1:{port}"
        topics = [f"t{i}" for i in range(args.rounds * len(CASES))]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
            f.result(10)

        value, gb = os.urandom(1000), args.records * 1000 / 1e9
        for r in range(args.rounds):
            for name, conf in CASES.items():
                p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                              "queue.buffering.max.kbytes": 2_000_000, "queue.buffering.max.messages": 1_000_000,
                              **conf})
                topic = topics.pop()
                c0, t0 = cpu_seconds(broker.pid), time.monotonic()
                for _ in range(args.records):
                    p.produce(topic, value)
                p.flush(120)
                took, cpu = time.monotonic() - t0, cpu_seconds(broker.pid) - c0
                print(f"round {r}: {name:<10} {gb * 1e3 / took:7.0f} MB/s, broker {cpu / gb:.2f} CPU-s/GB")
    finally:
        broker.terminate()
        broker.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
