"""What the mirror tests share: the mirror as a real ``python -m fastkafka mirror`` subprocess,
waiting, and reading a cluster's topics back with confluent-kafka (read_committed)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from support.brokers import ROOT
from support.waits import wait_for  # noqa: F401  (the mirror tests take it from here)


# a SIGKILLed mirror's group member is gone after one second, not the default ten
GROUP_TIMEOUTS = ["--source-config", "session.timeout.ms=1000", "--source-config", "heartbeat.interval.ms=250"]


class MirrorProcess:
    """``fastkafka mirror`` in a subprocess, its stderr in a file (read on failure)."""

    def __init__(self, tmp_path, source, target, *args: str, name: str = "mirror"):
        self.log_path = tmp_path / f"{name}.log"
        self.args = ["--source", source.bootstrap, "--target", target.bootstrap,
                     "--refresh-interval-ms", "500", "--progress-interval", "1", *GROUP_TIMEOUTS, *args]
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> "MirrorProcess":
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        log = open(self.log_path, "a")
        log.write(f"--- start {self.starts}\n")
        log.flush()
        self.proc = subprocess.Popen([sys.executable, "-m", "fastkafka", "mirror", *self.args], cwd=ROOT,
                                     env=env, stdout=subprocess.DEVNULL, stderr=log)
        log.close()
        self.starts += 1
        return self

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM; the exit status (the mirror commits and exits by itself)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"mirror did not stop on SIGTERM:\n{self.output()}") from None

    def up(self) -> bool:
        """The last start got past its start-up (its SIGTERM handler is in place): it logged the
        topics it mirrors. A SIGTERM before that ends the interpreter as Python does (-15)."""
        return "INFO fastkafka.mirror: mirroring " in self.log_path.read_text().rsplit("--- start", 1)[-1]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        return self.log_path.read_text()[-6000:]


def high_watermark(broker, topic: str, partition: int) -> int:
    """The partition's high watermark on an in-process ``broker``; 0 while the topic or the log
    does not exist (a topic the mirror just created has its metadata before its logs are open)."""
    from fastkafka.errors import UnknownTopicOrPartitionError
    try:
        return broker.topics.log(topic, partition).high_watermark
    except UnknownTopicOrPartitionError:
        return 0


def read_topic(bootstrap: str, topic: str, isolation: str = "read_committed", timeout: float = 30) -> dict:
    """``{partition: [(offset, key, value, headers, timestamp)]}`` of every partition, from the
    beginning to its end (read_committed: the last stable offset)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirror-test-reader", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    try:
        parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        return read_to_end(c, parts, timeout, lambda m: (m.offset(), m.key(), m.value(), m.headers() or [],
                                                         m.timestamp()[1]))
    finally:
        c.close()


def read_to_end(consumer, partitions, timeout: float, record) -> dict[int, list]:
    """``{partition: [record(message)]}`` as ``consumer`` (assigned or subscribed, with
    enable.partition.eof) reads until each of ``partitions`` is at its end."""
    from confluent_kafka import KafkaError
    got: dict[int, list] = {p: [] for p in partitions}
    eof: set[int] = set()
    deadline = time.monotonic() + timeout
    while eof != set(partitions):
        assert time.monotonic() < deadline, f"no end of {set(partitions) - eof} in {timeout}s"
        m = consumer.poll(0.2)
        if m is None:
            continue
        if m.error() is not None:
            assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
            eof.add(m.partition())
            continue
        eof.discard(m.partition())
        got[m.partition()].append(record(m))
    return got


def contents(rows: dict) -> dict:
    """``read_topic``'s rows without the offsets (the target numbers them its own way)."""
    return {p: [r[1:] for r in rs] for p, rs in rows.items()}
