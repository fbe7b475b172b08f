"""kafka-producer-perf-test: send records at a capped rate, time each from send() to its
acknowledgement, print a window line every reporting interval and percentiles at the end.

The lines have Kafka's shape, so scripts that parse the Java tool's output read ours::

    1232512 records sent, 246453.6 records/sec (235.04 MB/sec), 86.3 ms avg latency, 226.0 ms max latency.
    5000000 records sent, 247512.9 records/sec (236.05 MB/sec), 85.12 ms avg latency, 226.00 ms max latency, \
84 ms 50th, 160 ms 95th, 190 ms 99th, 220 ms 99.9th.

Latencies go into a :class:`~fastkafka.perf.histogram.LatencyHistogram`, so 10^8 records
cost the same memory as 10^3.

Example::

    >>> t = Throttle(1000, start=0.0)       # 1000 records/s from t=0
    >>> t.wait_s(500, now=0.25)             # 500 records are due at 0.5 s: a quarter second early
    0.25
    >>> t.wait_s(500, now=0.75)
    0.0
"""
from __future__ import annotations

import collections
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, TextIO

from . import client_settings
from .histogram import LatencyHistogram

__all__ = ["Throttle", "ProduceResult", "run_produce", "format_window", "format_total"]

_MB = 1024 * 1024


class Throttle:
    """A records/s cap as a schedule: record ``n`` may leave no earlier than ``start + n/rate``
    (Kafka's ThroughputThrottler sleeps off the same deficit). ``rate <= 0`` is no cap."""

    def __init__(self, rate: float, start: float | None = None):
        self.rate = rate
        self.start = time.monotonic() if start is None else start

    def wait_s(self, sent: int, now: float | None = None) -> float:
        """Seconds to wait before sending once ``sent`` records have gone."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        return max(0.0, self.start + sent / self.rate - now)

    def pace(self, sent: int) -> None:
        delay = self.wait_s(sent)
        if delay > 0:
            time.sleep(delay)


@dataclass
class ProduceResult:
    """What one run measured: ``histogram`` holds every acknowledged record's latency."""
    records: int
    record_size: int
    elapsed_s: float
    histogram: LatencyHistogram = field(default_factory=LatencyHistogram)

    @property
    def records_per_s(self) -> float:
        return self.records / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def bytes_per_s(self) -> float:
        return self.records_per_s * self.record_size


def format_window(records: int, elapsed_s: float, record_size: int, h: LatencyHistogram) -> str:
    """Kafka's progress line for one reporting window."""
    rate = records / elapsed_s if elapsed_s > 0 else 0.0
    return (f"{records} records sent, {rate:.1f} records/sec ({rate * record_size / _MB:.2f} MB/sec), "
            f"{h.mean_ms:.1f} ms avg latency, {h.max_ms:.1f} ms max latency.")


def format_total(r: ProduceResult) -> str:
    """Kafka's final line: rate, average and maximum, then the 50th/95th/99th/99.9th percentiles."""
    h = r.histogram
    p50, p95, p99, p999 = h.percentiles_ms()
    return (f"{r.records} records sent, {r.records_per_s:.1f} records/sec ({r.bytes_per_s / _MB:.2f} MB/sec), "
            f"{h.mean_ms:.2f} ms avg latency, {h.max_ms:.2f} ms max latency, {p50:.0f} ms 50th, "
            f"{p95:.0f} ms 95th, {p99:.0f} ms 99th, {p999:.0f} ms 99.9th.")


class _Stats:
    """Acknowledgements -> latencies, in the producer's sender thread. Each send() is one chunk
    on one partition, and a partition's acks come in order, so the oldest pending chunk of that
    partition is what an ack covers first."""

    def __init__(self, record_size: int, interval_s: float, out: TextIO | None):
        self.pending: dict[int, collections.deque] = collections.defaultdict(collections.deque)
        self.lock = threading.Lock()       # send() appends while the sender thread pops
        self.total = LatencyHistogram()
        self.window = LatencyHistogram()
        self.record_size, self.interval_s, self.out = record_size, interval_s, out
        self.window_start = time.monotonic()
        self.acked = 0
        self.error: BaseException | None = None

    def sent(self, partition: int, n: int, at: float) -> None:
        with self.lock:
            self.pending[partition].append([at, n])

    def acknowledged(self, partition: int, count: int, error) -> None:
        now = time.monotonic()
        if error is not None and self.error is None:
            self.error = error
        with self.lock:
            q = self.pending[partition]
            while count > 0 and q:
                entry = q[0]
                take = min(entry[1], count)
                if error is None:
                    ms = (now - entry[0]) * 1000.0
                    self.total.record_ms(ms, take)
                    self.window.record_ms(ms, take)
                    self.acked += take
                count -= take
                entry[1] -= take
                if entry[1] == 0:
                    q.popleft()
        if self.out is not None and now - self.window_start >= self.interval_s:
            print(format_window(self.window.count, now - self.window_start, self.record_size, self.window),
                  file=self.out, flush=True)
            self.window, self.window_start = LatencyHistogram(), now


def run_produce(config: Mapping[str, Any], topic: str, num_records: int, record_size: int, *, throughput: float = -1,
                chunk: int = 1000, reporting_interval_ms: int = 5000, out: TextIO | None = None,
                value: bytes | None = None) -> ProduceResult:
    """Send ``num_records`` values of ``record_size`` random bytes to ``topic`` (round robin
    over its partitions, ``chunk`` records per send()) at no more than ``throughput`` records/s
    (-1: as fast as possible), printing a window line to ``out`` every reporting interval
    (None: silent). ``config`` is the client's (Kafka names); the producer runs async.

    Example (a broker on 127.0.0.1:9092)::

        r = run_produce({"bootstrap.servers": "127.0.0.1:9092", "acks": "1"}, "bench", 10**6, 100)
        print(format_total(r))
    """
    from fastkafka.client.producer import CallbackHandler, Producer, ProducerData

    stats = _Stats(record_size, reporting_interval_ms / 1000.0, out)

    class Latency(CallbackHandler):
        def on_acknowledgement(self, topic, partition, offset, count, error):
            stats.acknowledged(partition, count, error)

    cfg = client_settings(config, producer_type="async", callback_handler=Latency())
    if throughput > 0:
        # ~100 sends a second: a chunk is one latency sample, so a slow cap must not batch
        # a whole second of records into one send()
        chunk = max(1, min(chunk, int(throughput // 100)))
    value = os.urandom(record_size) if value is None else value
    with Producer(cfg) as p:
        parts = p.partitions_for(topic)
        start = time.monotonic()
        throttle = Throttle(throughput, start)
        stats.window_start = start
        sent = i = 0
        while sent < num_records:
            throttle.pace(sent)
            n = min(chunk, num_records - sent)
            part = parts[i % len(parts)]
            stats.sent(part, n, time.monotonic())
            p.send(ProducerData(topic, None, [value] * n, partition=part))
            sent += n
            i += 1
        p.flush()
        elapsed = time.monotonic() - start
    if stats.error is not None:
        raise stats.error
    return ProduceResult(stats.acked, record_size, elapsed, stats.total)
