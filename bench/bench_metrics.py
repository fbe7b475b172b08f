"""What Prometheus metrics (``metrics.port``) cost a request, measured where the machine's noise
cannot hide it: two brokers in this process, one with metrics on and one without, and the same
Produce and Fetch requests handed to each one's ``Dispatcher.handle`` with no socket in between,
alternating between the two batch by batch; thread CPU time per request is taken (the median and
the best over the batches). Requests: 1 MiB Produce/Fetch (bench_server.py's) and one-record
Produce / 4 KiB Fetch (bench_quotas.py's, where per-request work shows most).

The ratio leaves out what the network processor spends on a request (reading the frame,
sendfile), which metrics do not touch, so it overstates their share of a real request. The end
to end figure is ``bench_server.py --metrics`` (the broker with metrics on beside one without,
scraped every second), whose noise on this machine is larger than the effect.

Because a 1 MiB request's CPU time swings more between batches than metrics cost, the hooks a
request runs with metrics on are also timed alone (the same calls the dispatcher and the
handlers make, on a real :class:`BrokerMetrics`): divided by the broker's CPU per 1 MiB request
from ``bench_server.py`` (its CPU-seconds per GB x 1.048), that is metrics' share of a request.

Also: how long one scrape takes (GET /metrics over HTTP) for a broker holding many partitions;
it runs on the metrics server's thread and holds the GIL meanwhile.

Usage::

    .venv/bin/python bench/bench_metrics.py [--batches 11] [--partitions 1000]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import os
import shutil
import time
import urllib.request
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_quotas as Q  # noqa: E402
import loadgen as L  # noqa: E402

from fastkafka import protocol as P  # noqa: E402
from fastkafka.config import KafkaConfig  # noqa: E402
from fastkafka.server.broker import Broker  # noqa: E402
from fastkafka.server.dispatch import Dispatcher  # noqa: E402
from fastkafka.server.handlers import HANDLERS  # noqa: E402
from fastkafka.server.listener_security import ListenerSecurity, Session  # noqa: E402
from fastkafka.server.metrics import BrokerMetrics  # noqa: E402

BIG = "big"


def start(data: str, metrics: bool) -> Broker:
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data}
    if metrics:
        props.update({"metrics.port": 0, "metrics.host": "127.0.0.1"})
    b = Broker(KafkaConfig(props))
    b.startup()
    return b


def workloads(batch_small: int, batch_big: int) -> dict[str, list[bytes]]:
    big, per_batch = L.produce_frame(BIG, 1000)
    return {
        "produce 1 MiB": [big] * batch_big,
        "fetch 1 MiB": [L.fetch_frame(BIG, (i % 20) * per_batch) for i in range(batch_big)],
        "produce 1 record": [Q.produce_frame(100)] * batch_small,
        "fetch 4 KiB": [Q.fetch_frame(i % 2000) for i in range(batch_small)],
    }


class _Request(Q._Request):
    """bench_quotas' stand-in for a processor's request, which also runs the response-sent
    callback (metrics on) as the processor does once the response is written."""

    __slots__ = ("sent",)

    def __init__(self, frame: bytes, session):
        super().__init__(frame, session)
        self.sent = None

    def on_response_sent(self, callback) -> None:
        self.sent = callback

    def respond(self, chunks) -> None:
        super().respond(chunks)
        if self.sent is not None:
            self.sent(time.monotonic())


def cpu_per_request(dispatcher: Dispatcher, frames: list[bytes], session) -> float:
    reqs = [_Request(f, session) for f in frames]      # fresh frames: produce stamps offsets in place
    t = time.thread_time()
    for r in reqs:
        dispatcher.handle(r)
    return (time.thread_time() - t) / len(reqs) * 1e6


def hooks_alone(n: int = 100_000) -> dict[str, float]:
    """Thread CPU µs per request of what metrics add to a Produce and a Fetch (clock reads included)."""
    m, clock = BrokerMetrics(), time.monotonic
    out = {}
    for kind in ("produce", "fetch"):
        best = float("inf")
        for _ in range(5):
            t = time.thread_time()
            for _ in range(n):
                a = clock()
                b = clock()
                if kind == "produce":
                    m.produced("t", 1000, 1048576)
                    m.produce_requested("t", 0)
                else:
                    m.fetched("t", 1048576, 0, False)
                partial(m.request_done, 0, a, a, b, clock())(clock())   # as the dispatcher and processor do
            best = min(best, (time.thread_time() - t) / n * 1e6)
        out[kind] = best
    return out


def scrape_seconds(port: int, repeat: int = 5) -> tuple[float, bytes]:
    best, body = float("inf"), b""
    for _ in range(repeat):
        t = time.perf_counter()
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read()
        best = min(best, time.perf_counter() - t)
    return best, body


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=11, help="alternating batches per target and workload")
    ap.add_argument("--small", type=int, default=2000, help="small requests per batch")
    ap.add_argument("--big", type=int, default=20, help="1 MiB requests per batch")
    ap.add_argument("--partitions", type=int, default=1000, help="partitions for the scrape timing")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-metrics-")
    brokers = {"off": start(os.path.join(tmp, "off"), False), "on": start(os.path.join(tmp, "on"), True)}
    try:
        session = Session(ListenerSecurity("PLAINTEXT", "PLAINTEXT"))
        dispatchers = {name: Dispatcher(HANDLERS, b.advertised, b.quotas, metrics=b.metrics)
                       for name, b in brokers.items()}
        for name, b in brokers.items():
            dispatchers[name].services = b.services
        work = workloads(args.small, args.big)
        for b in brokers.values():
            for topic in (Q.TOPIC, BIG):
                L.create_topic(b.port, topic)
            L.replay(b.port, [Q.produce_frame(100)] * 2000, 4)           # data for the small fetches
            L.replay(b.port, work["produce 1 MiB"][:1] * 20, 4)          # and the 1 MiB ones
        got = {kind: {name: [] for name in brokers} for kind in work}
        for _ in range(args.batches):
            for kind, frames in work.items():
                for name, d in dispatchers.items():
                    got[kind][name].append(cpu_per_request(d, frames, session))
        print(f"Dispatcher.handle alone, thread CPU µs per request, {args.batches} alternating batches "
              f"({args.big} 1 MiB / {args.small} small requests each)")
        print("| requests | metrics off (median / best) | metrics on (median / best) | on vs off, throughput "
              "(median / best) | cost µs per request (median) |")
        print("|---|---|---|---|---|")
        for kind, by in got.items():
            off, on = statistics.median(by["off"]), statistics.median(by["on"])
            print(f"| {kind} | {off:.1f} / {min(by['off']):.1f} | {on:.1f} / {min(by['on']):.1f} "
                  f"| {off / on:.3f}x / {min(by['off']) / min(by['on']):.3f}x | {on - off:.2f} |")
        hooks = hooks_alone()
        print(f"\nThe hooks alone, thread CPU µs per request (best of 5 x 100000): produce {hooks['produce']:.2f}, "
              f"fetch {hooks['fetch']:.2f}")
        on = brokers["on"]
        L.call(on.port, P.ApiKey.CREATE_TOPICS, 4, {"topics": [{"name": "wide", "num_partitions": args.partitions,
                                            "replication_factor": 1, "assignments": [], "configs": []}],
                                "timeout_ms": 60000, "validate_only": False})
        secs, body = scrape_seconds(on.metrics_port)
        print(f"\nOne scrape of a broker with {body.count(b'kafka_log_log_size{')} partitions: "
              f"{secs * 1000:.1f} ms (best of 5), {len(body) / 1024:.0f} KiB")
    finally:
        for b in brokers.values():
            b.shutdown(10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
