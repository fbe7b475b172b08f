"""Broker memory per idle connection: ``--connections`` bare TCP connections (each sends one
ApiVersions request, so the broker has really read from it) held open against a ``fastkafka
serve`` subprocess, then closed. Prints the broker's RSS (``/proc/<pid>/status`` VmRSS) at
baseline, with the connections open, and after they closed, and the cost per connection.

Targets (issue 12): 10,000 idle connections <= 200 MB of broker RSS, and back to the baseline
+-10% once they close.

    .venv/bin/python bench/bench_connections.py --connections 10000
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fastkafka import protocol as P  # noqa: E402


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def settle(pid: int, seconds: float = 2.0) -> float:
    time.sleep(seconds)
    return rss_mb(pid)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=10_000)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.connections + 100:
        sys.exit(f"RLIMIT_NOFILE hard limit {hard} is below {args.connections} connections")
    port = free_port()
    d = tempfile.mkdtemp(prefix="bench-conn-")
    broker = subprocess.Popen([sys.executable, "-m", "fastkafka", "serve", "--log-level", "WARNING",
                               "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                               "--override", f"log.dirs={d}"], cwd=ROOT)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        request = bytes(P.encode_request(P.ApiKey.API_VERSIONS, 0, 1, {}, "bench"))
        base = settle(broker.pid)
        socks = []
        for i in range(args.connections):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(request)
            socks.append(s)
        for s in socks:                      # every one answered: the broker has read it
            (size,) = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))
            s.recv(size, socket.MSG_WAITALL)
        held = settle(broker.pid)
        for s in socks:
            s.close()
        socks.clear()
        after = settle(broker.pid, 4.0)
        print("| connections | RSS baseline | RSS with them open | per connection | RSS after close | "
              "after / baseline |")
        print("|---|---|---|---|---|---|")
        print(f"| {args.connections:,} | {base:.0f} MB | {held:.0f} MB | "
              f"{(held - base) * 1024 / args.connections:.1f} KB | {after:.0f} MB | {after / base:.2f}x |")
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
