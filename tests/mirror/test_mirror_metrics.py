"""``fastkafka mirror --metrics-port``: MirrorMaker 2's metrics (and ours) scraped over HTTP from a
mirror copying records of a known size: the counters move by exactly the records and bytes
copied, the lag falls to 0, offset syncs, checkpoints and synced group offsets are counted;
with --exactly-once the transactions. And the error when prometheus_client is missing."""
from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fastkafka.client import AdminClient, Producer, ProducerData

from support.brokers import free_port
from mirror_support import wait_for

pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]

N = 50                      # records per partition: offset deltas stay one-byte varints
VALUE = b"v" * 100
KEY = b"key-0001"
HEADERS = [("h", b"abcd")]
SRC = "kafka_connect_mirror_mirrorsourceconnector_"


def _varint_size(n: int) -> int:
    z = (n << 1) ^ (n >> 63)        # zigzag, as Kafka's record fields
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def record_size(offset_delta: int) -> int:
    """A v2 record's bytes (Kafka's record layout; all records share the batch's timestamp)."""
    body = (1 + _varint_size(0) + _varint_size(offset_delta) + _varint_size(len(KEY)) + len(KEY)
            + _varint_size(len(VALUE)) + len(VALUE) + _varint_size(len(HEADERS)))
    for k, v in HEADERS:
        body += _varint_size(len(k)) + len(k) + _varint_size(len(v)) + len(v)
    return _varint_size(body) + body


def scrape(port: int) -> dict:
    """``{(sample name, ((label, value), ...)): value}`` of one scrape."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def tp(p: int, topic: str = "metered") -> tuple:
    return (("partition", str(p)), ("topic", topic))


def mm2(p: int, source: str) -> tuple:
    """MM2's tags of a partition's metrics: the aliases (MM2's default target alias) and topic."""
    return (("partition", str(p)), ("source", source), ("target", "target"), ("topic", "metered"))


def fill(broker, partitions: int, ts: int) -> None:
    broker.topics.create("metered", partitions)
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        for part in range(partitions):
            p.send(ProducerData("metered", KEY, [VALUE] * N, partition=part, headers=HEADERS, timestamp=ts))


def test_metrics_count_exact_records_bytes_and_lag(clusters, mirror):
    a, b = clusters
    written = int(time.time() * 1000) - 60_000          # a minute old when mirrored
    fill(a, 2, written)
    with AdminClient({"bootstrap.servers": a.bootstrap}) as admin:     # billing read 20 of partition 0
        admin.commit_offsets("billing", {("metered", 0): 20})
    port = free_port()
    m = mirror(a, b, "--topics", "metered", "--source-alias", "dc1", "--metrics-port", str(port),
               "--metrics-host", "127.0.0.1", "--emit-checkpoints-interval", "0.3", "--sync-group-offsets",
               "--sync-group-offsets-interval", "0.3", "--offset-lag-max", "10")
    seen: dict = {}

    def caught_up():
        try:
            seen.update(scrape(port))
        except OSError:          # not listening yet
            return False
        return all(seen.get((SRC + "record_count_total", mm2(p, "dc1"))) == N for p in (0, 1)) and \
            all(seen.get(("fastkafka_mirror_lag", tp(p))) == 0 for p in (0, 1)) and \
            seen.get(("fastkafka_mirror_checkpoints_total", ())) and \
            seen.get(("fastkafka_mirror_group_offsets_synced_total", ()))
    wait_for(caught_up, 60, "the mirror's metrics to show everything copied", lambda: f"{seen}\n{m.output()}")
    time.sleep(1)                       # nothing moves further once copied: no double counting
    got = scrape(port)
    per_partition = sum(record_size(i) for i in range(N))
    for p in (0, 1):
        assert got[SRC + "record_count_total", mm2(p, "dc1")] == N
        assert got[SRC + "byte_count_total", mm2(p, "dc1")] == per_partition
        assert got["fastkafka_mirror_lag", tp(p)] == 0
        # every record timed once; a minute old (plus this machine's delays), never less
        for name in ("record_age_seconds", "replication_latency_seconds"):
            assert got[SRC + name + "_count", mm2(p, "dc1")] == N
            age = got[SRC + name + "_sum", mm2(p, "dc1")]
            assert 60 <= age / N < 90, (name, age)
            assert got[SRC + name + "_bucket", (("le", "30.0"),) + mm2(p, "dc1")] == 0
    assert got["fastkafka_mirror_offset_syncs_total", ()] >= 2          # at least one per partition
    checkpoints = got["fastkafka_mirror_checkpoints_total", ()]
    assert checkpoints >= 1
    assert got["kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_seconds_count",
               (("source", "dc1"), ("target", "target"))] == checkpoints
    assert got["fastkafka_mirror_group_offsets_synced_total", ()] >= 1
    assert got["fastkafka_mirror_transactions_total", ()] == 0        # at-least-once
    with AdminClient({"bootstrap.servers": b.bootstrap}) as admin:      # what the synced counter says happened
        assert admin.committed_offsets("billing")[("metered", 0)] > 0
    assert m.stop() == 0, m.output()


def test_exactly_once_counts_transactions(clusters, mirror):
    a, b = clusters
    fill(a, 1, int(time.time() * 1000))
    port = free_port()
    m = mirror(a, b, "--topics", "metered", "--exactly-once", "--metrics-port", str(port),
               "--metrics-host", "127.0.0.1", "--emit-checkpoints-interval", "0",
               "--source-alias", "dc1", "--target-alias", "dc2", "--prefix-topics")
    # MM2's tags: both aliases, and the topic as the target names it
    labels = (("partition", "0"), ("source", "dc1"), ("target", "dc2"), ("topic", "dc1.metered"))
    seen: dict = {}

    def caught_up():
        try:
            seen.update(scrape(port))
        except OSError:
            return False
        return seen.get((SRC + "record_count_total", labels)) == N and \
            seen.get(("fastkafka_mirror_transactions_total", ()), 0) >= 1
    wait_for(caught_up, 60, "the records and a transaction counted", lambda: f"{seen}\n{m.output()}")
    got = scrape(port)
    assert got[SRC + "byte_count_total", labels] == sum(record_size(i) for i in range(N))
    assert m.stop() == 0, m.output()


def test_metrics_without_prometheus_client_names_the_extra():
    code = ("import sys; sys.modules['prometheus_client'] = None; sys.modules['prometheus_client.core'] = None\n"
            "from fastkafka.cli.mirror import main\n"
            "sys.exit(main(['--source', '127.0.0.1:1', '--target', '127.0.0.1:2', '--metrics-port', '0']))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out
    assert "fastkafka mirror: error: --metrics-port is set but prometheus_client is not installed: " \
           "pip install 'fastkafka[metrics]'" in out.stderr, out.stderr
