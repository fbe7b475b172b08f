"""What a mirror counts for Prometheus (``--metrics-port``): the hot half, standard library only.

:mod:`.metrics_export` is the scrape half: it adds these counts up and reads what the mirror
already keeps (each stream's lag, the offset syncs written, checkpoints emitted, group offsets
synced, transactions committed), and serves them with :mod:`fastkafka.metrics_http`. With
metrics off a stream holds no :class:`StreamMetrics` and pays one ``is None`` test per send.

Cost (no per-record Python work on the copy path): a stream counts once per source partition
and per copied chunk (a batch of up to 1 MB) after the target acknowledged it -- the partition's
record and byte counts, and the chunk's age and latency, weighted by its record count. A chunk's
records are timed by its newest record's timestamp (the batch's ``max_timestamp``, no record is
read): record age and replication latency are each chunk's smallest, a lower bound of MM2's
per-record figures by at most the chunk's spread of timestamps. Each stream writes only its own
counts; a scrape sums the streams' (a partition moving between streams keeps counting up).

Names: MirrorMaker 2's MBeans as Prometheus' JMX exporter spells them (``domain_type_name``,
lower case, ``_total`` on counters, ms as seconds), with MM2's tags: ``source`` and ``target``
(the clusters' aliases, MM2's defaults ``source`` and ``target`` when none is given), ``topic``
(the *target* topic: ``dc1.orders`` with prefixed names) and ``partition``:

* ``kafka_connect_mirror_mirrorsourceconnector_record_count_total{source,target,topic,partition}`` --
  record-count
* ``kafka_connect_mirror_mirrorsourceconnector_byte_count_total{...}`` -- byte-count: the records'
  bytes as the source stored them (v2 record encoding: keys, values, headers and their framing;
  not the batch headers). MM2 counts values only.
* ``kafka_connect_mirror_mirrorsourceconnector_record_age_seconds{...}`` -- record-age-ms
  (histogram): when the chunk was handed to the target producer, minus its newest timestamp
* ``kafka_connect_mirror_mirrorsourceconnector_replication_latency_seconds{...}`` --
  replication-latency-ms (histogram): when the target acknowledged it, minus its newest timestamp
* ``kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_seconds{source,target}`` --
  checkpoint-latency-ms (histogram, one observation per checkpoint): from the round that
  translated it to the target's acknowledgement (MM2 also tags it by group, topic, partition)
* ``fastkafka_mirror_lag{topic,partition}`` -- by *source* topic, as the progress line: the
  source's end (last stable offset, as the mirror reads read_committed) minus the mirrored
  position, as of the partition's last fetch
* ``fastkafka_mirror_offset_syncs_total``, ``fastkafka_mirror_checkpoints_total``,
  ``fastkafka_mirror_group_offsets_synced_total`` -- offset syncs written, checkpoints emitted,
  group offsets committed on the target (``--sync-group-offsets``)
* ``fastkafka_mirror_transactions_total`` -- transactions committed (``--exactly-once``)

Example::

    >>> from fastkafka.mirror.convert import Converted
    >>> from fastkafka.client.sender import EncodedRecords
    >>> m = MirrorMetrics(); s = m.stream()
    >>> chunk = (("orders", 0), EncodedRecords(bytearray(), 3, 2, 1_000, 1_000))
    >>> s.delivered([Converted(("orders", 0), 3, [chunk], 3, 360)], sent_ms=1_040, acked_ms=1_050)
    >>> c = m.partitions()[("orders", 0)]
    >>> c.records, c.bytes, round(c.age_sum, 6), round(c.latency_sum, 6), sum(c.latency_buckets)
    (3, 360, 0.12, 0.15, 3)
"""
from __future__ import annotations

import threading
from bisect import bisect_left

__all__ = ["MirrorMetrics", "StreamMetrics", "PartitionCounts", "AGE_BUCKETS"]

#: upper bounds (seconds) of the age and latency histograms' buckets (a backlog's records are
#: hours or days old); +Inf follows
AGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
               300.0, 900.0, 3600.0, 86400.0)
_INF = len(AGE_BUCKETS)


class PartitionCounts:
    """One source partition's counters (monotonic); the bucket lists are not cumulative."""

    __slots__ = ("records", "bytes", "age_buckets", "age_sum", "latency_buckets", "latency_sum")

    def __init__(self):
        self.records = self.bytes = 0
        self.age_buckets = [0] * (_INF + 1)
        self.latency_buckets = [0] * (_INF + 1)
        self.age_sum = self.latency_sum = 0.0

    def add(self, other: "PartitionCounts") -> None:
        self.records += other.records
        self.bytes += other.bytes
        self.age_sum += other.age_sum
        self.latency_sum += other.latency_sum
        for i, n in enumerate(other.age_buckets):
            self.age_buckets[i] += n
        for i, n in enumerate(other.latency_buckets):
            self.latency_buckets[i] += n


class StreamMetrics:
    """One stream's counts: only its thread writes them; scrapes read them."""

    def __init__(self):
        self.partitions: dict[tuple[str, int], PartitionCounts] = {}

    def delivered(self, parts, sent_ms: int, acked_ms: int) -> None:
        """``parts`` (:class:`~fastkafka.mirror.convert.Converted`) were handed to the target at
        ``sent_ms`` and acknowledged at ``acked_ms`` (epoch ms)."""
        for part in parts:
            c = self.partitions.get(part.source)
            if c is None:
                c = self.partitions[part.source] = PartitionCounts()
            c.records += part.records
            c.bytes += part.bytes
            for _tp, enc in part.chunks:
                ts, n = enc.max_timestamp, enc.count
                if ts < 0:          # a record without a timestamp: no age
                    continue
                age, latency = max(sent_ms - ts, 0) / 1000, max(acked_ms - ts, 0) / 1000
                c.age_buckets[bisect_left(AGE_BUCKETS, age)] += n
                c.age_sum += age * n
                c.latency_buckets[bisect_left(AGE_BUCKETS, latency)] += n
                c.latency_sum += latency * n


class MirrorMetrics:
    """The mirror's counts: one :class:`StreamMetrics` per stream, the checkpointer's latencies.
    Thread-safe: each writer has its own part, reads add them up."""

    def __init__(self):
        self._lock = threading.Lock()       # guards the list of streams' counts, not the counts
        self._streams: list[StreamMetrics] = []
        self.checkpoint_buckets = [0] * (_INF + 1)      # written by the checkpointer thread only
        self.checkpoint_sum = 0.0

    def stream(self) -> StreamMetrics:
        counts = StreamMetrics()
        with self._lock:
            self._streams.append(counts)
        return counts

    def checkpointed(self, n: int, latency_s: float) -> None:
        """``n`` checkpoints were acknowledged ``latency_s`` after their round translated them."""
        self.checkpoint_buckets[bisect_left(AGE_BUCKETS, latency_s)] += n
        self.checkpoint_sum += latency_s * n

    def partitions(self) -> dict[tuple[str, int], PartitionCounts]:
        with self._lock:
            streams = list(self._streams)
        out: dict[tuple[str, int], PartitionCounts] = {}
        for s in streams:
            for tp, c in list(s.partitions.items()):    # one C call: atomic under the GIL
                total = out.get(tp)
                if total is None:
                    total = out[tp] = PartitionCounts()
                total.add(c)
        return out
