"""What the request path records for Prometheus: per-topic counters and per-API request times.

This module is the hot half of the broker's metrics and imports nothing beyond the standard
library; :mod:`.metrics_export` is the scrape half (it reads these numbers and the state the
broker already keeps, and serves them with ``prometheus_client``). The broker builds a
:class:`BrokerMetrics` only when ``metrics.port`` is set; otherwise ``Broker.metrics`` is None and
each hook costs the handlers one ``is None`` test.

Cost (DESIGN §1.3, no per-record work): Produce records once per partition appended (its record
count is the offset span the append was given, its bytes the batch bytes written), Fetch once
per topic answered, every request once when its response has left (five bucket increments);
nothing walks records. Each thread counts into its own :class:`_Counts` (no lock on the request
path, and no increment lost between threads); a scrape adds the threads' counts up.

Names follow Kafka's JMX MBeans as Prometheus' JMX exporter spells them (``domain_type_name``,
lower case, ``_total`` on counters, times in seconds instead of ms); the mapping:

* ``kafka_server_brokertopicmetrics_messagesin_total{topic}`` -- kafka.server:type=BrokerTopicMetrics MessagesInPerSec
* ``kafka_server_brokertopicmetrics_bytesin_total{topic}`` -- BytesInPerSec: record-batch bytes appended
* ``kafka_server_brokertopicmetrics_bytesout_total{topic}`` -- BytesOutPerSec: consumers' fetches
* ``kafka_server_brokertopicmetrics_replicationbytesout_total{topic}`` -- BrokerTopicMetrics ReplicationBytesOutPerSec
* ``kafka_server_brokertopicmetrics_replicationbytesin_total{topic}`` -- ReplicationBytesInPerSec: a follower's appends
* ``kafka_server_brokertopicmetrics_totalproducerequests_total{topic}`` -- BrokerTopicMetrics TotalProduceRequestsPerSec
* ``kafka_server_brokertopicmetrics_totalfetchrequests_total{topic}`` -- BrokerTopicMetrics TotalFetchRequestsPerSec
* ``kafka_server_brokertopicmetrics_failedproducerequests_total{topic}`` -- FailedProduceRequestsPerSec (per partition)
* ``kafka_server_brokertopicmetrics_failedfetchrequests_total{topic}`` -- FailedFetchRequestsPerSec (per partition)
* ``kafka_network_requestmetrics_totaltime_seconds{request}`` -- kafka.network:type=RequestMetrics,name=TotalTimeMs
* ``kafka_network_requestmetrics_requestqueuetime_seconds{request}`` -- RequestQueueTimeMs: frame read to handler
* ``kafka_network_requestmetrics_localtime_seconds{request}`` -- LocalTimeMs: the handler
* ``kafka_network_requestmetrics_remotetime_seconds{request}`` -- RemoteTimeMs: purgatory (long poll, acks=all)
* ``kafka_network_requestmetrics_responsesendtime_seconds{request}`` -- ResponseSendTimeMs (incl. quota delays)
* ``kafka_server_delayedoperationpurgatory_purgatorysize{delayedoperation}`` -- DelayedOperationPurgatory PurgatorySize
* ``kafka_server_socketservermetrics_connection_count`` -- socket-server-metrics connection-count
* ``kafka_network_processor_idle_seconds_total{networkprocessor}`` -- Processor IdlePercent (take its rate())
* ``kafka_server_socketservermetrics_successful_authentication_total{listener}`` -- socket-server-metrics
  successful-authentication-total (take its rate() for -rate): connections that became ready, as Kafka counts
  them: every PLAINTEXT connection, SSL ones once their handshake is done, SASL ones once authenticated
* ``kafka_server_socketservermetrics_failed_authentication_total{listener}`` -- failed-authentication-total
  (failed SASL exchanges and TLS handshakes)
* ``kafka_server_socketservermetrics_successful_reauthentication_total{listener}`` -- successful-reauthentication-total
  (KIP-368)
* ``kafka_server_socketservermetrics_failed_reauthentication_total{listener}`` -- failed-reauthentication-total
* ``kafka_server_socketservermetrics_successful_authentication_no_reauth_total{listener}`` --
  successful-authentication-no-reauth-total: authenticated connections whose client cannot re-authenticate
  (SaslAuthenticate v0 or the unframed v0 exchange; PLAINTEXT and SSL connections)
* ``kafka_server_socketservermetrics_reauthentication_latency_seconds{listener}`` (count, sum) and
  ``..._reauthentication_latency_max_seconds{listener}`` -- reauthentication-latency-avg/-max: from the
  re-authenticating SaslHandshake to the exchange's end (the max since start-up; Kafka's is over its last
  sample windows)
* ``kafka_log_logflushstats_logflushrateandtime_seconds`` -- kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs
* ``kafka_log_log_size{topic,partition}`` -- kafka.log:type=Log,name=Size
* ``kafka_log_log_numlogsegments{topic,partition}`` -- kafka.log:type=Log,name=NumLogSegments
* ``kafka_log_log_logendoffset{topic,partition}`` -- kafka.log:type=Log,name=LogEndOffset
* ``kafka_server_replicamanager_underreplicatedpartitions`` -- ReplicaManager UnderReplicatedPartitions
* ``kafka_server_replicamanager_isrshrinks_total`` -- ReplicaManager IsrShrinksPerSec
* ``kafka_server_replicamanager_isrexpands_total`` -- ReplicaManager IsrExpandsPerSec
* ``kafka_controller_kafkacontroller_offlinepartitionscount`` -- KafkaController OfflinePartitionsCount
* ``kafka_server_fetchsessioncache_numincrementalfetchsessions`` -- FetchSessionCache NumIncrementalFetchSessions
* ``kafka_server_fetchsessioncache_numincrementalfetchpartitionscached`` -- NumIncrementalFetchPartitionsCached
* ``kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total`` -- IncrementalFetchSessionEvictionsPerSec
* ``kafka_consumergroup_lag{group,topic,partition}`` -- none in Kafka: kafka_exporter's name; high watermark -
  committed, reported by the group's coordinator for the partitions it holds a replica of

The request-time histograms share :data:`TIME_BUCKETS`. A request whose connection closes before
its response has left is not timed.

Example::

    >>> m = BrokerMetrics()
    >>> m.produced("orders", records=3, nbytes=120); m.produced("orders", records=2, nbytes=90)
    >>> m.topic_counts()["orders"].messages_in, m.topic_counts()["orders"].bytes_in
    (5, 210)
    >>> m.request_done(0, received=1.0, started=1.001, returned=1.002, queued=1.002, sent=1.0025)
    >>> times = m.request_times()[0]; times.count, round(times.sums[TOTAL], 6), round(times.sums[SEND], 6)
    (1, 0.0025, 0.0005)
"""
from __future__ import annotations

