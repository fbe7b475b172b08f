"""End-to-end broker throughput with a load generator that replays pre-built requests.

The generator builds one Produce v7 request (a 1 MiB batch of 1000-byte records, one partition,
acks=1) and Fetch v11 requests (1 MiB per partition fetch) once, then replays them over a raw
socket with a few requests in flight, so the client costs almost nothing. Each target runs as its
own process so its CPU time (user+system from /proc) can be charged per GB moved:

  produce: fastkafka        `fastkafka serve` on a fresh log dir
           null broker      reads the same frames, appends each body to a file, answers 40 bytes
  fetch:   fastkafka        Fetch responses = header + sendfile of the segment region
           sendfile limit   answers each request with a 100-byte header + os.sendfile of 1 MiB of
                            the same segment file (no parsing, no index lookups)

Rounds alternate between the targets after a warm-up that fills the page cache (DESIGN §9).

Usage::

    .venv/bin/python bench/bench_server.py [--mib 384] [--rounds 3] [--window 4]
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fastkafka import protocol as P  # noqa: E402
from fastkafka import records  # noqa: E402

RECORD = 1000
BATCH = 1 << 20
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout=30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(port)


# --- pre-built requests ---
def produce_frame(topic: str) -> tuple[bytes, int]:
    n = BATCH // RECORD
    value = os.urandom(RECORD)
    while True:  # as many records as fit a 1 MiB batch (message.max.bytes is 1 MiB + 12)
        batch = records.build_batch([(None, value, [], 1_700_000_000_000 + i) for i in range(n)])
        if len(batch) <= BATCH:
            break
        n -= 1
    body = {"acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
    return bytes(P.encode_request(P.ApiKey.PRODUCE, 7, 1, body, "bench")), n


def fetch_frame(topic: str, offset: int) -> bytes:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": BATCH + 4096,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                 "partition_max_bytes": BATCH + 4096}]}],
            "forgotten_topics_data": []}
    return bytes(P.encode_request(P.ApiKey.FETCH, 11, 1, body, "bench"))


# --- the load generator ---
def replay(port: int, frames: list[bytes], window: int) -> tuple[float, int]:
    """Send every frame with up to ``window`` unanswered; returns (seconds, response bytes)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    slots = threading.Semaphore(window)
    t0 = time.perf_counter()

    def sender():
        for f in frames:
            slots.acquire()
            sock.sendall(f)
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    buf = memoryview(bytearray(4 << 20))
    got = total = 0
    need = -1
    have = 0   # bytes of the current response consumed
    pending = b""
    while got < len(frames):
        n = sock.recv_into(buf)
        if not n:
            raise ConnectionError("target closed the connection")
        total += n
        pos = 0
        while pos < n:
            if need < 0:
                take = min(4 - len(pending), n - pos)
                pending += bytes(buf[pos:pos + take])
                pos += take
                if len(pending) == 4:
                    need = struct.unpack(">i", pending)[0]
                    pending = b""
                    have = 0
                    if need == 0:
                        need = -1
                        got += 1
                        slots.release()
                continue
            take = min(need - have, n - pos)
            have += take
            pos += take
            if have == need:
                need = -1
                got += 1
                slots.release()
    elapsed = time.perf_counter() - t0
    th.join()
    sock.close()
    return elapsed, total


# --- the reference servers (run as subprocesses of this file) ---
def _read_exact(sock, view, n):
    got = 0
    while got < n:
        k = sock.recv_into(view[got:n])
        if not k:
            return False
        got += k
    return True


def null_broker(port: int, path: str) -> None:
    """Read frames, append each to a file, answer 40 bytes: the produce limit."""
    srv = socket.create_server(("127.0.0.1", port))
    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    buf = memoryview(bytearray(BATCH + (1 << 16)))
    reply = struct.pack(">i", 36) + bytes(36)
    while True:
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while _read_exact(conn, buf, 4):
            size = struct.unpack(">i", buf[:4])[0]
            if not _read_exact(conn, buf, size):
                break
            os.write(out, buf[:size])
            conn.sendall(reply)
        conn.close()


def sendfile_server(port: int, path: str) -> None:
    """Answer each frame with 100 header bytes + sendfile of the next 1 MiB of ``path``."""
    srv = socket.create_server(("127.0.0.1", port))
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    buf = memoryview(bytearray(1 << 16))
    while True:
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pos = 0
        while _read_exact(conn, buf, 4):
            n = struct.unpack(">i", buf[:4])[0]
            if not _read_exact(conn, buf, n):
                break
            length = min(BATCH, size - pos) if size - pos > 0 else BATCH
            if pos + length > size:
                pos = 0
            conn.sendall(struct.pack(">i", 96 + length) + bytes(96))
            sent = 0
            while sent < length:
                sent += os.sendfile(conn.fileno(), fd, pos + sent, length - sent)
            pos += length
        conn.close()


def spawn(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=ROOT))


def start_fastkafka(data: str, port: int, io_threads: int, net_threads: int) -> subprocess.Popen:
    p = spawn("-m", "fastkafka", "serve", "--log-level", "WARNING",
              "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={data}",
              "--override", f"num.io.threads={io_threads}", "--override", f"num.network.threads={net_threads}")
    wait_port(port)
    return p


