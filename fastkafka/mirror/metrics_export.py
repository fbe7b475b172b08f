"""Serve a mirror's metrics to Prometheus: ``GET http://<host>:<--metrics-port>/metrics``.

Computed when Prometheus scrapes, on the endpoint's thread (:mod:`fastkafka.metrics_http`, the
broker's endpoint too): the streams' counts (:mod:`.metrics`, whose docstring lists the names and
their MirrorMaker 2 metrics) and what the mirror keeps anyway -- each stream's lag per partition,
the offset-sync writer's and the checkpointer's counters, the exactly-once deliveries' commits.

Needs ``prometheus_client`` (``pip install 'fastkafka[metrics]'``); the mirror imports this
module only when ``metrics_port`` is set.

Example (what a scrape of a running mirror shows; the test is tests/mirror/test_mirror_metrics.py)::

    m = Mirror("dc1:9092", "dc2:9092", topics=["orders"], metrics_port=9404)
    # curl -s localhost:9404/metrics | grep record_count
    # kafka_connect_mirror_mirrorsourceconnector_record_count_total{partition="0",source="source",
    #     target="target",topic="orders"} 1000.0
"""
from __future__ import annotations

from fastkafka.metrics_http import MetricsEndpoint, MetricsError

from .metrics import AGE_BUCKETS
from .naming import DEFAULT_SOURCE_ALIAS, DEFAULT_TARGET_ALIAS

try:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
except ImportError:    # MetricsEndpoint turns this into an error naming the extra
    pass

__all__ = ["MirrorMetricsEndpoint", "MetricsError"]

_SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"
_BOUNDS = [repr(b) for b in AGE_BUCKETS] + ["+Inf"]


def _cumulative(buckets: list[int]) -> list[tuple[str, int]]:
    out, running = [], 0
    for bound, n in zip(_BOUNDS, buckets):
        running += n
        out.append((bound, running))
    return out


class _MirrorCollector:
    """A prometheus_client collector reading one mirror at scrape time."""

    def __init__(self, mirror):
        self._mirror = mirror

    def collect(self):
        m = self._mirror.metrics
        if m is None:       # between runs
            return
        # MM2's tags: the clusters' aliases and the partition as the target names it
        selector = self._mirror.selector
        source = selector.source_alias or DEFAULT_SOURCE_ALIAS
        target = selector.target_alias or DEFAULT_TARGET_ALIAS
        labels = ["source", "target", "topic", "partition"]
        records = CounterMetricFamily(_SOURCE + "record_count", "Records copied and acknowledged by the target "
                                      "(MM2's record-count).", labels=labels)
        nbytes = CounterMetricFamily(_SOURCE + "byte_count", "Bytes of the records copied, as the source stored "
                                     "them (v2 record encoding, without batch headers; MM2's byte-count).",
                                     labels=labels)
        age = HistogramMetricFamily(_SOURCE + "record_age_seconds", "Time from a copied record's timestamp to "
                                    "its send, per chunk by its newest record (MM2's record-age-ms).",
                                    labels=labels)
        latency = HistogramMetricFamily(_SOURCE + "replication_latency_seconds", "Time from a copied record's "
                                        "timestamp to the target's acknowledgement, per chunk by its newest "
                                        "record (MM2's replication-latency-ms).", labels=labels)
        for (topic, p), c in sorted(m.partitions().items()):
            tp = [source, target, selector.target_topic(topic), str(p)]
            records.add_metric(tp, c.records)
            nbytes.add_metric(tp, c.bytes)
            age.add_metric(tp, _cumulative(c.age_buckets), c.age_sum)
            latency.add_metric(tp, _cumulative(c.latency_buckets), c.latency_sum)
        yield from (records, nbytes, age, latency)
        checkpoint = HistogramMetricFamily("kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_seconds",
                                           "Time from a checkpoint's translation to the target's acknowledgement "
                                           "(MM2's checkpoint-latency-ms).", labels=["source", "target"])
        checkpoint.add_metric([source, target], _cumulative(list(m.checkpoint_buckets)), m.checkpoint_sum)
        yield checkpoint
        yield from self._mirror_state()

    def _mirror_state(self):
        mirror = self._mirror
        streams = list(mirror.streams)
        lag = GaugeMetricFamily("fastkafka_mirror_lag", "The source partition's end (last stable offset) minus "
                                "the mirrored position, as of its last fetch; partitions this process owns.",
                                labels=["topic", "partition"])
        owned: dict = {}
        for s in streams:
            owned.update(s.stats.snapshot()[2])
        for (topic, p), n in sorted(owned.items()):
            lag.add_metric([topic, str(p)], n)
        yield lag
        writer, checkpointer = mirror.sync_writer, mirror.checkpointer
        yield CounterMetricFamily("fastkafka_mirror_offset_syncs", "Offset syncs written to the target.",
                                  value=writer.written if writer is not None else 0)
        yield CounterMetricFamily("fastkafka_mirror_checkpoints", "Checkpoints emitted to the target.",
                                  value=checkpointer.emitted if checkpointer is not None else 0)
        yield CounterMetricFamily("fastkafka_mirror_group_offsets_synced", "Consumer group offsets committed on "
                                  "the target from checkpoints (--sync-group-offsets).",
                                  value=checkpointer.synced if checkpointer is not None else 0)
        yield CounterMetricFamily("fastkafka_mirror_transactions", "Transactions committed (--exactly-once).",
                                  value=sum(s.delivery.transactions for s in streams))


class MirrorMetricsEndpoint(MetricsEndpoint):
    """The HTTP endpoint for one mirror, serving its ``metrics`` (a :class:`~.metrics.MirrorMetrics`,
    new for each ``run()``: counters start at 0 with each run, as with a restarted process).
    ``setting`` names the option in error messages."""

    def __init__(self, mirror, host: str, port: int, setting: str = "metrics_port"):
        super().__init__(_MirrorCollector(mirror), host, port, setting)