import threading
from bisect import bisect_left
from typing import Callable, Protocol, TypeVar

__all__ = ["BrokerMetrics", "TopicCounts", "RequestTimes", "AuthCounts", "TIME_BUCKETS", "QUEUE", "LOCAL", "REMOTE",
           "SEND", "TOTAL"]

#: upper bounds (seconds) of the request-time histograms' buckets; +Inf follows
TIME_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                2.5, 5.0, 10.0, 30.0)
#: the parts of a request's time, in :attr:`RequestTimes.buckets` order
QUEUE, LOCAL, REMOTE, SEND, TOTAL = range(5)


class _Counters:
    """Numbers in slots, all 0 at first, added up slot by slot across threads."""

    __slots__: tuple[str, ...] = ()

    def __init__(self):
        for name in self.__slots__:
            setattr(self, name, 0)

    def add(self, other) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class TopicCounts(_Counters):
    """One topic's counters (monotonic ints)."""

    __slots__ = ("messages_in", "bytes_in", "bytes_out", "replication_bytes_out", "replication_bytes_in",
                 "produce_requests", "fetch_requests", "failed_produce", "failed_fetch")
    messages_in: int
    bytes_in: int
    bytes_out: int
    replication_bytes_out: int
    replication_bytes_in: int
    produce_requests: int
    fetch_requests: int
    failed_produce: int
    failed_fetch: int


class RequestTimes:
    """One API's time histograms: ``buckets[part][i]`` counts times in bucket ``i`` (not
    cumulative; the last is +Inf), ``sums[part]`` their sum in seconds."""

    __slots__ = ("count", "buckets", "sums")

    def __init__(self):
        self.count = 0
        self.buckets = [[0] * (len(TIME_BUCKETS) + 1) for _ in range(5)]
        self.sums = [0.0] * 5

    def add(self, other: "RequestTimes") -> None:
        self.count += other.count
        for mine, theirs in zip(self.buckets, other.buckets):
            for i, n in enumerate(theirs):
                mine[i] += n
        for i, v in enumerate(other.sums):
            self.sums[i] += v


class AuthCounts(_Counters):
    """One listener's SASL outcomes (Kafka's socket-server-metrics): counters, and the
    re-authentications' latency (count, sum and max in seconds)."""

    __slots__ = ("successful", "failed", "successful_reauth", "failed_reauth", "no_reauth", "latency_count",
                 "latency_sum", "latency_max")
    successful: int
    failed: int
    successful_reauth: int
    failed_reauth: int
    no_reauth: int
    latency_count: int
    latency_sum: float
    latency_max: float

    def add(self, other: "AuthCounts") -> None:
        latency_max = max(self.latency_max, other.latency_max)     # a maximum, not a count
        super().add(other)
        self.latency_max = latency_max


class _Summable(Protocol):
    def add(self, other) -> None: ...


K = TypeVar("K")
C = TypeVar("C", bound=_Summable)


class _Counts:
    """One thread's counts: only that thread writes them; scrapes read them."""

    __slots__ = ("topics", "requests", "authentications")

    def __init__(self):
        self.topics: dict[str, TopicCounts] = {}
        self.requests: dict[int, RequestTimes] = {}
        self.authentications: dict[str, AuthCounts] = {}    # by listener

    def auth(self, listener: str) -> AuthCounts:
        counts = self.authentications.get(listener)
        if counts is None:
            counts = self.authentications[listener] = AuthCounts()
        return counts

    def topic(self, topic: str) -> TopicCounts:
        counts = self.topics.get(topic)
        if counts is None:
            counts = self.topics[topic] = TopicCounts()
        return counts


