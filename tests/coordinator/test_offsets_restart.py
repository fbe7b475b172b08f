"""Committed offsets and group state live in __consumer_offsets: they survive a broker restart,
clean (SIGTERM) or not (SIGKILL), and the records are Kafka's layouts on disk."""
import signal
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from fastkafka.coordinator.formats import OffsetKey, decode_key, decode_offset_value, partition_for
from fastkafka.records import iter_batches

from support.brokers import free_port, serve_process, stop, wait_listening

pytestmark = [pytest.mark.crash, pytest.mark.clients, pytest.mark.timeout(120)]


def start(data, port):
    proc = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                         "--override", f"log.dirs={data}",
                         "--override", "group.initial.rebalance.delay.ms=0")
    wait_listening(port, proc)
    return proc


def committed(bootstrap, group, tps, timeout=30):
    """The group's committed offsets, retrying while the coordinator still loads."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                return {(tp.topic, tp.partition): tp.offset for tp in c.committed(tps, timeout=10)}
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)  # retry backoff
    finally:
        c.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_commits_survive_restart(tmp_path, sig):
    data, port = tmp_path / "data", free_port()
    bootstrap = f"127.0.0.1:{port}"
    proc = start(data, port)
    try:
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(30):
            p.produce("rs", value=b"x", partition=0)
        assert p.flush(20) == 0
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rg", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("rs", 0, 17, metadata="m17")], asynchronous=False)
        c.commit(offsets=[TopicPartition("rs", 0, 21, metadata="m21")], asynchronous=False)
        c.close()
        assert committed(bootstrap, "rg", [TopicPartition("rs", 0)]) == {("rs", 0): 21}
    finally:
        code, err = stop(proc, sig)
    if sig == signal.SIGTERM:
        assert code == 0, err
    # Kafka's layout on disk: key v1 (group, topic, partition), value v3; the last one wins
    part = partition_for("rg", 50)
    seg = next((data / f"__consumer_offsets-{part}").glob("*.log")).read_bytes()
    recs = [(decode_key(r.key), r.value) for b in iter_batches(seg) for r in b.records()]
    offsets = [decode_offset_value(v) for k, v in recs if k == OffsetKey("rg", "rs", 0)]
    # (confluent-kafka-python sends the C string's NUL terminator as part of the metadata)
    assert [(o.offset, o.metadata.rstrip("\x00")) for o in offsets] == [(17, "m17"), (21, "m21")]
    proc = start(data, port)
    try:
        got = committed(bootstrap, "rg", [TopicPartition("rs", 0)])
        assert got == {("rs", 0): 21}
        # a group member resumes from there
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rg", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe(["rs"])
        first = None
        deadline = time.monotonic() + 30
        while first is None and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                first = m.offset()
        c.close()
        assert first == 21
    finally:
        code, err = stop(proc)
    assert code == 0, err
