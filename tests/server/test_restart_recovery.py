"""Start-up after an unclean stop: the port opens only once the logs are recovered (as Kafka's
listeners), so a client connecting meanwhile is refused, and the first answers it gets carry
the recovered log end offsets, never an empty or stale log.
"""
import os
import signal
import socket
import threading
import time

import pytest

from fastkafka import records
from fastkafka.config import KafkaConfig
from fastkafka.log.checkpoints import CLEAN_SHUTDOWN_FILE
from fastkafka.log.manager import LogManager
from fastkafka.protocol import ApiKey
from fastkafka.server.broker import Broker

from support.brokers import free_port, serve_process, stop, wait_listening
from support.raw_client import RawClient

pytestmark = pytest.mark.timeout(180)

TOPIC = "recovering"


def fill(port: int, partitions: int) -> dict[int, int]:
    """The topic, partition p holding p % 4 records (some empty); its end offsets."""
    c = RawClient(port)
    resp = c.call(ApiKey.CREATE_TOPICS, 4, {"topics": [{"name": TOPIC, "num_partitions": partitions,
                                                        "replication_factor": 1, "assignments": [], "configs": []}],
                                            "timeout_ms": 30000, "validate_only": False})
    assert resp.topics[0].error_code == 0
    data = [{"index": p, "records": records.build_batch([(None, b"%d" % i, [], 1_600_000_000_000 + i)
                                                          for i in range(p % 4)])}
            for p in range(partitions) if p % 4]
    resp = c.call(ApiKey.PRODUCE, 7, {"acks": 1, "timeout_ms": 30000,
                                      "topic_data": [{"name": TOPIC, "partition_data": data}]})
    assert all(p.error_code == 0 for p in resp.responses[0].partition_responses)
    c.sock.close()
    return {p: p % 4 for p in range(partitions)}


def end_offsets(c: RawClient, partitions: int) -> dict[int, int | None]:
    resp = c.call(ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                                       for p in range(partitions)]}]})
    return {p.partition_index: p.offset if p.error_code == 0 else None for p in resp.topics[0].partitions}


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True


def test_port_stays_closed_while_the_logs_recover(tmp_path, monkeypatch):
    port = free_port()
    props = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(tmp_path / "data")}
    broker = Broker(KafkaConfig(props))
    broker.startup()
    try:
        expected = fill(port, 20)
    finally:
        broker.shutdown(10)
    (tmp_path / "data" / CLEAN_SHUTDOWN_FILE).unlink()     # as after a crash: full recovery

    recovering, go_on = threading.Event(), threading.Event()
    load = LogManager._load_logs

    def held_load(self):
        recovering.set()
        assert go_on.wait(30)
        load(self)
    monkeypatch.setattr(LogManager, "_load_logs", held_load)
    broker = Broker(KafkaConfig(props))
    starting = threading.Thread(target=broker.startup)
    starting.start()
    try:
        assert recovering.wait(30)
        assert refused(port)              # bound (a busy port fails fast) but not listening yet
        go_on.set()
        starting.join(30)
        c = RawClient(port)
        assert end_offsets(c, 20) == expected
        c.sock.close()
    finally:
        go_on.set()
        starting.join(30)
        broker.shutdown(10)


def index_bytes_on_disk(data) -> int:
    return sum(os.stat(os.path.join(d, f)).st_blocks * 512 for d, _, files in os.walk(data)
               for f in files if f.endswith((".index", ".timeindex")))


@pytest.mark.crash
def test_after_kill_9_the_first_answers_carry_the_recovered_end_offsets(tmp_path):
    """A client keeps connecting while the killed broker restarts with 200 partitions: until
    the port opens it is refused; its first ListOffsets answer is the recovered log. Recovery
    writes no more index than the logs need (it used to zero the preallocated 10 MiB of both
    indexes of every partition: 20 MiB of disk each, and seconds for 200 partitions)."""
    port = free_port()
    args = ("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={tmp_path / 'data'}")
    proc = serve_process(*args)
    try:
        wait_listening(port, proc)
        expected = fill(port, 200)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    proc = serve_process(*args)
    try:
        refusals = 0
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the broker never opened its port"
            try:
                c = RawClient(port)
                break
            except ConnectionRefusedError:
                refusals += 1
                time.sleep(0.005)  # retry until the restarted broker listens
        assert end_offsets(c, 200) == expected      # the first answer
        c.sock.close()
        assert refusals > 0      # it was tried before the broker could answer
        assert index_bytes_on_disk(tmp_path / "data") < 16 << 20
    finally:
        code, err = stop(proc)
    assert code == 0, err
