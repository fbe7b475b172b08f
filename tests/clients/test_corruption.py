"""The corruption matrix through a real broker and a real client: a partition of 50,000 records is
damaged while the broker is down -- after a clean stop (SIGTERM, marker written) and after kill -9
-- and on restart confluent-kafka must read every record before the damaged batch, nothing
after it, and its next produce must get the offset after the last valid batch (none handed out
twice). The consumer runs in a child process: librdkafka aborts the process on some invalid
bytes (``rd_slice_narrow_copy``), and that must fail this test, not end the suite."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys

import pytest
from confluent_kafka import Producer

from fastkafka.records import batch_index

from support.brokers import free_port, serve_process, stop, wait_listening

pytestmark = [pytest.mark.clients, pytest.mark.crash]

RECORDS = 50_000
TOPIC = "damaged"

CONSUME = r"""
import json, sys
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, end = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False,
              "enable.partition.eof": True})
low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
c.assign([TopicPartition(topic, 0, 0)])
seen, errors = [], []
while True:
    m = c.poll(10)
    if m is None:
        errors.append("timeout"); break
    if m.error():
        if m.error().code() == -191:      # _PARTITION_EOF
            break
        errors.append(str(m.error())); break
    seen.append([m.offset(), m.value().decode()])
    if m.offset() + 1 >= end:
        break
c.close()
print(json.dumps({"low": low, "high": high, "seen": seen, "errors": errors}))
"""


def start(log_dir, port):
    proc = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                         "--override", f"log.dirs={log_dir}", "--override", "num.partitions=1")
    wait_listening(port, proc)
    return proc


def produce(bootstrap, values) -> list[int]:
    offsets = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 1000, "acks": "all"})
    for v in values:
        p.produce(TOPIC, v.encode(), on_delivery=lambda err, m: offsets.append(
            -1 if err else m.offset()))
    assert p.flush(30) == 0
    return offsets


def consume(bootstrap, end):
    out = subprocess.run([sys.executable, "-c", CONSUME, bootstrap, TOPIC, str(end)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"the consumer died ({out.returncode}): {out.stderr[-2000:]}"
    return json.loads(out.stdout)


def damage(part_dir, kind) -> int:
    """Damage the active segment (or its index); returns the log end offset that survives."""
    log = os.path.join(part_dir, f"{0:020d}.log")
    with open(log, "rb") as f:
        data = bytearray(f.read())
    batches = batch_index(bytes(data))
    assert len(batches) >= 50 and batches[-1][2] == RECORDS - 1
    last_base = batches[-1][1]
    if kind == "torn":                      # the last write never completed
        data = data[:-37]
        survives = last_base
    elif kind == "garbage":
        data += random.Random(1).randbytes(3000)
        survives = RECORDS
    elif kind == "zeros":                   # the file grew but its blocks never reached the disk
        data += bytes(8192)
        survives = RECORDS
    elif kind == "flip":                    # a bit rotted inside the last batch's records
        data[batches[-1][0] + 70] ^= 0x04
        survives = last_base
    else:                                   # "index": the .index cut mid-entry
        index = log[:-4] + ".index"
        size = os.path.getsize(index)
        assert size >= 16
        os.truncate(index, size // 2 - 3)
        return RECORDS
    with open(log, "wb") as f:
        f.write(data)
    return survives


@pytest.mark.timeout(240)
@pytest.mark.parametrize("shutdown", ["clean", "kill9"])
@pytest.mark.parametrize("kind", ["torn", "garbage", "zeros", "flip", "index"])
def test_damaged_tail_after_restart(tmp_path, kind, shutdown):
    log_dir, port = tmp_path / "data", free_port()
    bootstrap = f"127.0.0.1:{port}"
    proc = start(log_dir, port)
    values = [f"v{i}" for i in range(RECORDS)]
    try:
        offsets = produce(bootstrap, values)
        assert sorted(offsets) == list(range(RECORDS))
    finally:
        code, _ = stop(proc, signal.SIGTERM if shutdown == "clean" else signal.SIGKILL)
    assert code == (0 if shutdown == "clean" else -signal.SIGKILL)
    assert os.path.exists(log_dir / ".kafka_cleanshutdown") == (shutdown == "clean")

    survives = damage(str(log_dir / f"{TOPIC}-0"), kind)
    proc = start(log_dir, port)
    try:
        got = consume(bootstrap, survives)
        assert got["errors"] == [] and (got["low"], got["high"]) == (0, survives)
        assert got["seen"] == [[i, values[i]] for i in range(survives)]   # nothing lost before it
        # the next produce continues right after the last valid batch, and is read back
        assert produce(bootstrap, ["after"]) == [survives]
        got = consume(bootstrap, survives + 1)
        assert got["errors"] == [] and got["seen"][-1] == [survives, "after"]
        assert len(got["seen"]) == survives + 1
    finally:
        code, err = stop(proc)
    assert code == 0, err
    warned = [line for line in err.splitlines() if "invalid bytes" in line]
    if kind == "index":
        assert warned == []
    else:
        assert len(warned) == 1 and f"{TOPIC}-0" in warned[0], err
