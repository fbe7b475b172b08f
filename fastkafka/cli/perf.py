"""``fastkafka perf produce|consume``: throughput and latency, like Kafka's perf-test tools.

Example::

    $ fastkafka perf produce bench --num-records 1000000 --record-size 100
    1000000 records sent, 812345.1 records/sec (77.47 MB/sec), 12.3 ms avg latency, ...
    $ fastkafka perf consume bench --num-records 1000000
"""
from __future__ import annotations

import collections
import os
import sys
import time

from fastkafka.client.tools import client_config, run, tool_parser, tool_subparsers

EPILOG = """examples:
  fastkafka perf produce bench --num-records 1000000 --record-size 100
  fastkafka perf produce bench -n 200000 -s 1000 -X compression.type=lz4 -X batch.size=1000000
  fastkafka perf consume bench --num-records 1000000

produce reports records/s, MB/s and the latency from send() to acknowledgement (avg, max,
50th/95th/99th/99.9th percentiles); consume reads with fetch_arrow (Cython-decoded columns)."""


def _parser():
    p = tool_parser("fastkafka perf", "Producer / consumer performance test.", EPILOG)
    sub = tool_subparsers(p)
    pr = sub.add_parser("produce", help="produce records as fast as possible")
    pr.add_argument("topic")
    pr.add_argument("-n", "--num-records", type=int, default=100_000)
    pr.add_argument("-s", "--record-size", type=int, default=100, help="value bytes")
    pr.add_argument("--chunk", type=int, default=1000, help="records per send() (default 1000)")
    pr.add_argument("--progress", action="store_true", help="progress bar on stderr")
    co = sub.add_parser("consume", help="read records as fast as possible")
    co.add_argument("topic")
    co.add_argument("-n", "--num-records", type=int, default=100_000)
    co.add_argument("--fetch-size", type=int, default=8 << 20, help="bytes per partition fetch")
    co.add_argument("--timeout-ms", type=int, default=10_000, help="give up after this long idle")
    co.add_argument("--progress", action="store_true")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return run(lambda: (_produce if args.action == "produce" else _consume)(args), "fastkafka perf")


class _Progress:
    def __init__(self, total: int, on: bool):
        self.total, self.on, self.t0, self.last = total, on and total > 0, time.monotonic(), 0.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if not self.on or (now - self.last < 0.2 and done < self.total):
            return
        self.last = now
        frac = min(done / self.total, 1.0)
        bar = "#" * int(frac * 30)
        rate = done / max(now - self.t0, 1e-9)
        print(f"\r[{bar:<30}] {frac:6.1%} {rate:,.0f} rec/s", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.on:
            print(file=sys.stderr)


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty one)."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def _produce(args) -> int:
    from fastkafka.client.producer import CallbackHandler, Producer, ProducerData

    pending: dict[int, collections.deque] = collections.defaultdict(collections.deque)
    latencies: list[float] = []
    acked = [0]

    class Latency(CallbackHandler):
        # Each send() is one ProducerData on one partition; acks for that partition arrive in
        # order, so the oldest pending send is the one a batch acknowledges first.
        def on_acknowledgement(self, topic, partition, offset, count, error):
            now = time.monotonic()
            q = pending[partition]
            while count > 0 and q:
                t, n = q[0]
                take = min(n, count)
                latencies.extend([(now - t) * 1000] * take)
                count -= take
                acked[0] += take
                if take == n:
                    q.popleft()
                else:
                    q[0] = (t, n - take)

    cfg = client_config(args, **{"producer.type": "async", "callback.handler": Latency()})
    value = os.urandom(args.record_size)
    progress = _Progress(args.num_records, args.progress)
    with Producer(cfg) as p:
        parts = p.partitions_for(args.topic)
        t0 = time.monotonic()
        sent, i = 0, 0
        while sent < args.num_records:
            n = min(args.chunk, args.num_records - sent)
            part = parts[i % len(parts)]
            pending[part].append((time.monotonic(), n))
            p.send(ProducerData(args.topic, None, [value] * n, partition=part))
            sent += n
            i += 1
            progress.update(acked[0])
        p.flush()
        elapsed = time.monotonic() - t0
    progress.update(args.num_records)
    progress.done()
    latencies.sort()
    mb = args.num_records * args.record_size / elapsed / (1 << 20)
    print(f"{args.num_records} records sent, {args.num_records / elapsed:.1f} records/sec "
          f"({mb:.2f} MB/sec), {sum(latencies) / max(len(latencies), 1):.2f} ms avg latency, "
          f"{latencies[-1] if latencies else 0:.2f} ms max latency, "
          f"{percentile(latencies, .5):.0f} ms 50th, {percentile(latencies, .95):.0f} ms 95th, "
          f"{percentile(latencies, .99):.0f} ms 99th, {percentile(latencies, .999):.0f} ms 99.9th.")
    return 0


def _consume(args) -> int:
    from fastkafka.client.fetcher import EARLIEST, Fetcher
    from fastkafka.client.metadata import Cluster

    cluster = Cluster(client_config(args, **{"fetch.wait.max.ms": 100}))
    fetcher = Fetcher(cluster, fetch_size=args.fetch_size)
    progress = _Progress(args.num_records, args.progress)
    count = nbytes = 0
    try:
        fetcher.assign({(args.topic, p): EARLIEST for p in cluster.partitions_for(args.topic)})
        t0 = idle = time.monotonic()
        while count < args.num_records:
            got = 0
            for ms in fetcher.poll():
                rb = ms.to_arrow()
                got += rb.num_rows
                nbytes += rb.column("value").nbytes
            count += got
            progress.update(count)
            now = time.monotonic()
            if got:
                idle = now
            elif (now - idle) * 1000 > args.timeout_ms:
                break
        elapsed = time.monotonic() - t0
    finally:
        fetcher.close()
        cluster.close()
    progress.done()
    print(f"{count} records read, {count / elapsed:.1f} records/sec "
          f"({nbytes / elapsed / (1 << 20):.2f} MB/sec) in {elapsed:.2f} s.")
    return 0 if count >= args.num_records else 1
