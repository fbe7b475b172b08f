"""Broker memory per idle connection: ``--connections`` bare TCP connections (each sends one
ApiVersions request, so the broker has really read from it) held open against a ``fastkafka
serve`` subprocess, then closed. Prints the broker's RSS (``/proc/<pid>/status`` VmRSS) at
baseline, with the connections open, and after they closed, and the cost per connection.

Targets (issue 12): 10,000 idle connections <= 200 MB of broker RSS, and back to the baseline
+-10% once they close.

    .venv/bin/python bench/bench_connections.py --connections 10000

``--arenas`` also prints CPython's small-object arenas in use (1 MiB each; one is given back to the
OS only once nothing in it is alive) at the same three points: the broker runs through a shim whose
SIGUSR1 handler writes ``sys._debugmallocstats()`` to a file.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fastkafka import protocol as P  # noqa: E402
from loadgen import status_mib  # noqa: E402


def settle(pid: int, seconds: float = 2.0) -> float:
    time.sleep(seconds)
    return status_mib(pid, "VmRSS")


# `python -c` shim: fastkafka's command, plus a SIGUSR1 handler appending pymalloc's statistics
# (which go to the C stderr) to the file named by FASTKAFKA_MALLOCSTATS
_SHIM = """
import os, signal, sys
def dump(*_):
    fd = os.open(os.environ["FASTKAFKA_MALLOCSTATS"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    saved = os.dup(2)
    os.dup2(fd, 2)
    try:
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
signal.signal(signal.SIGUSR1, dump)
from fastkafka.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def arenas(pid: int, path: str) -> int:
    """Arenas in use now: signal the shim, read the count it appends."""
    size = os.path.getsize(path) if os.path.exists(path) else 0
    os.kill(pid, signal.SIGUSR1)
    for _ in range(100):
        time.sleep(0.05)
        with open(path) as f:
            f.seek(size)
            for line in f:
                if line.startswith("# arenas allocated current"):
                    return int(line.split("=")[1])
    raise RuntimeError("no statistics from the broker")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=10_000)
    ap.add_argument("--arenas", action="store_true", help="also count pymalloc's arenas (a shim runs the broker)")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.connections + 100:
        sys.exit(f"RLIMIT_NOFILE hard limit {hard} is below {args.connections} connections")
    port = free_port()
    d = tempfile.mkdtemp(prefix="bench-conn-")
    stats = os.path.join(d, "mallocstats.txt")
    start = [sys.executable, "-c", _SHIM] if args.arenas else [sys.executable, "-m", "fastkafka"]
    broker = subprocess.Popen(start + ["serve", "--log-level", "WARNING",
                                       "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                                       "--override", f"log.dirs={d}"], cwd=ROOT,
                              env=dict(os.environ, FASTKAFKA_MALLOCSTATS=stats))
    counts = []
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        request = bytes(P.encode_request(P.ApiKey.API_VERSIONS, 0, 1, {}, "bench"))
        base = settle(broker.pid)
        if args.arenas:
            counts.append(arenas(broker.pid, stats))
        socks = []
        for i in range(args.connections):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(request)
            socks.append(s)
        for s in socks:                      # every one answered: the broker has read it
            (size,) = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))
            s.recv(size, socket.MSG_WAITALL)
        held = settle(broker.pid)
        if args.arenas:
            counts.append(arenas(broker.pid, stats))
        for s in socks:
            s.close()
        socks.clear()
        after = settle(broker.pid, 4.0)
        if args.arenas:
            counts.append(arenas(broker.pid, stats))
        print("| connections | RSS baseline | RSS with them open | per connection | RSS after close | "
              "after / baseline |")
        print("|---|---|---|---|---|---|")
        print(f"| {args.connections:,} | {base:.0f} MB | {held:.0f} MB | "
              f"{(held - base) * 1024 / args.connections:.1f} KB | {after:.0f} MB | {after / base:.2f}x |")
        if args.arenas:
            print("pymalloc arenas (1 MiB) baseline / open / after close: %d / %d / %d" % tuple(counts))
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
