"""Mirror throughput (issue 20's benchmark) against a plain consume of the same source topic, in the
same run: ``fastkafka.mirror.Mirror`` copying a filled topic from one ``fastkafka serve`` to another,
at-least-once (target >= 0.7x) and --exactly-once (target >= 0.5x), against a consumer reading
every record of the source with the client the mirror is built on (fastkafka's Fetcher,
read_committed like the mirror). confluent-kafka's consumer is measured too, for reference.

1 KB records, 4 partitions, the topic filled two ways: by librdkafka (its ~1 MB batches: the
mirror copies them whole) and in 16 KiB batches (Java's default: the mirror re-batches them).
Each round runs the four readers of one fill in turn, rotating who goes first; every figure is
records/s from the first record seen to the last; for a mirror, from the first record the target
acknowledged to the last one acknowledged (at-least-once: the target's high watermarks) or
committed (exactly-once: the mirror group's offsets on the target). The source is read once before the rounds (page cache);
each mirror's target topic is deleted after its run (the target would otherwise grow by the whole
topic every run). The figures swing between runs on this VM (DESIGN §9): compare within a round.

With ``--metrics`` it measures what the Prometheus metrics cost instead (``metrics_port``): the
at-least-once mirror with metrics off and on, alternating which goes first, each round's ratio
on/off and their median (one scrape after each metered run checks that every record was counted).

    python bench/bench_mirror.py [--rounds 3] [--mb 128] [--metrics]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient as CAdmin, NewTopic  # noqa: E402

from support.brokers import free_port, serve_process, wait_listening  # noqa: E402
from fastkafka.client import AdminClient, Cluster  # noqa: E402
from fastkafka.client.fetcher import EARLIEST, Fetcher  # noqa: E402
from fastkafka.mirror import Mirror  # noqa: E402
from scratch import scratch_dir  # noqa: E402

VALUE = 1000
PARTS = 4
# librdkafka otherwise idles a second whenever its queue fills (see bench_client.py, RESULTS.md)
CONFLUENT_TUNED = {"fetch.queue.backoff.ms": 0, "queued.min.messages": 1_000_000}


def start_broker():
    port = free_port()
    proc = serve_process("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override",
                         f"log.dirs={scratch_dir('bench-mirror-')}", "--override",
                         "group.initial.rebalance.delay.ms=0", "--log-level", "WARNING")
    wait_listening(port, proc)
    return proc, f"127.0.0.1:{port}"


def fill(bootstrap: str, topic: str, n: int, batch_size: int) -> None:
    a = CAdmin({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, PARTS, 1)], operation_timeout=15).values():
        f.result()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": batch_size})
    value = b"x" * VALUE
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, key=b"%d" % i, partition=i % PARTS, timestamp=1_700_000_000_000 + i)
                break
            except BufferError:
                p.poll(0.0005)
    assert p.flush(300) == 0


def fetcher_consume(source: str, topic: str, n: int) -> float:
    """records/s of a consumer iterating every record (fastkafka Fetcher, read_committed)."""
    f = Fetcher(Cluster({"bootstrap.servers": source}), isolation_level=1)
    f.assign({(topic, p): EARLIEST for p in range(PARTS)})
    seen, first = 0, None
    try:
        while seen < n:
            for ms in f.poll():
                for _mo in ms:
                    seen += 1
                if first is None and seen:
                    first = (time.perf_counter(), seen)
        return (n - first[1]) / (time.perf_counter() - first[0])
    finally:
        f.close()
        f.cluster.close()


def confluent_consume(source: str, topic: str, n: int) -> float:
    c = Consumer({"bootstrap.servers": source, "group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False,
                  "isolation.level": "read_committed", **CONFLUENT_TUNED})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTS)])
    seen, first = 0, None
    while seen < n:     # never ask for more than is left: consume() would wait out its timeout
        got = sum(1 for m in c.consume(min(10000, n - seen), 1.0) if m.error() is None)
        seen += got
        if first is None and seen:
            first = (time.perf_counter(), seen)
    took = time.perf_counter() - first[0]
    c.close()
    return (n - first[1]) / took


def mirror_copy(source: str, target: str, topic: str, n: int, exactly_once: bool, metrics: bool = False) -> float:
    """records/s of a mirror copying ``topic`` to a fresh prefixed topic of the target."""
    alias = f"r{uuid.uuid4().hex[:8]}"
    m = Mirror(source, target, topics=[topic], source_alias=alias, prefix_topics=True,
               exactly_once=exactly_once, progress_interval_s=0, metrics_port=0 if metrics else None,
               metrics_host="127.0.0.1")
    runner = threading.Thread(target=m.run)
    runner.start()
    admin = AdminClient({"bootstrap.servers": target})
    mirrored = f"{alias}.{topic}"
    try:
        first = None
        while True:
            try:
                copied = sum(admin.list_offsets(mirrored, -1).values())     # acknowledged
                done = sum(admin.committed_offsets(m.group).values()) if exactly_once else copied
            except Exception:      # noqa: BLE001 - the topic or group is not there yet
                copied = done = 0
            now = time.perf_counter()
            if first is None and copied:      # the clock starts at the first copy on the target
                first = (now, copied)
            if done >= n:
                if metrics:
                    _check_counted(m, n)
                return (n - first[1]) / (now - first[0])
            if not runner.is_alive():
                raise RuntimeError("the mirror stopped before copying everything")
            time.sleep(0.01)
    finally:
        m.stop()
        runner.join()
        try:
            admin.delete_topics([mirrored])
        finally:
            admin.close()


def _check_counted(m: Mirror, n: int) -> None:
    """One scrape: the metered mirror counted every record (the figure is not of a broken meter)."""
    import urllib.request
    text = urllib.request.urlopen(f"http://127.0.0.1:{m.metrics_endpoint.port}/metrics", timeout=10).read().decode()
    counted = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith("kafka_connect_mirror_mirrorsourceconnector_record_count_total{"))
    if counted != n:
        raise RuntimeError(f"the metrics counted {counted:.0f} records of {n}")


def metrics_cost(source: str, target: str, topic: str, n: int, rounds: int, label: str) -> None:
    """The at-least-once mirror with metrics off and on, alternating; ratio on/off per round."""
    runs = {"off": lambda: mirror_copy(source, target, topic, n, False),
            "on": lambda: mirror_copy(source, target, topic, n, False, metrics=True)}
    ratios = []
    for r in range(rounds):
        got = {}
        for name in (("off", "on") if r % 2 == 0 else ("on", "off")):
            got[name] = runs[name]()
        ratios.append(got["on"] / got["off"])
        print(f"  {label} round {r}: metrics off {got['off']:,.0f}, on {got['on']:,.0f} records/s, "
              f"on/off {ratios[-1]:.3f}", flush=True)
    print(f"{label}: metrics on/off median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {rounds} rounds)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=128, help="MB of records per fill")
    ap.add_argument("--metrics", action="store_true", help="the cost of the Prometheus metrics (on vs off)")
    args = ap.parse_args()
    n = args.mb * 1_000_000 // VALUE
    print(f"{n} records of {VALUE} B in {PARTS} partitions, {args.rounds} rounds; records/s")
    for label, batch_size in (("librdkafka ~1 MB batches", 1_000_000), ("16 KiB batches", 16_384)):
        (sp, source), (tp, target) = start_broker(), start_broker()      # fresh clusters per fill
        try:
            topic = f"src-{batch_size}"
            fill(source, topic, n, batch_size)
            fetcher_consume(source, topic, n)          # warm the page cache
            if args.metrics:
                metrics_cost(source, target, topic, n, args.rounds, label)
                continue
            runs = {
                "consume (fastkafka)": lambda: fetcher_consume(source, topic, n),
                "consume (confluent)": lambda: confluent_consume(source, topic, n),
                "mirror at-least-once": lambda: mirror_copy(source, target, topic, n, False),
                "mirror exactly-once": lambda: mirror_copy(source, target, topic, n, True),
            }
            figures: dict[str, list[float]] = {k: [] for k in runs}
            names = list(runs)
            for r in range(args.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    figures[name].append(runs[name]())
                print(f"  {label} round {r}: " + ", ".join(
                    f"{k} {figures[k][-1]:,.0f}" for k in names), flush=True)
            med = {k: statistics.median(v) for k, v in figures.items()}
            base = med["consume (fastkafka)"]
            print(f"{label} (median of {args.rounds}):")
            for k in names:
                print(f"  {k:22s} {med[k]:>9,.0f} records/s {med[k] * VALUE / 1e6:7.1f} MB/s  "
                      f"{med[k] / base:5.2f}x of the fastkafka consume, "
                      f"{med[k] / med['consume (confluent)']:5.2f}x of confluent's")
        finally:
            for proc in (sp, tp):
                proc.terminate()
                proc.wait(30)


if __name__ == "__main__":
    main()
