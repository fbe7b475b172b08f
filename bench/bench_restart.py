"""Restart of a broker holding many partitions, after a clean stop (SIGTERM) and after kill -9:
time from spawning ``fastkafka serve`` until its port accepts, and until a client has the answers
of one Metadata, one ListOffsets (latest) and one Fetch (offset 0) over every partition; the
latency of that first Metadata once connected; and whether the log end offsets are right.

Half the partitions hold one batch, half are empty. The clean restart is the limit of the same
run (the same process start, imports and loads, without recovery); the figure is the unclean
restart over it.

    .venv/bin/python bench/bench_restart.py --partitions 1000 --rounds 3 [--tree DIR]

``--tree`` runs the broker from another checkout (extensions built there): a before/after.
A connection the broker resets is reconnected and the requests sent again, as a client would.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fastkafka import protocol as P  # noqa: E402
from fastkafka import records  # noqa: E402
from fastkafka.protocol import ApiKey  # noqa: E402
from scratch import scratch_dir  # noqa: E402

TOPIC = "restart"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.corr = 0

    def call(self, key, version, body):
        self.corr += 1
        self.sock.sendall(P.encode_request(key, version, self.corr, body, "bench-restart"))
        (n,) = struct.unpack(">i", self._recv(4))
        corr, resp = P.decode_response(key, version, self._recv(n))
        assert corr == self.corr
        return resp

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return bytes(buf)

    def close(self):
        self.sock.close()


SPAWNED: list[subprocess.Popen] = []
TREE = ROOT


def spawn(port: int, data: str) -> subprocess.Popen:
    SPAWNED.append(subprocess.Popen([sys.executable, "-m", "fastkafka", "serve", "--log-level", "WARNING",
                                     "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                                     "--override", f"log.dirs={data}"],
                                    cwd=TREE, env=dict(os.environ, PYTHONPATH=TREE)))
    return SPAWNED[-1]


def connect_when_open(port: int, proc: subprocess.Popen, timeout: float = 300.0) -> Client:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return Client(port)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("broker did not open its port")
            time.sleep(0.002)


def metadata(c: Client):
    return c.call(ApiKey.METADATA, 8, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False,
                                       "include_cluster_authorized_operations": False,
                                       "include_topic_authorized_operations": False})


def end_offsets(c: Client, n: int) -> dict[int, int]:
    resp = c.call(ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                                       for p in range(n)]}]})
    return {p.partition_index: (p.offset if p.error_code == 0 else -1) for p in resp.topics[0].partitions}


def fetch_all(c: Client, n: int) -> int:
    resp = c.call(ApiKey.FETCH, 11, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 64 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "", "topics": [
            {"topic": TOPIC, "partitions": [{"partition": p, "current_leader_epoch": -1, "fetch_offset": 0,
                                             "log_start_offset": -1, "partition_max_bytes": 1 << 16}
                                            for p in range(n)]}]})
    return sum(len(p.records or b"") for p in resp.responses[0].partitions if p.error_code == 0)


def fill(port: int, proc: subprocess.Popen, n: int) -> dict[int, int]:
    """The topic with ``n`` partitions, one batch of 3 records in each even one; its end offsets."""
    c = connect_when_open(port, proc)
    resp = c.call(ApiKey.CREATE_TOPICS, 4, {"topics": [{"name": TOPIC, "num_partitions": n, "replication_factor": 1,
                                                        "assignments": [], "configs": []}],
                                            "timeout_ms": 60000, "validate_only": False})
    assert resp.topics[0].error_code == 0, resp
    batch = records.build_batch([(None, b"v%d" % i, [], 1_600_000_000_000 + i) for i in range(3)])
    resp = c.call(ApiKey.PRODUCE, 7, {"acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": p, "records": batch} for p in range(0, n, 2)]}]})
    assert all(p.error_code == 0 for p in resp.responses[0].partition_responses)
    c.close()
    return {p: (3 if p % 2 == 0 else 0) for p in range(n)}


def restart(port: int, data: str, proc: subprocess.Popen, sig: int, n: int, expected: dict[int, int]):
    """Stop ``proc`` with ``sig``, start again; (new process, port open s, all answered s,
    first request s, offsets right)."""
    proc.send_signal(sig)
    proc.wait(120)
    t0 = time.monotonic()
    proc = spawn(port, data)
    t_open = None
    while True:
        c = connect_when_open(port, proc)
        t_open = t_open or time.monotonic() - t0
        try:
            metadata(c)
            t_first = time.monotonic() - t0 - t_open     # since the first connection
            offsets = end_offsets(c, n)
            fetch_all(c, n)
            break
        except ConnectionError:
            c.close()
    t_all = time.monotonic() - t0
    c.close()
    return proc, t_open, t_all, t_first, offsets == expected


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tree", help="run the broker from this checkout instead of this tree")
    args = ap.parse_args()
    global TREE
    TREE = os.path.abspath(args.tree) if args.tree else ROOT
    port = free_port()
    data = scratch_dir("bench-restart-")
    proc = spawn(port, data)
    rows: dict[str, list] = {"clean (SIGTERM)": [], "unclean (SIGKILL)": []}
    try:
        expected = fill(port, proc, args.partitions)
        for _ in range(args.rounds):   # alternating: the machine is noisy (DESIGN §9)
            for name, sig in (("clean (SIGTERM)", signal.SIGTERM), ("unclean (SIGKILL)", signal.SIGKILL)):
                proc, *figures = restart(port, data, proc, sig, args.partitions, expected)
                rows[name].append(figures)
                # the next stop must find the state a running broker leaves: after a SIGKILL
                # restart, wait for the recovery-point checkpoint to be written
                time.sleep(0.5)
    finally:
        for p in SPAWNED:
            if p.poll() is None:
                p.terminate()
                p.wait(60)
        subprocess.run(["rm", "-rf", data])
    clean_all = statistics.median(r[1] for r in rows["clean (SIGTERM)"])
    print(f"{args.partitions} partitions (half with one batch), {args.rounds} rounds, medians\n")
    print("| restart | port open | all answered | first Metadata, from connected | offsets right "
          "| all answered / clean |")
    print("|---|---|---|---|---|---|")
    for name, rs in rows.items():
        t_open = statistics.median(r[0] for r in rs)
        t_all = statistics.median(r[1] for r in rs)
        t_first = statistics.median(r[2] for r in rs)
        right = f"{sum(r[3] for r in rs)}/{len(rs)}"
        print(f"| {name} | {t_open * 1000:.0f} ms | {t_all * 1000:.0f} ms | {t_first * 1000:.1f} ms | {right} "
              f"| {t_all / clean_all:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