def call(port: int, key: int, version: int, body) -> object:
    """One request/response round trip (set-up and checks, not timed)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(P.encode_request(key, version, 7, body, "bench"))
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        return P.decode_response(key, version, s.recv(size, socket.MSG_WAITALL))[1]


def prepare_fastkafka(port: int, frame: bytes) -> None:
    """Create the topic, then check that the replayed Produce request really appends."""
    call(port, P.ApiKey.CREATE_TOPICS, 4, {"topics": [{"name": "bench", "num_partitions": 1, "replication_factor": 1,
                                                       "assignments": [], "configs": []}]})
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        resp = P.decode_response(P.ApiKey.PRODUCE, 7, s.recv(size, socket.MSG_WAITALL))[1]
    code = resp.responses[0].partition_responses[0].error_code
    if code:
        raise SystemExit(f"produce failed with error {code}")


def measure(port: int, pid: int, frames, window) -> dict:
    c0 = cpu_seconds(pid)
    secs, nbytes = replay(port, frames, window)
    cpu = cpu_seconds(pid) - c0
    return {"secs": secs, "cpu": cpu, "bytes": nbytes}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=384, help="MiB per timed run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=int, default=4, help="requests in flight")
    ap.add_argument("--io-threads", type=int, nargs="+", default=[0, 2])
    ap.add_argument("--net-threads", type=int, default=1)
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-server-")
    frame, per_batch = produce_frame("bench")
    n = args.mib
    produce_frames = [frame] * n
    payload = len(frame) * n

    procs = []
    try:
        null_port = free_port()
        procs.append(spawn(__file__, "--serve-null", str(null_port), os.path.join(tmp, "null.log")))
        wait_port(null_port)
        brokers = {}
        for io in args.io_threads:
            port = free_port()
            p = start_fastkafka(os.path.join(tmp, f"data-io{io}"), port, io, args.net_threads)
            procs.append(p)
            prepare_fastkafka(port, frame)
            brokers[f"fastkafka io={io}"] = (port, p.pid)
        targets = {"null broker": (null_port, procs[0].pid), **brokers}
        # warm-up: page cache, code paths
        for port, _ in targets.values():
            replay(port, produce_frames[:64], args.window)
        results = {name: [] for name in targets}
        for _ in range(args.rounds):
            for name, (port, pid) in targets.items():
                results[name].append(measure(port, pid, produce_frames, args.window))
        print(f"\nPRODUCE  {n} x {len(frame) / 2**20:.2f} MiB requests ({per_batch} x {RECORD} B records), "
              f"window {args.window}, best of {args.rounds}")
        report(results, payload, n * per_batch, "null broker")

        # fetch: the first broker's log now holds (warm-up + rounds) x n batches
        name0 = next(iter(brokers))
        port, pid = brokers[name0]
        seg_dir = os.path.join(tmp, f"data-io{args.io_threads[0]}", "bench-0")
        seg = sorted(f for f in os.listdir(seg_dir) if f.endswith(".log"))[0]
        fetch_frames = [fetch_frame("bench", i * per_batch) for i in range(n)]
        with socket.create_connection(("127.0.0.1", port)) as s:  # check: a whole batch, no error
            s.sendall(fetch_frames[1])
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            part = P.decode_response(P.ApiKey.FETCH, 11, s.recv(size, socket.MSG_WAITALL))[1].responses[0].partitions[0]
            assert part.error_code == 0 and len(part.records) > BATCH - 4096, (part.error_code, len(part.records))
        sf_port = free_port()
        procs.append(spawn(__file__, "--serve-sendfile", str(sf_port), os.path.join(seg_dir, seg)))
        wait_port(sf_port)
        ftargets = {"sendfile limit": (sf_port, procs[-1].pid), name0: (port, pid)}
        for port_, _ in ftargets.values():
            replay(port_, fetch_frames, args.window)  # page cache warm
        fresults = {k: [] for k in ftargets}
        for _ in range(args.rounds):
            for k, (port_, pid_) in ftargets.items():
                fresults[k].append(measure(port_, pid_, fetch_frames, args.window))
        fetched = min(r["bytes"] for r in fresults["sendfile limit"])
        print(f"\nFETCH  {n} x 1 MiB fetches (v11, one partition), window {args.window}, best of {args.rounds}")
        report(fresults, fetched, n * per_batch, "sendfile limit")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["rm", "-rf", tmp])
    return 0


def report(results: dict, nbytes: int, nrecords: int, limit: str) -> None:
    best = {k: min(v, key=lambda r: r["secs"]) for k, v in results.items()}
    lim = nbytes / best[limit]["secs"]
    print(f"| target | MB/s (best) | MB/s (median) | records/s | ratio vs {limit} | broker CPU-s per GB |")
    print("|---|---|---|---|---|---|")
    for k, r in best.items():
        med = statistics.median(x["secs"] for x in results[k])
        rate = nbytes / r["secs"]
        cpu_per_gb = statistics.median(x["cpu"] for x in results[k]) / (nbytes / 1e9)
        print(f"| {k} | {rate / 1e6:.0f} | {nbytes / med / 1e6:.0f} | {nrecords / r['secs'] / 1e6:.2f} M "
              f"| {rate / lim:.2f}x | {cpu_per_gb:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-null":
        null_broker(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "--serve-sendfile":
        sendfile_server(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(main())
