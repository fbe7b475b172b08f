"""Serve the broker's metrics to Prometheus: ``GET http://<metrics.host>:<metrics.port>/metrics``.

Everything is computed when Prometheus scrapes, on the HTTP server's own thread: the counters
the request path kept (:mod:`.metrics`, copied under their lock) and state the broker already
holds — purgatory sizes, connections, the network processors' idle time, each local log's size,
segment count, end offset and flushes, the replica manager's ISR upkeep, the controller's view
of leaderless partitions, consumer groups' committed offsets. A scrape never blocks a request
longer than one copy of those counters. Metric names and their Kafka MBeans: :mod:`.metrics`.

Needs ``prometheus_client`` (``pip install 'fastkafka[metrics]'``); the broker imports this
module only when ``metrics.port`` is set.

Example (a broker with metrics on an ephemeral port)::

    >>> import tempfile, urllib.request
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.server.broker import Broker
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> b = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": tmpdir.name,
    ...                         "metrics.port": 0}))
    >>> b.startup()
    >>> text = urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics").read().decode()
    >>> "kafka_server_socketservermetrics_connection_count 0.0" in text
    True
    >>> b.shutdown(); tmpdir.cleanup()
"""
from __future__ import annotations

from fastkafka import protocol as P
from fastkafka.metrics_http import MetricsEndpoint, MetricsError

from .metrics import LOCAL, QUEUE, REMOTE, SEND, TIME_BUCKETS, TOTAL, AuthCounts, BrokerMetrics
from .partition import LEADER

try:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
    from prometheus_client.core import SummaryMetricFamily
except ImportError:    # MetricsEndpoint turns this into a start-up error naming the extra
    pass

__all__ = ["MetricsExporter", "MetricsError"]

_TOPIC_COUNTERS = (  # TopicCounts attribute -> metric suffix, help
    ("messages_in", "messagesin", "Records appended by this broker as leader."),
    ("bytes_in", "bytesin", "Record-batch bytes appended by this broker as leader (produce requests)."),
    ("bytes_out", "bytesout", "Record bytes sent to consumers in Fetch responses."),
    ("replication_bytes_out", "replicationbytesout", "Record bytes sent to followers in Fetch responses."),
    ("replication_bytes_in", "replicationbytesin", "Record bytes this broker appended as a follower."),
    ("produce_requests", "totalproducerequests", "Produce requests, counted once per topic they carry."),
    ("fetch_requests", "totalfetchrequests", "Fetch responses, counted once per topic they carry."),
    ("failed_produce", "failedproducerequests", "Partitions of Produce requests answered with an error."),
    ("failed_fetch", "failedfetchrequests", "Partitions of Fetch responses answered with an error."),
)
_TIME_PARTS = ((TOTAL, "totaltime", "Request time from frame read to the response's last byte written."),
               (QUEUE, "requestqueuetime", "Request time from frame read to handler start."),
               (LOCAL, "localtime", "Time in the request's handler."),
               (REMOTE, "remotetime", "Time a request waited in a purgatory (long poll, acks=all)."),
               (SEND, "responsesendtime", "Time from response queued to its last byte written."))
_BOUNDS = [repr(b) for b in TIME_BUCKETS] + ["+Inf"]
# socket-server-metrics, in the order _authentications gives their values
_AUTH_COUNTERS = (
    ("successful_authentication", "Connections authenticated (PLAINTEXT ones when opened, SSL ones after the "
                                  "handshake, SASL ones after the exchange)."),
    ("failed_authentication", "Failed SASL authentications and TLS handshakes."),
    ("successful_reauthentication", "Successful SASL re-authentications (KIP-368)."),
    ("failed_reauthentication", "Failed SASL re-authentications (KIP-368)."),
    ("successful_authentication_no_reauth", "Connections authenticated whose client cannot re-authenticate."),
)


