"""Per-request cost (issue 18 item 4): one-record Produce requests against their limit, and 1,000 partitions.

Sections, each alternating its targets round by round (DESIGN §9), each target its own process:
  loadgen    the C load generator (loadgen.replay_small) replays one Produce v7 holding one 100-byte
             record (acks=1) over C connections with W requests in flight on each (``--shapes CxW,...``),
             against fastkafka and the small-request limit (loadgen ``--serve small``: a C loop that decodes
             the request header and answers a canned Produce response)
  librdkafka confluent-kafka's Producer with linger.ms=0 and batch.num.messages=1, so every record is
             its own Produce request, against the same two targets (a Python loop calls produce)
  kcat       the same through Debian's kcat (librdkafka in C reading records from stdin: no Python)
  partitions confluent-kafka (linger.ms=5) producing the same bytes to a topic of 1 partition and to one
             of ``--partitions`` partitions (records spread round-robin), on fastkafka and on the limit
             (whose Metadata gives the topic that many partitions)
  kcat-partitions  the same through kcat (random partitioner, sticky partitioning off)
  spread     the load generator replaying a Produce carrying one record for each of ``--partitions``
             partitions (a Java producer's request to a broker leading them all) against one carrying as
             many records for one partition: the broker's per-partition cost with no client in the way

Every function is importable (a pytest-benchmark wrapper can time ``loadgen_round`` and friends);
``main`` prints the figures: rates, CPU seconds per million requests, and ratios best-to-best and as
the median of per-round ratios.

Usage::

    .venv/bin/python bench/bench_small_requests.py [--rounds 5] [--requests 200000] [--shapes 4x16,1x5,1x1]
        [--sections loadgen,librdkafka,kcat,partitions,kcat-partitions] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen as L  # noqa: E402
from bench_server import Broker, alternate, start_fastkafka  # noqa: E402

from fastkafka import protocol as P  # noqa: E402

ROOT = L.ROOT
TOPIC = "small"


def start_limit(partitions: int = 1) -> Broker:
    """The small-request limit as its own process (its Metadata gives every topic ``partitions``)."""
    proc, port = L.start_reference("small", str(partitions))
    return Broker("limit", proc, port)


def create_topic(port: int, topic: str, partitions: int) -> None:
    resp = L.call(port, P.ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": []}], "timeout_ms": 30000, "validate_only": False})
    if resp.topics[0].error_code not in (0, 36):
        raise SystemExit(f"create topic {topic} on port {port}: error {resp.topics[0].error_code}")


def check_small(port: int, frame: bytes) -> None:
    """One request answered with no error (set-up, never timed)."""
    part = L.call_frame(port, frame, P.ApiKey.PRODUCE, 7).responses[0].partition_responses[0]
    if part.error_code:
        raise SystemExit(f"produce to port {port} failed with error {part.error_code}")


def loadgen_round(target: Broker, frame: bytes, requests: int, window: int, connections: int) -> dict:
    """One timed replay: {secs, cpu (the target's CPU seconds), bytes, requests}."""
    return L.measure_small(target.port, target.pid, frame, requests, window, connections)


def librdkafka_round(target: Broker, topic: str, records: int, value: bytes, partitions: int = 1,
                     linger_ms: int = 0, batch_records: int = 1) -> dict:
    """confluent-kafka producing ``records`` values of ``value`` (acks=1) round-robin over
    ``partitions``; {secs, cpu, requests (records)}. With the defaults every record is one request."""
    from confluent_kafka import Producer  # noqa: PLC0415
    conf = {"bootstrap.servers": f"127.0.0.1:{target.port}", "acks": 1, "linger.ms": linger_ms,
            "batch.num.messages": batch_records, "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 4 << 20, "enable.idempotence": False}
    p = Producer(conf)
    p.list_topics(topic, timeout=30)   # metadata before the clock starts
    failed = []

    def on_delivery(err, _msg):
        if err is not None:
            failed.append(err)
    c0 = L.cpu_seconds(target.pid)
    t0 = time.perf_counter()
    produce, poll = p.produce, p.poll
    for i in range(records):
        while True:
            try:
                produce(topic, value, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                poll(0.001)
        if i & 1023 == 0:
            poll(0)
    if p.flush(120) > 0:
        raise SystemExit(f"librdkafka producer to port {target.port}: records left after 120 s")
    secs = time.perf_counter() - t0
    if failed:
        raise SystemExit(f"librdkafka producer to port {target.port}: {len(failed)} failed, first {failed[0]}")
    return {"secs": secs, "cpu": L.cpu_seconds(target.pid) - c0, "requests": records,
            "bytes": records * len(value)}


def kcat_round(target: Broker, topic: str, records: int, value_size: int, partitions: int = 1,
               linger_ms: int = 0, batch_records: int = 1) -> dict:
    """Debian's kcat (librdkafka in C, no Python in the loop) producing ``records`` lines of
    ``value_size`` bytes (acks=1): to partition 0, or to random partitions when ``partitions`` > 1;
    {secs, cpu, requests (records)}. With the defaults every record is one request."""
    path = os.path.join(tempfile.gettempdir(), f"fk-kcat-{records}x{value_size}.txt")
    if not os.path.exists(path):
        with open(path + ".tmp", "wb") as f:
            f.write((b"x" * (value_size - 1) + b"\n") * records)
        os.replace(path + ".tmp", path)
    # random partitions need the sticky partitioner off: it would keep null-key records on one
    # partition for sticky.partitioning.linger.ms
    where = ["-p", "0"] if partitions == 1 else ["-X", "topic.partitioner=random",
                                                   "-X", "sticky.partitioning.linger.ms=0"]
    argv = ["kcat", "-P", "-b", f"127.0.0.1:{target.port}", "-t", topic, *where, "-X", "acks=1",
            "-X", f"linger.ms={linger_ms}", "-X", f"batch.num.messages={batch_records}",
            "-X", "queue.buffering.max.messages=2000000", "-X", "queue.buffering.max.kbytes=2000000"]
    c0 = L.cpu_seconds(target.pid)
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        done = subprocess.run(argv, stdin=f, capture_output=True, timeout=300)
    secs = time.perf_counter() - t0
    if done.returncode != 0 or done.stderr.strip():
        raise SystemExit(f"kcat to port {target.port}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return {"secs": secs, "cpu": L.cpu_seconds(target.pid) - c0, "requests": records,
            "bytes": records * value_size}


def ratios(results: dict, name: str, limit: str) -> tuple[float, float]:
    """(best-to-best, median of per-round) rate ratio of ``name`` against ``limit``."""
    rate = {k: [r["requests"] / r["secs"] for r in v] for k, v in results.items()}
    return (max(rate[name]) / max(rate[limit]),
            statistics.median(a / b for a, b in zip(rate[name], rate[limit])))


def print_section(title: str, results: dict, limit: str) -> None:
    print(f"\n{title}")
    for name, rounds in results.items():
        rates = [r["requests"] / r["secs"] for r in rounds]
        cpu = statistics.median(r["cpu"] / r["requests"] * 1e6 for r in rounds)
        line = (f"  {name:<22} best {max(rates) / 1e3:8.1f} k/s  median {statistics.median(rates) / 1e3:8.1f} k/s"
                f"  CPU {cpu:6.2f} s per M")
        if name != limit:
            best, per_round = ratios(results, name, limit)
            line += f"  vs {limit}: {best:.2f}x / {per_round:.2f}x"
        if name == "fastkafka" and "fastkafka (base)" in results:
            best, per_round = ratios(results, name, "fastkafka (base)")
            line += f"  vs base: {best:.2f}x / {per_round:.2f}x"
        print(line)


def loadgen_section(fk: Broker, limit: Broker, args, connections: int, window: int,
                    base: Broker | None = None) -> dict:
    frame = L.small_produce_frame(TOPIC, args.value_size)
    targets = {"fastkafka": fk, **({"fastkafka (base)": base} if base else {}), "limit": limit}
    n = args.requests if window * connections > 1 else args.requests // 10   # 1 in flight: ~20 k/s
    for t in targets.values():
        check_small(t.port, frame)
        L.replay_small(t.port, frame, n // 4, window, connections)   # warm-up
    return alternate(targets, args.rounds, lambda _n, t: loadgen_round(t, frame, n, window, connections))


def client_section(fk: Broker, limit: Broker, args, client, base: Broker | None = None) -> dict:
    """``client`` (librdkafka_round or kcat_round) sending one record per request."""
    targets = {"fastkafka": fk, **({"fastkafka (base)": base} if base else {}), "limit": limit}
    n = args.requests // 2
    for t in targets.values():
        client(t, TOPIC, n // 4, args.value_size)
    return alternate(targets, args.rounds, lambda _n, t: client(t, TOPIC, n, args.value_size))


def confluent_round(target: Broker, topic: str, records: int, value_size: int, partitions: int = 1,
                    linger_ms: int = 0, batch_records: int = 1) -> dict:
    """:func:`librdkafka_round` with kcat_round's arguments."""
    return librdkafka_round(target, topic, records, os.urandom(value_size), partitions, linger_ms, batch_records)


def partitions_section(brokers: list[Broker], args, client) -> tuple[dict, dict]:
    """(the first produce into freshly created topics, then the alternating rounds), keyed
    "<broker>: <n> partition(s)"; ``client`` is confluent_round or kcat_round."""
    n = args.partition_records
    one, many = f"{client.__name__}-one", f"{client.__name__}-many"   # fresh topics for each client
    cases = {}
    for b in brokers:
        if b.name != "limit":   # the limit's Metadata has every topic, with --partitions partitions
            create_topic(b.port, one, 1)
            create_topic(b.port, many, args.partitions)
        cases[f"{b.name}: 1 partition"] = (b, one, 1)
        cases[f"{b.name}: {args.partitions} partitions"] = (b, many, args.partitions)

    def run(_name, case):
        return client(case[0], case[1], n, args.record_size, case[2], linger_ms=5, batch_records=10000)
    fresh = alternate(cases, 1, run)   # the logs' first appends (index pages first touched)
    return fresh, alternate(cases, args.rounds, run)


def spread_section(brokers: list[Broker], args) -> dict:
    """The load generator replaying a Produce of ``--partitions`` partitions with one record each,
    and one of a single partition holding as many records (the same bytes), on each broker; keyed
    "<broker>: <n> partition(s)"."""
    frames = {"1 partition": L.spread_produce_frame("spread-one", 1, args.partitions, args.record_size),
              f"{args.partitions} partitions": L.spread_produce_frame("spread-many", args.partitions, 1,
                                                                      args.record_size)}
    cases = {}
    for b in brokers:
        create_topic(b.port, "spread-one", 1)
        create_topic(b.port, "spread-many", args.partitions)
        for name, frame in frames.items():
            part = L.call_frame(b.port, frame, P.ApiKey.PRODUCE, 7).responses[0].partition_responses
            if any(p.error_code for p in part):
                raise SystemExit(f"spread produce ({name}) failed: {[p.error_code for p in part]}")
            L.replay(b.port, [frame] * 16, 4)   # warm-up: every log has its first index entries
            cases[f"{b.name}: {name}"] = (b, frame)

    def run(_name, case):
        r = L.measure(case[0].port, case[0].pid, [case[1]] * args.spread_requests, 4)
        r["requests"] = args.spread_requests * args.partitions   # records
        return r
    return alternate(cases, args.rounds, run)


def print_by_broker(title: str, results: dict, limit: str) -> None:
    """Sections keyed "<broker>: <case>": one table per broker, each case against ``limit``."""
    for name in dict.fromkeys(k.split(":")[0] for k in results):
        print_section(f"{title}, {name}", {k.split(": ")[1]: v for k, v in results.items()
                                           if k.startswith(name + ":")}, limit)
    brokers = list(dict.fromkeys(k.split(":")[0] for k in results))
    if len(brokers) > 1 and "fastkafka (base)" in brokers:   # the A/B of each case
        for case in dict.fromkeys(k.split(": ")[1] for k in results):
            best, per_round = ratios(results, f"fastkafka: {case}", f"fastkafka (base): {case}")
            print(f"  {case}: fastkafka vs base {best:.2f}x / {per_round:.2f}x")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200_000, help="requests per load-generator round")
    ap.add_argument("--shapes", default="4x16,1x5,1x1",
                    help="load generator: CONNECTIONSxWINDOW (requests in flight on each), comma-separated")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--record-size", type=int, default=1000, help="record size of the partitions section")
    ap.add_argument("--partition-records", type=int, default=300_000)
    ap.add_argument("--spread-requests", type=int, default=200, help="requests per round of the spread section")
    ap.add_argument("--sections", default="loadgen,librdkafka,kcat,spread,partitions,kcat-partitions")
    ap.add_argument("--override", action="append", default=[], help="a broker property KEY=VALUE")
    ap.add_argument("--baseline", help="another checkout (extensions built) run beside this tree: an A/B")
    args = ap.parse_args(argv)
    todo = set(args.sections.split(","))
    with tempfile.TemporaryDirectory(prefix="fk-small-") as data:
        fk = start_fastkafka("fastkafka", ROOT, os.path.join(data, "a"), 0, tuple(args.override))
        base = None
        if args.baseline:
            base = start_fastkafka("fastkafka (base)", args.baseline, os.path.join(data, "b"), 0,
                                   tuple(args.override))
        limit = start_limit()
        try:
            for b in (fk, base):
                if b is not None:
                    create_topic(b.port, TOPIC, 1)
            if "loadgen" in todo:
                for shape in args.shapes.split(","):
                    conns, window = (int(x) for x in shape.split("x"))
                    res = loadgen_section(fk, limit, args, conns, window, base)
                    print_section(f"load generator: one {args.value_size} B record per Produce, {conns} "
                                  f"connection(s) x {window} in flight", res, "limit")
            for section, client in (("librdkafka", confluent_round), ("kcat", kcat_round)):
                if section in todo:
                    res = client_section(fk, limit, args, client, base)
                    print_section(f"{section}: one {args.value_size} B record per Produce (linger.ms=0, "
                                  f"batch.num.messages=1)", res, "limit")
            if "spread" in todo:
                res = spread_section([b for b in (fk, base) if b is not None], args)
                print_by_broker(f"load generator: Produce of {args.partitions} partitions x 1 record vs 1 partition "
                                f"x {args.partitions} records ({args.record_size} B, 4 in flight; rates in records)",
                                res, "1 partition")
            for section, client in (("partitions", confluent_round), ("kcat-partitions", kcat_round)):
                if section not in todo:
                    continue
                many_limit = start_limit(args.partitions)
                try:
                    fresh, res = partitions_section([b for b in (fk, base, many_limit) if b is not None], args,
                                                    client)
                finally:
                    many_limit.proc.kill()
                    many_limit.proc.wait()
                title = (f"{'confluent-kafka' if client is confluent_round else 'kcat'}, linger.ms=5: "
                         f"{args.record_size} B records over 1 vs {args.partitions} partitions")
                print_by_broker(f"{title}, first round, fresh logs", fresh, "1 partition")
                print_by_broker(f"{title}, rounds", res, "1 partition")
        finally:
            for b in (fk, base, limit):
                if b is None:
                    continue
                b.proc.kill()
                b.proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
