"""What client quotas cost a request: small Produce and Fetch requests (where per-request work
shows; bench_server.py's 1 MiB requests hide it) against this tree with no quota configured,
the same tree with a quota configured that never throttles (every request then charged), and a
baseline checkout (``--baseline DIR``: the tree before quotas, extensions built there).

Two measurements:

* end to end: each target is its own ``fastkafka serve`` process, handlers inline; the
  raw-protocol load generator (bench/loadgen.py) replays pre-built requests with a few in
  flight; rounds alternate between targets (the machine is noisy, DESIGN §9) and the ratios are
  best-to-best and the median of per-round ratios;
* the dispatcher alone: in a process per tree (and per quota setting), the same requests are
  handed to ``Dispatcher.handle`` with no socket in between, and the thread CPU time per
  request is taken (best of 15 batches) -- what a request costs the broker's Python, without
  the scheduling noise of sockets.

Usage::

    .venv/bin/python bench/bench_quotas.py --baseline /path/to/checkout [--requests 40000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen as L  # noqa: E402

from fastkafka import protocol as P  # noqa: E402
from fastkafka import records  # noqa: E402
from scratch import scratch_dir  # noqa: E402

TOPIC = "small"


def start(src: str, data: str) -> tuple[subprocess.Popen, int]:
    port = L.free_port()
    p = L.spawn([sys.executable, "-m", "fastkafka", "serve", "--log-level", "WARNING",
                 "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={data}",
                 "--override", "num.io.threads=0", "--override", "num.network.threads=1"],
                env={"PYTHONPATH": src}, cwd=src)
    L.wait_port(port)
    return p, port


def produce_frame(value_size: int) -> bytes:
    batch = records.build_batch([(None, b"v" * value_size, [], 1_700_000_000_000)])
    body = {"acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]}
    return bytes(P.encode_request(P.ApiKey.PRODUCE, 7, 1, body, "bench"))


def fetch_frame(offset: int) -> bytes:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 4096, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                         "current_leader_epoch": -1, "log_start_offset": -1,
                                                         "partition_max_bytes": 4096}]}]}
    return bytes(P.encode_request(P.ApiKey.FETCH, 11, 1, body, "bench"))


def set_generous_quota(port: int) -> None:
    """A default-client quota far above what loopback can carry: every request is charged."""
    resp = L.call(port, P.ApiKey.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [{
        "entity": [{"entity_type": "client-id", "entity_name": None}],
        "ops": [{"key": k, "value": v, "remove": False} for k, v in (
            ("producer_byte_rate", 1e15), ("consumer_byte_rate", 1e15), ("request_percentage", 1e9))]}]})
    assert resp.entries[0].error_code == 0, resp


class _Request:
    """What the dispatcher needs of a processor's request; the response is dropped."""

    __slots__ = ("frame", "session", "received", "listener", "conn")
    connection_id = "bench"

    def __init__(self, frame: bytes, session):
        self.frame, self.session = bytearray(frame[4:]), session
        self.received, self.listener, self.conn = time.monotonic(), "PLAINTEXT", None

    def respond(self, chunks) -> None:
        for c in chunks:
            if hasattr(c, "done"):
                c.done()

    def no_response(self) -> None:
        pass


def dispatch_only(with_quota: bool) -> None:
    """CPU µs per request of Dispatcher.handle in this process's tree (printed as JSON)."""
    from fastkafka.config import KafkaConfig
    from fastkafka.server.broker import Broker
    from fastkafka.server.dispatch import Dispatcher
    from fastkafka.server.handlers import HANDLERS
    from fastkafka.server.listener_security import ListenerSecurity, Session
    b = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": scratch_dir("bench-quotas-")}))
    b.startup()
    try:
        port = next(iter(b.socket_server.bound.values()))[1]
        L.create_topic(port, TOPIC)
        L.replay(port, [produce_frame(100)] * 2000, 4)
        if with_quota:
            set_generous_quota(port)
        dispatcher = Dispatcher(HANDLERS, b.advertised, b.quotas)
        dispatcher.services = b.services
        session = Session(ListenerSecurity("PLAINTEXT", "PLAINTEXT"))
        frames = {"produce": [produce_frame(100)] * 3000, "fetch": [fetch_frame(i % 2000) for i in range(3000)]}
        out = {}
        for kind, batch in frames.items():
            best = float("inf")
            for _ in range(15):
                reqs = [_Request(f, session) for f in batch]
                t = time.thread_time()
                for r in reqs:
                    dispatcher.handle(r)
                best = min(best, (time.thread_time() - t) / len(reqs) * 1e6)
            out[kind] = best
        print(json.dumps(out))
    finally:
        b.shutdown(5)


