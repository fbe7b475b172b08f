"""The mirror: topic sync, streams and progress reporting around one ``run()``.

:class:`Mirror` is what ``fastkafka mirror`` runs. ``run()`` blocks: it prepares the target
topics (:mod:`~fastkafka.mirror.topics`), starts ``num_streams`` streams
(:mod:`~fastkafka.mirror.stream`), then every ``refresh_interval_ms`` looks for new, grown or
reconfigured source topics and every ``progress_interval_s`` reports progress. ``stop()`` (any
thread, or SIGTERM through the command) makes ``run()`` return after each stream committed
what it delivered -- for exactly-once, after committing its open transactions. All state lives
in the two clusters (the group's offsets on the source, or on the target with exactly-once;
the topics themselves, the offset syncs and checkpoints on the target), so a mirror restarted
anywhere carries on where the last one stopped.

Offset translation (MirrorMaker 2's): the streams write offset syncs to the target
(:mod:`~fastkafka.mirror.syncs`) and a checkpointer thread translates the source's consumer
groups' offsets into checkpoints there (:mod:`~fastkafka.mirror.checkpoints`).
"""
from __future__ import annotations

import logging
import re
import threading
import time
from typing import Callable

from fastkafka.client import AdminClient, ClientConfig

from fastkafka import errors

from .checkpoints import EMIT_CHECKPOINTS_INTERVAL_S, Checkpointer
from .convert import Route
from .fatal import FATAL
from .internal import ensure_topic
from .metrics import MirrorMetrics
from .naming import TopicSelector, checkpoints_topic, offset_syncs_topic
from .progress import lag_by_topic, progress_line
from .stream import Stream
from .syncs import OFFSET_LAG_MAX, SyncWriter
from .topics import TopicSync

__all__ = ["Mirror", "DEFAULT_GROUP"]

log = logging.getLogger("fastkafka.mirror")
DEFAULT_GROUP = "KafkaMirror"    # the group of the Kafka wiki's MirrorMaker examples


def _props(cluster: str | dict, defaults: dict) -> dict:
    props = {"bootstrap.servers": cluster} if isinstance(cluster, str) else dict(cluster)
    return {**defaults, **props}


def _let_in(side: str, admin: AdminClient, config: ClientConfig) -> None:
    """Fail now, naming the cluster, when it does not let the mirror in (see :mod:`.fatal`); any
    other error is left to the retries."""
    try:
        admin.list_topics()
    except FATAL as e:
        raise type(e)(f"the {side} cluster ({','.join(config['bootstrap.servers'])}) refused the mirror: {e}") from None
    except errors.KafkaError:
        pass


