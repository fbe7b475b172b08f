"""End-to-end latency, as Kafka's EndToEndLatency tool measures it: send one record, wait for
its acknowledgement, fetch until it comes back, and time the whole trip; ``n`` times, one record
in flight. Every record carries fresh random bytes and is checked on the way back, so a stale
or foreign record is an error, not a fast sample.

Output (Kafka prints the average and 50th/99th/99.9th in whole ms; we add the 95th and two
decimals, since on one machine the trip takes a fraction of a millisecond)::

    Avg latency: 0.2334 ms
    Percentiles: 50th = 0.21, 95th = 0.30, 99th = 0.62, 99.9th = 2.90

Example (a broker on 127.0.0.1:9092)::

    h = run_end_to_end({"bootstrap.servers": "127.0.0.1:9092"}, "e2e", 10_000, 100, acks="1")
    print(format_e2e(h))
"""
from __future__ import annotations

import os
import time
from typing import Any, Mapping

from fastkafka import errors

from . import client_settings
from .histogram import LatencyHistogram

__all__ = ["run_end_to_end", "format_e2e"]


def format_e2e(h: LatencyHistogram) -> str:
    """Kafka's two summary lines (percentiles in ms)."""
    p50, p95, p99, p999 = h.percentiles_ms()
    return (f"Avg latency: {h.mean_ms:.4f} ms\n"
            f"Percentiles: 50th = {p50:.2f}, 95th = {p95:.2f}, 99th = {p99:.2f}, 99.9th = {p999:.2f}")


def run_end_to_end(config: Mapping[str, Any], topic: str, num_records: int, record_size: int, *, acks: str = "1",
                   timeout_ms: int = 60_000) -> LatencyHistogram:
    """Produce→consume latency of ``num_records`` records of ``record_size`` bytes to
    partition 0 of ``topic`` (created by the broker if it auto-creates topics)."""
    from fastkafka.client.fetcher import LATEST, Fetcher
    from fastkafka.client.metadata import Cluster
    from fastkafka.client.producer import Producer, ProducerData

    h = LatencyHistogram()
    pcfg = client_settings(config, producer_type="sync", acks=acks, linger_ms=0)
    # a long poll with min.bytes 1 is answered as soon as the record lands
    ccfg = client_settings(config, fetch_wait_max_ms=timeout_ms, fetch_min_bytes=1)
    with Producer(pcfg) as producer:
        producer.partitions_for(topic)             # the topic exists before the fetcher resolves LATEST
        cluster = Cluster(ccfg)
        fetcher = Fetcher(cluster)
        try:
            fetcher.assign({(topic, 0): LATEST})
            for _ in range(num_records):
                value = os.urandom(record_size)
                t0 = time.perf_counter()
                producer.send(ProducerData(topic, None, [value], partition=0))
                got = None
                while got is None:
                    for ms in fetcher.poll():
                        for mo in ms:
                            got = mo.message.value
                            break
                    if got is None and (time.perf_counter() - t0) * 1000 > timeout_ms:
                        raise errors.RequestTimedOutError(f"record not fetched back within {timeout_ms} ms")
                h.record_ms((time.perf_counter() - t0) * 1000.0)
                if got != value:
                    raise errors.KafkaError("fetched a record that was not the one just sent "
                                            "(is another producer writing to partition 0?)")
        finally:
            fetcher.close()
            cluster.close()
    return h
