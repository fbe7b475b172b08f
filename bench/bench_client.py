"""Client throughput against one fastkafka broker, all clients in the same run, alternating.

Producer: fastkafka.client.Producer (async; ProducerData lists of 1000 records, and one record
per send()) vs confluent-kafka (librdkafka, produce() per record) vs kafka-python, for 100-
and 1000-byte values, acks=1, linger 5 ms, batch.size 1 MB for every client. Consumer:
``SimpleConsumer.fetch_arrow`` (via the Fetcher, 8 MiB per fetch) vs confluent-kafka's
``consume(10000)`` loop, tuned (see CONFLUENT_TUNED; the reference) and with librdkafka's defaults,
reading the same topic from offset 0 (clock from the first data). Figures are records/s.

The drivers for bench/test_bench_client.py, which holds the figures (ratios against confluent-kafka):

    .venv/bin/python -m pytest bench/test_bench_client.py -p no:cacheprovider
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
warnings.simplefilter("ignore", DeprecationWarning)

from fastkafka.client import Producer, ProducerData  # noqa: E402
from fastkafka.client.fetcher import EARLIEST, Fetcher  # noqa: E402
from fastkafka.client.metadata import Cluster  # noqa: E402

COMMON = {"acks": 1, "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 2_000_000}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(data: str):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "fastkafka", "serve", "--override",
                             f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={data}"],
                            cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("broker did not start")


def ours_chunked(bootstrap, topic, n, value):
    p = Producer({"bootstrap.servers": bootstrap, "producer.type": "async", **COMMON})
    p.partitions_for(topic)
    t0 = time.perf_counter()
    chunk = [value] * 1000
    for _ in range(n // 1000):
        p.send(ProducerData(topic, None, chunk, partition=0))
    p.flush()
    dt = time.perf_counter() - t0
    p.close()
    return n / dt


def ours_single(bootstrap, topic, n, value):
    p = Producer({"bootstrap.servers": bootstrap, "producer.type": "async", **COMMON})
    p.partitions_for(topic)
    t0 = time.perf_counter()
    for _ in range(n):
        p.send(ProducerData(topic, None, value, partition=0))
    p.flush()
    dt = time.perf_counter() - t0
    p.close()
    return n / dt


def confluent(bootstrap, topic, n, value):
    from confluent_kafka import Producer as CkProducer
    p = CkProducer({"bootstrap.servers": bootstrap,
                    "log_level": 0, **COMMON})
    p.list_topics(topic, 10)
    t0 = time.perf_counter()
    produce = p.produce
    for _ in range(n):
        try:
            produce(topic, value, partition=0)
        except BufferError:
            p.poll(0.01)
            produce(topic, value, partition=0)
    assert p.flush(60) == 0
    return n / (time.perf_counter() - t0)


def kafka_python(bootstrap, topic, n, value):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5, batch_size=1_000_000,
                      enable_idempotence=False)
    p.partitions_for(topic)
    t0 = time.perf_counter()
    for _ in range(n):
        p.send(topic, value, partition=0)
    p.flush()
    dt = time.perf_counter() - t0
    p.close()
    return n / dt


def read_arrow(bootstrap, topic, n):
    cluster = Cluster({"bootstrap.servers": bootstrap, "fetch.wait.max.ms": 10})
    f = Fetcher(cluster, fetch_size=8 << 20)
    f.assign({(topic, 0): EARLIEST})
    got = first = 0
    t0 = None
    while got < n:
        for ms in f.poll():
            rows = ms.to_arrow().num_rows
            if t0 is None and rows:   # clock starts at the first data, as for confluent
                t0, first = time.perf_counter(), rows
            got += rows
    dt = time.perf_counter() - t0
    got -= first
    f.close()
    cluster.close()
    return got / dt


# librdkafka stops fetching a partition whose local queue holds >= queued.min.messages (100 000)
# and then sleeps fetch.queue.backoff.ms (1000 ms by default) before it looks again, even if the
# application drained the queue meanwhile (librdkafka#2879, PR #4275). With 100-byte records a
# fast consume() loop empties 100 000 records in ~0.1 s, so the default config spends most of
# every second idle: ~150 k records/s against any broker. "tuned" removes that client-side wait.
CONFLUENT_TUNED = {"fetch.queue.backoff.ms": 0, "queued.min.messages": 1_000_000}


def read_confluent(bootstrap, topic, n, tuned=False):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time()}",
                  "enable.auto.commit": False, "log_level": 0, **(CONFLUENT_TUNED if tuned else {})})
    c.assign([TopicPartition(topic, 0, 0)])
    got = first = 0
    t0 = None
    while got < n:
        rows = sum(1 for m in c.consume(10_000, 1.0) if m.error() is None)
        if t0 is None and rows:   # connection set-up and the first fetch are not throughput
            t0, first = time.perf_counter(), rows
        got += rows
    dt = time.perf_counter() - t0
    got -= first
    c.close()
    return got / dt


def read_confluent_tuned(bootstrap, topic, n):
    return read_confluent(bootstrap, topic, n, tuned=True)
