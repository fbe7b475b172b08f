"""kafka-consumer-perf-test: read a topic from its start as fast as possible and print the
Java tool's columns (``start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec``).

There is no group here (partitions are assigned directly), so ``rebalance.time.ms`` is the
set-up a group join would include: finding the leaders and resolving the start offsets.
Bytes are key + value bytes, as Kafka counts them; records are decoded into Arrow columns
(``fetch_arrow``), the cheapest way our client reads.

Example::

    >>> r = ConsumeResult(records=2_000_000, nbytes=200 * 1024 * 1024, start=0.0, setup_s=0.5, end=4.5)
    >>> format_total(r).split(", ")[2:6]
    ['200.0000', '44.4444', '2000000', '444444.4444']
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, TextIO

from . import client_settings

__all__ = ["ConsumeResult", "HEADER", "DETAILED_HEADER", "run_consume", "format_total"]

HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
          "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DETAILED_HEADER = ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                   "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
_MB = 1024 * 1024


@dataclass
class ConsumeResult:
    """Counts and wall-clock instants (``time.time()`` seconds) of one run."""
    records: int
    nbytes: int
    start: float
    setup_s: float
    end: float

    @property
    def elapsed_s(self) -> float:
        return self.end - self.start

    @property
    def fetch_s(self) -> float:
        return self.elapsed_s - self.setup_s

    @property
    def bytes_per_s(self) -> float:
        return self.nbytes / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def fetch_bytes_per_s(self) -> float:
        return self.nbytes / self.fetch_s if self.fetch_s > 0 else 0.0


def _stamp(t: float) -> str:
    # Kafka's "yyyy-MM-dd HH:mm:ss:SSS"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f":{int(t * 1000) % 1000:03d}"


def _columns(mb: float, n: int, total_s: float, setup_s: float) -> str:
    fetch_s = total_s - setup_s
    return (f"{mb:.4f}, {mb / total_s if total_s > 0 else 0:.4f}, {n}, {n / total_s if total_s > 0 else 0:.4f}, "
            f"{setup_s * 1000:.0f}, {fetch_s * 1000:.0f}, {mb / fetch_s if fetch_s > 0 else 0:.4f}, "
            f"{n / fetch_s if fetch_s > 0 else 0:.4f}")


def format_total(r: ConsumeResult) -> str:
    """The row under :data:`HEADER`."""
    return f"{_stamp(r.start)}, {_stamp(r.end)}, " + _columns(r.nbytes / _MB, r.records, r.elapsed_s, r.setup_s)


def _sizes(rb) -> int:
    import pyarrow.compute as pc
    n = 0
    for name in ("key", "value"):
        s = pc.sum(pc.binary_length(rb.column(name))).as_py()
        n += s or 0
    return n


def run_consume(config: Mapping[str, Any], topic: str, num_records: int, *, fetch_size: int = 8 << 20,
                timeout_ms: int = 10_000, reporting_interval_ms: int = 5000,
                detailed: TextIO | None = None) -> ConsumeResult:
    """Read up to ``num_records`` records of every partition of ``topic`` from the earliest
    offset; stop early after ``timeout_ms`` without a record. With ``detailed`` (a stream) a
    line of :data:`DETAILED_HEADER`'s columns is written there every reporting interval,
    for that interval.

    Example (a broker on 127.0.0.1:9092)::

        r = run_consume({"bootstrap.servers": "127.0.0.1:9092"}, "bench", 10**6)
        print(HEADER); print(format_total(r))
    """
    from fastkafka.client.fetcher import EARLIEST, Fetcher
    from fastkafka.client.metadata import Cluster

    start = time.time()
    cluster = Cluster(client_settings(config, fetch_wait_max_ms=100))
    fetcher = Fetcher(cluster, fetch_size=fetch_size)
    count = nbytes = 0
    try:
        fetcher.assign({(topic, p): EARLIEST for p in cluster.partitions_for(topic)})
        setup_s = time.time() - start
        idle = last = time.monotonic()
        last_count, last_bytes = 0, 0
        while count < num_records:
            got = 0
            for ms in fetcher.poll():
                rb = ms.to_arrow()
                got += rb.num_rows
                nbytes += _sizes(rb)
            count += got
            now = time.monotonic()
            if got:
                idle = now
            elif (now - idle) * 1000 > timeout_ms:
                break
            if detailed is not None and (now - last) * 1000 >= reporting_interval_ms:
                print(f"{_stamp(time.time())}, 0, " + _columns((nbytes - last_bytes) / _MB, count - last_count,
                                                                 now - last, 0.0), file=detailed, flush=True)
                last, last_count, last_bytes = now, count, nbytes
        end = time.time()
    finally:
        fetcher.close()
        cluster.close()
    return ConsumeResult(count, nbytes, start, setup_s, end)


