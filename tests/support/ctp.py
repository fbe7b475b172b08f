"""What the consume-transform-produce exactly-once runs share (test_transactions.py against one
``fastkafka serve``, tests/cluster/test_transactions_cluster.py against three brokers):
txn_worker.py as a subprocess the test kills and restarts, the group's committed progress the
kills are timed by, and the final check of the output and the group's offsets."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition

WORKER_SCRIPT = str(Path(__file__).with_name("txn_worker.py"))


def terminate(proc) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 20 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


class WorkerProcess:
    """``txn_worker.py <args>`` as a subprocess, a log file per run (``worker-<run>.log``)."""

    def __init__(self, args: list[str], log_dir: Path):
        self.cmd = [sys.executable, WORKER_SCRIPT, *args]
        self.log_dir = log_dir
        self.runs = 0
        self.exits: list[int] = []      # exit codes of the runs that ended without the test killing them
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.runs += 1
        self.log = open(self.log_dir / f"worker-{self.runs}.log", "w")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def ensure_running(self) -> None:
        if self.proc.poll() is not None:
            self.exits.append(self.proc.returncode)
            self.log.close()
            self.start()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.log.close()
        self.start()

    def stop(self) -> None:
        if self.proc is not None:
            terminate(self.proc)
            self.log.close()

    def report(self) -> str:
        tail = []
        for i in range(max(1, self.runs - 2), self.runs + 1):
            text = (self.log_dir / f"worker-{i}.log").read_text().splitlines()
            tail.append(f"--- worker run {i}\n" + "\n".join(text[-15:]))
        return "\n".join(tail)


def committed_progress(monitor: Consumer, topic: str, partitions: int) -> dict[int, int] | None:
    """The group's committed offsets of ``topic``, or None while the brokers cannot answer."""
    try:
        tps = monitor.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=2)
    except KafkaException:
        return None
    if any(tp.error is not None for tp in tps):
        return None
    return {tp.partition: max(tp.offset, 0) for tp in tps}


def check_exactly_once(bootstrap: str, values: Counter, ids: list[bytes], group: str, in_topic: str,
                       in_ends: dict[int, int], why: Callable[[], str]) -> None:
    """Every input id in the committed output (``values``: each output value and how often it
    was read), none twice, nothing else; the group's committed offsets are the input's end."""
    dups = {v: n for v, n in values.items() if n > 1}
    missing = [i for i in ids if b"out:" + i not in values]
    assert not dups and not missing and len(values) == len(ids), (
        f"{len(dups)} duplicated (e.g. {list(dups.items())[:5]}), {len(missing)} missing "
        f"(e.g. {missing[:5]}), {len(values)} distinct; " + why())
    assert set(values) == {b"out:" + i for i in ids}, why()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    ends = {p: c.get_watermark_offsets(TopicPartition(in_topic, p), timeout=10)[1] for p in in_ends}
    committed = {tp.partition: tp.offset for tp in
                 c.committed([TopicPartition(in_topic, p) for p in in_ends], timeout=10)}
    c.close()
    assert ends == in_ends, why()
    assert committed == in_ends, why()
