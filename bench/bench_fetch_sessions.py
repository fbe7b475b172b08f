"""What incremental fetch sessions (KIP-227) save the broker: idle fetches of many partitions.

One ``fastkafka serve`` process; a topic of ``--partitions`` partitions with no records; a
synchronous raw client sends Fetch v12 requests (max_wait_ms 0, nothing new anywhere), alternating
round by round between:

  full         every partition listed, session_epoch -1 (what confluent-kafka and aiokafka send)
  incremental  one session opened once; each request lists nothing and carries the next epoch
               (what kafka-python and the Java consumer send once nothing moves)

Figures per mode: broker CPU (user+system from /proc) per fetch, request and response bytes, fetches
per second; and incremental / full for each, as the median of per-round ratios.

Usage::

    .venv/bin/python bench/bench_fetch_sessions.py [--partitions 1000] [--fetches 2000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen as L  # noqa: E402
from bench_server import alternate, start_fastkafka  # noqa: E402

from fastkafka import protocol as P  # noqa: E402

TOPIC = "idle"


def fetch_frame(partitions: int, session_id: int, epoch: int) -> bytes:
    listed = partitions if epoch <= 0 else 0
    return P.encode_request(P.ApiKey.FETCH, 12, 1, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50 << 20, "isolation_level": 0,
        "session_id": session_id, "session_epoch": epoch, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": TOPIC, "partitions": [
            {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20} for p in range(listed)]}]
        if listed else []}, "bench")


def roundtrip(sock, frame: bytes) -> bytes:
    sock.sendall(frame)
    head = sock.recv(4, socket.MSG_WAITALL)
    (n,) = struct.unpack(">i", head)
    body = bytearray()
    while len(body) < n:
        body += sock.recv(n - len(body))
    return bytes(body)


class Fetcher:
    """One connection; ``mode`` full or incremental (its session opened on the first use)."""

    def __init__(self, port: int, mode: str, partitions: int):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.mode, self.partitions = mode, partitions
        self.session_id, self.epoch = 0, -1
        if mode == "incremental":
            resp = P.decode_response(P.ApiKey.FETCH, 12, roundtrip(self.sock, fetch_frame(partitions, 0, 0)))[1]
            if resp.session_id == 0:
                raise SystemExit("the broker opened no fetch session")
            self.session_id, self.epoch = resp.session_id, 1
        self.full = fetch_frame(partitions, 0, -1)

    def run(self, n: int, pid: int) -> dict:
        cpu0, t0 = L.cpu_seconds(pid), time.perf_counter()
        sent = got = 0
        for _ in range(n):
            if self.mode == "full":
                frame = self.full
            else:
                frame = fetch_frame(self.partitions, self.session_id, self.epoch)
                self.epoch += 1
            sent += len(frame)
            got += len(roundtrip(self.sock, frame)) + 4
        secs, cpu = time.perf_counter() - t0, L.cpu_seconds(pid) - cpu0
        return {"secs": secs, "cpu": cpu, "req": sent / n, "resp": got / n, "n": n}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--fetches", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as data:
        broker = start_fastkafka("fastkafka", L.ROOT, data, io_threads=2)
        try:
            resp = L.call(broker.port, P.ApiKey.CREATE_TOPICS, 4, {
                "topics": [{"name": TOPIC, "num_partitions": args.partitions, "replication_factor": 1,
                            "assignments": [], "configs": []}], "timeout_ms": 30000, "validate_only": False})
            assert resp.topics[0].error_code == 0, resp
            targets = {m: Fetcher(broker.port, m, args.partitions) for m in ("full", "incremental")}
            for t in targets.values():
                t.run(50, broker.pid)    # warm-up
            results = alternate(targets, args.rounds, lambda _name, t: t.run(args.fetches, broker.pid))
        finally:
            broker.proc.terminate()
            broker.proc.wait(30)
    print(f"{args.partitions} idle partitions, {args.fetches} Fetch v12 per round, {args.rounds} rounds")
    print("| mode | broker CPU µs/fetch (median) | fetches/s (median) | request B | response B |")
    print("|---|---|---|---|---|")
    for mode, rs in results.items():
        print(f"| {mode} | {statistics.median(r['cpu'] / r['n'] * 1e6 for r in rs):,.0f} | "
              f"{statistics.median(r['n'] / r['secs'] for r in rs):,.0f} | {rs[0]['req']:,.0f} | "
              f"{rs[0]['resp']:,.0f} |")
    pairs = list(zip(results["incremental"], results["full"]))
    cpu = statistics.median((i["cpu"] / i["n"]) / (f["cpu"] / f["n"]) for i, f in pairs)
    rate = statistics.median((i["n"] / i["secs"]) / (f["n"] / f["secs"]) for i, f in pairs)
    print(f"incremental / full, median of per-round ratios: broker CPU per fetch {cpu:.3f}x, fetches/s {rate:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