def dispatch_section(baseline: str, rounds: int) -> None:
    runs = {"no quota": (L.ROOT, False), "quota, never throttling": (L.ROOT, True), "baseline": (baseline, False)}
    got = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (src, quota) in runs.items():
            argv = [sys.executable, os.path.abspath(__file__), "--dispatch-only"] + (["--quota"] if quota else [])
            text = subprocess.run(argv, env=dict(os.environ, PYTHONPATH=src), cwd=src, check=True,
                                  capture_output=True, text=True).stdout
            got[name].append(json.loads(text.strip().splitlines()[-1]))
    print("\nDispatcher.handle alone, CPU µs per request (best of 15 batches of 3000, median over runs)")
    print("| requests | no quota | quota, never throttling | baseline | no quota vs baseline |")
    print("|---|---|---|---|---|")
    for kind in ("produce", "fetch"):
        med = {name: statistics.median(r[kind] for r in got[name]) for name in runs}
        print(f"| {kind} | {med['no quota']:.2f} | {med['quota, never throttling']:.2f} | {med['baseline']:.2f} "
              f"| {med['baseline'] / med['no quota']:.3f}x throughput |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="a fastkafka checkout from before quotas (built)")
    ap.add_argument("--dispatch-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--quota", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--requests", type=int, default=40000, help="requests per timed round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--window", type=int, default=4, help="requests in flight")
    args = ap.parse_args(argv)
    if args.dispatch_only:
        dispatch_only(args.quota)
        return 0
    if not args.baseline:
        ap.error("--baseline is required")
    tmp = scratch_dir("bench-quotas-")
    targets = {
        "no quota": start(L.ROOT, os.path.join(tmp, "a")),
        "quota, never throttling": start(L.ROOT, os.path.join(tmp, "b")),
        "baseline": start(os.path.abspath(args.baseline), os.path.join(tmp, "c")),
    }
    set_generous_quota(targets["quota, never throttling"][1])
    produce = [produce_frame(100)] * args.requests
    results = {kind: {name: [] for name in targets} for kind in ("produce", "fetch")}
    try:
        for _, port in targets.values():
            L.create_topic(port, TOPIC)
            L.replay(port, produce[:2000], args.window)      # warm-up, and data to fetch
        fetch = [fetch_frame(i % 2000) for i in range(args.requests)]
        for _ in range(args.rounds):
            for kind, frames in (("produce", produce), ("fetch", fetch)):
                for name, (proc, port) in targets.items():
                    r = L.measure(port, proc.pid, frames, args.window)
                    results[kind][name].append((len(frames) / r["secs"], r["cpu"] / len(frames) * 1e6))
    finally:
        for proc, _ in targets.values():
            proc.terminate()
            proc.wait(20)
        subprocess.run(["rm", "-rf", tmp])
    print(f"{args.requests} requests per round, {args.rounds} rounds, window {args.window}; "
          "Produce v7 of one 100-byte record, Fetch v11 of up to 4 KiB")
    print("| requests | target | requests/s best / median | vs baseline (best / per-round median) "
          "| broker CPU µs per request (median) |")
    print("|---|---|---|---|---|")
    for kind, by_target in results.items():
        base = [r for r, _ in by_target["baseline"]]
        for name, runs in by_target.items():
            rates = [r for r, _ in runs]
            ratio = "" if name == "baseline" else (
                f"{max(rates) / max(base):.3f}x / "
                f"{statistics.median(r / b for r, b in zip(rates, base)):.3f}x")
            cpu = statistics.median(c for _, c in runs)
            print(f"| {kind} | {name} | {max(rates):,.0f} / {statistics.median(rates):,.0f} | {ratio} | {cpu:.1f} |")
    dispatch_section(os.path.abspath(args.baseline), 3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