class BrokerMetrics:
    """Thread-safe: every hook may be called from any processor, handler or purgatory thread."""

    def __init__(self):
        self._local = threading.local()
        self._lock = threading.Lock()       # guards the list of threads' counts, not the counts
        self._all: list[_Counts] = []

    def _mine(self) -> _Counts:
        try:
            return self._local.counts
        except AttributeError:
            counts = self._local.counts = _Counts()
            with self._lock:
                self._all.append(counts)     # a finished thread's counts stay: counters never go back
            return counts

    # --- hooks on the request path (one call per partition or topic, never per record) ---
    def produced(self, topic: str, records: int, nbytes: int) -> None:
        """A leader appended ``records`` records in ``nbytes`` of record batches to ``topic``."""
        c = self._mine().topic(topic)
        c.messages_in += records
        c.bytes_in += nbytes

    def produce_requested(self, topic: str, failed_partitions: int) -> None:
        """A Produce request carried ``topic``; ``failed_partitions`` of its partitions failed."""
        c = self._mine().topic(topic)
        c.produce_requests += 1
        c.failed_produce += failed_partitions

    def fetched(self, topic: str, nbytes: int, failed_partitions: int, replication: bool) -> None:
        """A Fetch answer carried ``nbytes`` of ``topic`` (``replication``: to a follower)."""
        c = self._mine().topic(topic)
        c.fetch_requests += 1
        c.failed_fetch += failed_partitions
        if replication:
            c.replication_bytes_out += nbytes
        else:
            c.bytes_out += nbytes

    def replicated(self, topic: str, nbytes: int) -> None:
        """This broker, following, appended ``nbytes`` of ``topic`` fetched from its leader."""
        self._mine().topic(topic).replication_bytes_in += nbytes

    # --- SASL (the network layer counts TLS handshakes and connections that need no SASL) ---
    def authentication_failed(self, listener: str, reauthentication: bool = False) -> None:
        c = self._mine().auth(listener)
        if reauthentication:
            c.failed_reauth += 1
        else:
            c.failed += 1

    def authenticated(self, listener: str, can_reauthenticate: bool) -> None:
        """A SASL exchange completed on a new connection."""
        c = self._mine().auth(listener)
        c.successful += 1
        if not can_reauthenticate:
            c.no_reauth += 1

    def reauthenticated(self, listener: str, latency_s: float) -> None:
        c = self._mine().auth(listener)
        c.successful_reauth += 1
        c.latency_count += 1
        c.latency_sum += latency_s
        if latency_s > c.latency_max:
            c.latency_max = latency_s

    def request_done(self, api_key: int, received: float, started: float, returned: float, queued: float,
                     sent: float) -> None:
        """A request's response left at ``sent`` (``time.monotonic`` instants: frame read,
        handler called, handler returned, response queued on its connection)."""
        try:       # the common case in one step: this thread has counted this API before
            times = self._local.counts.requests[api_key]
        except (AttributeError, KeyError):
            times = self._mine().requests.setdefault(api_key, RequestTimes())
        times.count += 1
        (queue, local, remote, send, total), sums = times.buckets, times.sums
        v = started - received
        queue[bisect_left(TIME_BUCKETS, v)] += 1
        sums[QUEUE] += v
        v = returned - started
        local[bisect_left(TIME_BUCKETS, v)] += 1
        sums[LOCAL] += v
        v = queued - returned
        remote[bisect_left(TIME_BUCKETS, v)] += 1
        sums[REMOTE] += v
        v = sent - queued
        send[bisect_left(TIME_BUCKETS, v)] += 1
        sums[SEND] += v
        v = sent - received
        total[bisect_left(TIME_BUCKETS, v)] += 1
        sums[TOTAL] += v

    # --- reads for a scrape: every thread's counts added up ---
    def _threads(self) -> list[_Counts]:
        with self._lock:
            return list(self._all)

    def _summed(self, of: Callable[[_Counts], dict[K, C]], make: Callable[[], C]) -> dict[K, C]:
        """Each key's counts over every thread (``of`` picks which table of a thread's)."""
        out: dict[K, C] = {}
        for counts in self._threads():
            for key, c in list(of(counts).items()):     # one C call: atomic under the GIL
                total = out.get(key)
                if total is None:
                    total = out[key] = make()
                total.add(c)
        return out

    def topic_counts(self) -> dict[str, TopicCounts]:
        return self._summed(lambda counts: counts.topics, TopicCounts)

    def request_times(self) -> dict[int, RequestTimes]:
        return self._summed(lambda counts: counts.requests, RequestTimes)

    def authentications(self) -> dict[str, AuthCounts]:
        """Every listener's SASL outcomes."""
        return self._summed(lambda counts: counts.authentications, AuthCounts)
