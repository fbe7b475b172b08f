"""A broker whose log dir fills up, as a confluent-kafka client sees it: produce is answered with
KAFKA_STORAGE_ERROR, the broker stays up, and once there is room again the same producer goes on;
a consumer then reads exactly what was acknowledged, before and after the broker restarts."""
import os
import time

import pytest

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from support.brokers import free_port, serve_process, stop, wait_listening
from support.disks import fill, small_tmpfs

pytestmark = [pytest.mark.clients, pytest.mark.timeout(180)]


def start(fs, port):
    proc = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                         "--override", f"log.dirs={fs}/data", "--log-level", "WARNING")
    wait_listening(port, proc)
    return proc


def consume_all(bootstrap, n, timeout=30):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition("t", 0, 0)])
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            out.append(m.value())
    extra = c.poll(1.0)      # nothing past what was acknowledged
    c.close()
    assert extra is None, extra.value()
    return out


def test_a_full_log_dir_is_kafka_storage_error_and_the_broker_goes_on(tmp_path):
    with small_tmpfs(tmp_path / "fs", "8m") as fs:
        port = free_port()
        bootstrap = f"127.0.0.1:{port}"
        proc = start(fs, port)
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})   # alive until the future resolves
            admin.create_topics([NewTopic("t", 1, 1)])["t"].result(10)
            p = Producer({"bootstrap.servers": bootstrap, "retries": 0, "linger.ms": 0,
                          "enable.idempotence": False})
            results = []

            def produce(value):
                p.produce("t", value, on_delivery=lambda err, msg: results.append((value, err)))
                assert p.flush(15) == 0

            produce(b"before")
            fill(fs / "fill")
            for i in range(60):     # a request each: 1 KiB records find the log's pages full
                produce(b"%04d" % i + b"x" * 1000)
            refused = [err for _, err in results if err is not None]
            assert refused and {e.code() for e in refused} == {KafkaError.KAFKA_STORAGE_ERROR}, refused
            assert proc.poll() is None, "the broker died on a full disk"

            os.unlink(fs / "fill")
            produce(b"after")
            assert results[-1][1] is None, results[-1][1]
            acked = [v for v, err in results if err is None]
            assert consume_all(bootstrap, len(acked)) == acked

            code, err = stop(proc)
            assert code == 0, err
            proc = start(fs, port)
            assert consume_all(bootstrap, len(acked)) == acked
        finally:
            stop(proc)