class _BrokerCollector:
    """A prometheus_client collector reading one broker's state at scrape time."""

    def __init__(self, broker, metrics: BrokerMetrics):
        self._broker = broker
        self._metrics = metrics

    def collect(self):
        yield from self._topic_counters()
        yield from self._request_times()
        yield from self._network()
        yield from self._logs()
        yield from self._replication()
        yield from self._lag()
        yield from self._fetch_sessions()

    def _fetch_sessions(self):
        cache = self._broker.fetch_sessions
        yield GaugeMetricFamily("kafka_server_fetchsessioncache_numincrementalfetchsessions",
                                "Incremental fetch sessions (KIP-227) in the cache.", value=cache.num_sessions())
        yield GaugeMetricFamily("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
                                "Partitions held by the incremental fetch sessions.", value=cache.num_partitions())
        yield CounterMetricFamily("kafka_server_fetchsessioncache_incrementalfetchsessionevictions",
                                  "Fetch sessions evicted to make room for new ones.", value=cache.evictions)

    def _topic_counters(self):
        counts = self._metrics.topic_counts()
        topics = self._broker.topics
        if topics is not None:     # a deleted topic's series go, as Kafka removes its BrokerTopicMetrics
            known = topics.all()
            counts = {t: c for t, c in counts.items() if t in known}
        for attr, suffix, doc in _TOPIC_COUNTERS:
            fam = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{suffix}", doc, labels=["topic"])
            for topic, c in counts.items():
                fam.add_metric([topic], getattr(c, attr))
            yield fam

    def _request_times(self):
        times = self._metrics.request_times()
        for part, name, doc in _TIME_PARTS:
            fam = HistogramMetricFamily(f"kafka_network_requestmetrics_{name}_seconds", doc, labels=["request"])
            for key, t in sorted(times.items()):
                cumulative, running = [], 0
                for bound, n in zip(_BOUNDS, t.buckets[part]):
                    running += n
                    cumulative.append((bound, running))
                fam.add_metric([P.API_NAMES.get(key, str(key))], cumulative, t.sums[part])
            yield fam

    def _network(self):
        b = self._broker
        purgatories = [("Fetch", b.fetch_purgatory)]
        if b.replicas is not None:
            purgatories += [("Produce", b.replicas.produce_purgatory),
                            ("DeleteRecords", b.replicas.delete_records_purgatory)]
        fam = GaugeMetricFamily("kafka_server_delayedoperationpurgatory_purgatorysize",
                                "Requests waiting in a purgatory.", labels=["delayedoperation"])
        for name, purgatory in purgatories:
            if purgatory is not None:
                fam.add_metric([name], purgatory.watched())
        yield fam
        server = b.socket_server
        yield GaugeMetricFamily("kafka_server_socketservermetrics_connection_count", "Open client connections.",
                                value=server.connection_count if server is not None else 0)
        fam = CounterMetricFamily("kafka_network_processor_idle_seconds", "Seconds a network processor spent "
                                  "waiting in select(); its rate() is the idle ratio.", labels=["networkprocessor"])
        for p in server.processors if server is not None else ():
            fam.add_metric([str(p.index)], p.idle_seconds)
        yield fam
        yield from self._authentications(server)

    def _authentications(self, server):
        sasl = self._metrics.authentications()
        network: dict[str, list[int]] = {}     # listener -> [successful, failed] without SASL
        for p in server.processors if server is not None else ():
            for listener, counts in p.authentication_counts().items():
                total = network.setdefault(listener, [0, 0])
                total[0] += counts[0]
                total[1] += counts[1]
        listeners = sorted(set(sasl) | set(network) | set(self._broker.listener_security or ()))
        prefix = "kafka_server_socketservermetrics_"
        families = [CounterMetricFamily(prefix + name, doc, labels=["listener"]) for name, doc in _AUTH_COUNTERS]
        latency = SummaryMetricFamily(prefix + "reauthentication_latency_seconds",
                                      "Re-authentications (KIP-368): from SaslHandshake to the exchange's end.",
                                      labels=["listener"])
        latency_max = GaugeMetricFamily(prefix + "reauthentication_latency_max_seconds",
                                        "The longest re-authentication since start-up.", labels=["listener"])
        no_sasl = AuthCounts()
        for listener in listeners:
            c = sasl.get(listener, no_sasl)
            ready, refused = network.get(listener, (0, 0))
            values = (c.successful + ready, c.failed + refused, c.successful_reauth, c.failed_reauth,
                      c.no_reauth + ready)
            for fam, value in zip(families, values):
                fam.add_metric([listener], value)
            latency.add_metric([listener], count_value=c.latency_count, sum_value=c.latency_sum)
            latency_max.add_metric([listener], c.latency_max)
        yield from families
        yield latency
        yield latency_max

    def _logs(self):
        logs = self._broker.logs.logs() if self._broker.logs is not None else []
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's segment files.", labels=labels)
        segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments of the partition.", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "The partition's log end offset.", labels=labels)
        flushes, flush_seconds = 0, 0.0
        for lg in logs:
            tp = [lg.topic, str(lg.partition)]
            segs = lg.segments
            size.add_metric(tp, sum(s.size for s in segs))
            segments.add_metric(tp, len(segs))
            end.add_metric(tp, lg.log_end_offset)
            flushes += lg.flush_count
            flush_seconds += lg.flush_seconds
        yield from (size, segments, end)
        yield SummaryMetricFamily("kafka_log_logflushstats_logflushrateandtime_seconds",
                                  "Log flushes (fdatasync of a partition's unflushed segments) and their time.",
                                  count_value=flushes, sum_value=flush_seconds)

    def _replication(self):
        b = self._broker
        under = shrinks = expands = 0
        if b.replicas is not None:
            for part in b.replicas.partitions():
                if part.role == LEADER and len(part.isr) < len(part.replicas):
                    under += 1
            shrinks, expands = b.replicas.isr_shrinks, b.replicas.isr_expands
        yield GaugeMetricFamily("kafka_server_replicamanager_underreplicatedpartitions",
                                "Partitions this broker leads whose ISR is smaller than their replica list.",
                                value=under)
        yield CounterMetricFamily("kafka_server_replicamanager_isrshrinks", "ISR shrinks written by this leader.",
                                  value=shrinks)
        yield CounterMetricFamily("kafka_server_replicamanager_isrexpands", "ISR expansions written by this leader.",
                                  value=expands)
        offline = 0
        controller = b.controller
        if controller is not None and controller.active:     # Kafka: reported by the active controller
            md = b.metadata
            for name, info in md.topics().items():
                for p in range(info.partitions):
                    view = md.partition(name, p)
                    offline += view is not None and view.leader < 0
        yield GaugeMetricFamily("kafka_controller_kafkacontroller_offlinepartitionscount",
                                "Partitions without a leader (reported by the active controller).", value=offline)

    def _lag(self):
        # the high watermark, as kafka_exporter's latest offset: what a consumer can read
        fam = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus the group's committed offset, "
                                "for partitions with a replica on the group's coordinator.",
                                labels=["group", "topic", "partition"])
        svc, topics = self._broker.coordination, self._broker.topics
        if svc is not None and topics is not None:
            code, groups = svc.groups.list_groups()
            for group_id, _ in groups if code == 0 else ():
                code, offsets = svc.groups.fetch_offsets(group_id, None)
                for (t, p), committed in offsets.items() if code == 0 else ():
                    try:
                        end = topics.log(t, p).high_watermark
                    except Exception:       # not on this broker (or deleted): another broker reports it
                        continue
                    if committed is not None:
                        fam.add_metric([group_id, t, str(p)], max(end - committed.offset, 0))
        yield fam


class MetricsExporter(MetricsEndpoint):
    """The HTTP endpoint (:class:`~fastkafka.metrics_http.MetricsEndpoint`) for one broker."""

    def __init__(self, broker, metrics: BrokerMetrics, host: str, port: int):
        super().__init__(_BrokerCollector(broker, metrics), host, port, "metrics.port")
