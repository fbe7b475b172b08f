"""What Produce v10's leader hint (KIP-951) costs a successful Produce: the in-process request
path (decode the body, ``handle_produce``, encode the response) of an embedded broker for the
handler before the hint (from git, at v9: the limit), this handler at v9 and at v10, alternating
round by round. Only refused partitions compute a hint, so the success path should show no
difference beyond noise.

    .venv/bin/python bench/bench_produce_hint.py --rounds 7 --partitions 1 --before 048335d~1
    .venv/bin/python bench/bench_produce_hint.py --rounds 7 --partitions 100 --before 048335d~1
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fastkafka import protocol as P  # noqa: E402
from fastkafka import records  # noqa: E402
from fastkafka.config import KafkaConfig  # noqa: E402
from fastkafka.server.broker import Broker  # noqa: E402
from fastkafka.server.dispatch import RequestContext  # noqa: E402
from fastkafka.server.handlers import produce as current  # noqa: E402


def handler_at(commit: str, directory: str):
    """``handle_produce`` as it was at ``commit``, imported beside today's handlers."""
    src = subprocess.run(["git", "-C", ROOT, "show", f"{commit}:fastkafka/server/handlers/produce.py"],
                         check=True, capture_output=True).stdout
    path = os.path.join(directory, "produce_before.py")
    with open(path, "wb") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("fastkafka.server.handlers._produce_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.handle_produce


def request_body(version: int, partitions: int) -> bytes:
    batch = records.build_batch([(None, b"x" * 100, [], 1_700_000_000_000)])
    req = {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": "hint", "partition_data": [{"index": p, "records": batch} for p in range(partitions)]}]}
    return bytes(P.codec_for(P.ApiKey.PRODUCE, version).encode_request_body(req))


def run(broker, handle, version: int, body: bytes, n: int) -> float:
    """Seconds of thread CPU per request over ``n`` requests."""
    codec = P.codec_for(P.ApiKey.PRODUCE, version)
    header = P.RequestHeader(P.ApiKey.PRODUCE, version, 1, "bench")
    request = SimpleNamespace(received=0.0, session=None, listener="PLAINTEXT")
    buf = bytearray(body)
    t0 = time.thread_time()
    for _ in range(n):
        ctx = RequestContext(request, header, codec, broker.services)
        resp = handle(ctx, codec.decode_request(memoryview(buf)))
        codec.encode_response(1, resp)
    return (time.thread_time() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--before", default="048335d~1", help="commit of the handler without hints")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        before = handler_at(args.before, d)
        broker = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": os.path.join(d, "data"),
                                     "log.segment.bytes": 1 << 30}))
        broker.startup()
        try:
            broker.topics.create("hint", args.partitions)
            targets = {"before v9 (limit)": (before, 9), "now v9": (current.handle_produce, 9),
                       "now v10": (current.handle_produce, 10)}
            bodies = {v: request_body(v, args.partitions) for v in (9, 10)}
            for name, (h, v) in targets.items():     # warm-up: codecs compiled, log mapped
                run(broker, h, v, bodies[v], 1000)
            times = {name: [] for name in targets}
            for _ in range(args.rounds):
                for name, (h, v) in targets.items():
                    times[name].append(run(broker, h, v, bodies[v], args.requests))
        finally:
            broker.shutdown(10)
    limit = times["before v9 (limit)"]
    print(f"{args.partitions} partition(s) per Produce, {args.requests} requests x {args.rounds} rounds")
    print("| path | best µs/request | median | best vs limit | median per-round ratio |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        ratios = [t / lim for t, lim in zip(ts, limit)]
        print(f"| {name} | {min(ts) * 1e6:.2f} | {statistics.median(ts) * 1e6:.2f} | "
              f"{min(ts) / min(limit):.3f}x | {statistics.median(ratios):.3f}x |")


if __name__ == "__main__":
    main()