class Mirror:
    """Copies the selected topics of ``source`` to ``target`` until :meth:`stop`.

    ``source``/``target``: ``"host:port[,host:port]"`` or a dict of client properties (Kafka's
    names, ``bootstrap.servers`` included). Topics: ``topics`` (a list), ``whitelist`` or
    ``blacklist`` (regexes; default: every topic), new matching topics picked up within
    ``refresh_interval_ms``. ``source_alias``/``target_alias``/``prefix_topics``: MirrorMaker 2
    naming (``<source_alias>.<topic>``) and its loop rule (see :mod:`fastkafka.mirror.naming`).
    ``group`` defaults to the source properties' ``group.id``, else ``KafkaMirror``
    (``KafkaMirror-<source_alias>`` with an alias).
    ``exactly_once``: see :mod:`fastkafka.mirror.delivery`; ``commit_interval_ms`` (default 5000,
    100 with exactly-once) is how often positions are committed (transactions end).
    ``config_sync_interval_ms``: how often changed topic configs are copied;
    ``replication_factor`` of created topics (-1: the target's default). ``progress(line)`` gets a
    progress line every ``progress_interval_s``.
    Offset translation: ``emit_offset_syncs`` (default on) writes offset syncs to the target's
    ``mm2-offset-syncs.<source_alias>.internal`` (a sync when the translation would lag
    ``offset_lag_max`` records, MM2's ``offset.lag.max``); every ``emit_checkpoints_interval_s``
    (default 60, 0: never) the committed offsets of the source's groups matching
    ``checkpoint_groups`` (a regex; default every group but the mirror's) are translated into
    ``<source_alias>.checkpoints.internal`` (``source`` when no alias is given); see
    :func:`fastkafka.mirror.translate_offsets`. ``sync_group_offsets_interval_s`` (0: off, as
    MM2's ``sync.group.offsets.enabled``) commits the checkpoints for the groups on the target
    while they have no members there (see :mod:`fastkafka.mirror.checkpoints`). Of several mirror
    processes in one group, the one owning partition 0 of the first mirrored topic does both.
    Prometheus metrics (MirrorMaker 2's, see :mod:`fastkafka.mirror.metrics`): ``metrics_port``
    (None: off; 0: an ephemeral port, then ``metrics_endpoint.port``) on ``metrics_host``, served
    while :meth:`run` runs; needs ``pip install 'fastkafka[metrics]'`` (else
    :class:`~fastkafka.metrics_http.MetricsError` here).

    Example (two one-broker clusters, ``dc1`` mirrored into ``dc2``)::

        >>> import tempfile, threading, time
        >>> from fastkafka.config import KafkaConfig
        >>> from fastkafka.server.broker import Broker
        >>> from fastkafka.client import Producer, ProducerData, SimpleConsumer, FetchRequest
        >>> def cluster(log_dir):
        ...     b = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": log_dir,
        ...                             "group.initial.rebalance.delay.ms": 0}))
        ...     b.startup()
        ...     return b, f"127.0.0.1:{b.port}"
        >>> tmpdir = tempfile.TemporaryDirectory(); tmpdir2 = tempfile.TemporaryDirectory()
        >>> (dc1, source), (dc2, target) = cluster(tmpdir.name), cluster(tmpdir2.name)
        >>> _ = dc1.topics.create("orders", 1, configs={"retention.ms": "86400000"})
        >>> with Producer({"bootstrap.servers": source}) as p:
        ...     _ = p.send(ProducerData("orders", b"customer-7", [b"order 1", b"order 2"],
        ...                             headers=[("via", b"web")], timestamp=1700000000000))
        >>> m = Mirror(source, target, whitelist="orders.*", source_alias="dc1", prefix_topics=True)
        >>> t = threading.Thread(target=m.run); t.start()
        >>> for _ in range(600):                    # caught up within 30 s
        ...     if m.lag() == {"orders": 0}:
        ...         break
        ...     time.sleep(0.05)
        >>> c = SimpleConsumer("127.0.0.1", dc2.port)
        >>> [(mo.offset, mo.message.key, mo.message.value, mo.message.headers, mo.message.timestamp)
        ...  for mo in c.fetch(FetchRequest("dc1.orders", 0, 0))]     # doctest: +NORMALIZE_WHITESPACE
        [(0, b'customer-7', b'order 1', [('via', b'web')], 1700000000000),
         (1, b'customer-7', b'order 2', [('via', b'web')], 1700000000000)]
        >>> dc2.topics.get("dc1.orders").configs["retention.ms"]
        '86400000'
        >>> m.stop(); t.join(); c.close(); dc1.shutdown(); dc2.shutdown(); tmpdir.cleanup(); tmpdir2.cleanup()
    """

    def __init__(self, source: str | dict, target: str | dict, *, topics: list[str] | None = None,
                 whitelist: str | None = None, blacklist: str | None = None, group: str | None = None,
                 num_streams: int = 1, source_alias: str | None = None, target_alias: str | None = None,
                 prefix_topics: bool = False, exactly_once: bool = False,
                 commit_interval_ms: int | None = None, refresh_interval_ms: int = 5000,
                 config_sync_interval_ms: int = 30_000, replication_factor: int = -1,
                 progress_interval_s: float = 5.0, progress: Callable[[str], None] | None = None,
                 emit_offset_syncs: bool = True, offset_lag_max: int = OFFSET_LAG_MAX,
                 emit_checkpoints_interval_s: float = EMIT_CHECKPOINTS_INTERVAL_S,
                 checkpoint_groups: str | None = None, sync_group_offsets_interval_s: float = 0.0,
                 metrics_port: int | None = None, metrics_host: str = "0.0.0.0"):
        if num_streams < 1:
            raise ValueError("num_streams must be at least 1")
        if offset_lag_max < 0:
            raise ValueError("offset_lag_max must not be negative")
        self.selector = TopicSelector(topics, whitelist, blacklist, source_alias=source_alias,
                                      target_alias=target_alias, prefix=prefix_topics)
        self.exactly_once = exactly_once
        self.commit_interval_ms = commit_interval_ms if commit_interval_ms is not None else (
            100 if exactly_once else 5000)
        client = {"client.id": "fastkafka-mirror"}
        # parsed now, so a bad property fails before anything starts
        self.source_config = ClientConfig(_props(source, {**client, "auto.offset.reset": "earliest"}))
        self.group = group or self.source_config["group.id"] or (
            f"{DEFAULT_GROUP}-{source_alias}" if source_alias else DEFAULT_GROUP)
        self.target_props = _props(target, {**client, "acks": "all", "max.request.size": 8 << 20})
        self.target_config = ClientConfig(self.target_props)
        self.num_streams = num_streams
        self.refresh_s = refresh_interval_ms / 1000
        self.config_sync_s = config_sync_interval_ms / 1000
        self.replication_factor = replication_factor
        self.progress_s = progress_interval_s
        self.progress = progress
        self.source_alias = source_alias
        self.emit_offset_syncs = emit_offset_syncs
        self.offset_lag_max = offset_lag_max
        self.emit_checkpoints_s = emit_checkpoints_interval_s
        self.checkpoint_groups = checkpoint_groups
        self.sync_group_offsets_s = sync_group_offsets_interval_s
        if checkpoint_groups:
            re.compile(checkpoint_groups)       # a bad regex fails now
        self.metrics: MirrorMetrics | None = None       # this run's counts (metrics on)
        self.metrics_endpoint = None
        if metrics_port is not None:    # built now: a missing prometheus_client fails before anything starts
            from .metrics_export import MirrorMetricsEndpoint   # noqa: PLC0415 (needs prometheus_client)
            self.metrics_endpoint = MirrorMetricsEndpoint(self, metrics_host, metrics_port, "--metrics-port")
        self.sync_writer: SyncWriter | None = None
        self.checkpointer: Checkpointer | None = None
        self.streams: list[Stream] = []
        self._routes: tuple[int, dict[str, Route]] = (0, {})
        self._lock = threading.Lock()
        self._stop = threading.Event()

    # -- the API ----------------------------------------------------------------------------

    def run(self) -> None:
        """Mirror until :meth:`stop` (or an error, which is raised after a clean shutdown)."""
        self._stop.clear()
        if self.metrics_endpoint is not None:
            self.metrics = MirrorMetrics()
            self.metrics_endpoint.start()
        source, target = AdminClient(self.source_config), AdminClient(self.target_config)
        sync = TopicSync(source, target, self.selector, replication_factor=self.replication_factor)
        try:
            for side, admin, config in (("source", source, self.source_config), ("target", target, self.target_config)):
                _let_in(side, admin, config)
            self._sync(sync, configs=False)
            self._start_translation(target)
            self.streams = [Stream(self, i) for i in range(self.num_streams)]
            for s in self.streams:
                s.start()
            now = time.monotonic()
            next_refresh, next_configs = now + self.refresh_s, now + self.config_sync_s
            next_progress, last = now + self.progress_s, (now, 0, 0)
            while not self._stop.wait(0.1):
                failed = next((s for s in self.streams if s.error is not None), None)
                if failed is not None:
                    raise failed.error
                now = time.monotonic()
                if now >= next_refresh:
                    configs = now >= next_configs
                    self._sync(sync, configs)
                    next_refresh = now + self.refresh_s
                    next_configs = now + self.config_sync_s if configs else next_configs
                if self.progress is not None and self.progress_s > 0 and now >= next_progress:
                    last = self._report(last)
                    next_progress = now + self.progress_s
        finally:
            for s in self.streams:
                s.stop()
            for s in self.streams:
                s.join()
            if self.sync_writer is not None:      # the streams' last syncs, then the last checkpoints
                self.sync_writer.close()
                self.sync_writer = None
            if self.checkpointer is not None:
                self.checkpointer.stop()
                self.checkpointer.join(60)
                self.checkpointer = None
            source.close()
            target.close()
            if self.metrics_endpoint is not None:
                self.metrics_endpoint.stop()

    def stop(self) -> None:
        """Make :meth:`run` return (after committing); safe from any thread."""
        self._stop.set()

    def routes(self) -> tuple[int, dict[str, Route]]:
        """``(version, {source topic: Route})``: the topics ready on both sides; the version
        changes whenever they do (the streams then rejoin the group)."""
        with self._lock:
            return self._routes

    def leads_checkpoints(self) -> bool:
        """Whether this process emits checkpoints (and syncs group offsets): the one whose
        streams own partition 0 of the first mirrored topic. Several mirror processes in one
        group would otherwise each write the same checkpoints; while the group rebalances a round
        may pass with no emitter, which only delays checkpoints by an interval."""
        _, routes = self.routes()
        first = (min(routes), 0) if routes else None
        return first is not None and any(first in s.owned for s in self.streams)

    def lag(self) -> dict[str, int]:
        """Per source topic, how far behind this process's partitions are (as of their last
        fetch); topics whose partitions this process does not own are absent."""
        lag: dict = {}
        for s in self.streams:
            lag.update(s.stats.snapshot()[2])
        return lag_by_topic(lag)

    # -- internals ----------------------------------------------------------------------------

    def _start_translation(self, target: AdminClient) -> None:
        """Create the offset-syncs and checkpoints topics on the target, start their writers."""
        wanted = ([offset_syncs_topic(self.source_alias)] if self.emit_offset_syncs else []) + (
            [checkpoints_topic(self.source_alias)] if self.emit_checkpoints_s > 0 else [])
        for name in wanted:
            try:
                ensure_topic(target, name, self.replication_factor)
            except errors.KafkaError as e:
                log.warning("cannot create %s on the target: %s", name, e)
        if self.emit_offset_syncs:
            self.sync_writer = SyncWriter(self.target_props, offset_syncs_topic(self.source_alias))
        if self.emit_checkpoints_s > 0:
            self.checkpointer = Checkpointer(self, self.emit_checkpoints_s, self.checkpoint_groups,
                                             self.sync_group_offsets_s)
            self.checkpointer.start()

    def _sync(self, sync: TopicSync, configs: bool) -> None:
        try:
            routes = sync.refresh(configs)
        except FATAL:
            raise
        except Exception as e:   # noqa: BLE001 - a cluster away for a while: keep mirroring
            log.warning("topic refresh failed: %s", e)
            return
        with self._lock:
            version, current = self._routes
            if routes != current:
                self._routes = (version + 1, routes)
                log.info("mirroring %s", ", ".join(f"{r.source_topic}->{r.target_topic}"
                                                          for r in routes.values()) or "nothing yet")

    def _report(self, last: tuple[float, int, int]) -> tuple[float, int, int]:
        now = time.monotonic()
        records = nbytes = 0
        lag: dict = {}
        for s in self.streams:
            r, b, lg = s.stats.snapshot()
            records, nbytes = records + r, nbytes + b
            lag.update(lg)
        dt = max(now - last[0], 1e-9)
        self.progress(progress_line((records - last[1]) / dt, (nbytes - last[2]) / dt, lag_by_topic(lag)))
        return now, records, nbytes
