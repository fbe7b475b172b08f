"""LogManager: every partition log of a broker across ``log.dirs``, and their background work.

Startup loads each ``<log.dir>/<topic>-<partition>/`` (recovering after an unclean shutdown,
``num.recovery.threads.per.data.dir`` at a time) after taking each directory's ``.lock``
(dir_lock.py: one broker per directory), then schedules retention
(``log.retention.check.interval.ms``), producer-id expiration
(``producer.id.expiration.check.interval.ms``), the flush.ms timer, the cleaner for compacted
topics and the recovery-point / log-start-offset checkpoints. ``shutdown()`` flushes, checkpoints and
writes the clean-shutdown marker so the next start skips revalidation.

Descriptor budget: at most ``log.max.open.files`` segment files open for all partitions (LRU,
see files.py), plus the fetch regions in flight; indexes are mmaps and hold no descriptor.

Thread-safety: every method is thread-safe.

Example::

    >>> import os, tempfile
    >>> from fastkafka.records import build_batch
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> mgr = LogManager({"log.dirs": tmpdir.name})
    >>> log = mgr.get_or_create_log("orders", 0, {"retention.ms": 60000})
    >>> log.config.retention_ms, log.append(bytearray(build_batch([(b"k", b"v", [], 1)]))).base_offset
    (60000, 0)
    >>> mgr.shutdown(); sorted(os.listdir(tmpdir.name))
    ['.kafka_cleanshutdown', '.lock', 'log-start-offset-checkpoint', 'orders-0',
     'recovery-point-offset-checkpoint', 'replication-offset-checkpoint']
    >>> mgr = LogManager({"log.dirs": tmpdir.name}); mgr.logs()      # loaded at start-up
    [Log(orders-0, start=0, end=1)]
    >>> mgr.shutdown(); tmpdir.cleanup()
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping

from ..config.definitions import (LOG_CLEANER_BACKOFF_MS, LOG_CLEANER_ENABLE,
                                  LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS, LOG_FLUSH_SCHEDULER_INTERVAL_MS,
                                  LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS, LOG_MAX_OPEN_FILES,
                                  LOG_RETENTION_CHECK_INTERVAL_MS, NUM_RECOVERY_THREADS_PER_DATA_DIR,
                                  PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, PRODUCER_ID_EXPIRATION_MS,
                                  REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, ZOOKEEPER_CONNECT)
from .. import errors
from ..config import KafkaConfig, LogConfig
from ..uuids import UUID_ZERO, uuid_text
from .checkpoints import (CLEAN_SHUTDOWN_FILE, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
                          REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile)
from .cleaner import LogCleaner
from .dir_lock import LogDirLock
from .files import FileCache
from .log import Log, parse_topic_partition
from .partition_metadata import read_topic_id, write_topic_id
from .scheduler import Scheduler, wall_clock_ms

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class LogManager:
    """All partition logs of one broker. Thread-safe."""

    def __init__(self, config: KafkaConfig | Mapping[str, Any] | None = None, *,
                 clock: Callable[[], int] | None = None, start_scheduler: bool = True):
        self.config = config if isinstance(config, KafkaConfig) else KafkaConfig(config or {})
        self.clock = clock or wall_clock_ms
        self.scheduler = Scheduler(self.clock)
        self.files = FileCache(self.config[LOG_MAX_OPEN_FILES])
        self.default_log_config = LogConfig.from_broker(self.config)
        self.log_dirs = [os.path.abspath(d) for d in self.config.log_dirs]
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self._lock = threading.RLock()
        # called with a Log after each append to it (on_append); every Log shares this list
        self._append_listeners: list[Callable[[Log], None]] = []
        self.cleaner = LogCleaner(self.config, clock=self.clock)
        self._locks: list[LogDirLock] = []
        try:
            for d in self.log_dirs:
                os.makedirs(d, exist_ok=True)
                self._locks.append(LogDirLock(d))   # before anything reads or writes the dir
        except BaseException:
            self._release_locks()
            raise
        self._load_logs()
        self._schedule_background()
        if start_scheduler:
            self.scheduler.start()

    # --- startup ---
    def _load_logs(self) -> None:
        for d in self.log_dirs:
            marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
            clean = os.path.exists(marker)
            recovery = OffsetCheckpointFile(os.path.join(d, RECOVERY_POINT_CHECKPOINT)).read()
            starts = OffsetCheckpointFile(os.path.join(d, LOG_START_OFFSET_CHECKPOINT)).read()
            # replicated partitions (cluster mode) resume from their checkpointed high watermark;
            # one broker alone commits everything it holds
            hws = OffsetCheckpointFile(os.path.join(d, REPLICATION_OFFSET_CHECKPOINT)).read() \
                if self.config[ZOOKEEPER_CONNECT] else {}
            todo = []
            for name in sorted(os.listdir(d)):
                path = os.path.join(d, name)
                if name.endswith("-delete") and os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)   # deleted before a crash or restart
                    continue
                if not os.path.isdir(path):
                    continue
                try:
                    tp = parse_topic_partition(path)
                except ValueError:
                    continue
                todo.append((tp, path))

            def load(item: tuple[TopicPartition, str]) -> tuple[TopicPartition, str, Log]:
                tp, path = item
                return tp, path, Log(path, self.default_log_config, files=self.files,
                                     scheduler=self.scheduler, clock=self.clock,
                                     recovery_point=recovery.get(tp, 0), log_start_offset=starts.get(tp, 0),
                                     clean_shutdown=clean and tp in recovery,
                                     append_listeners=self._append_listeners, high_watermark=hws.get(tp))
            threads = self.config[NUM_RECOVERY_THREADS_PER_DATA_DIR]
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="log-recovery") as pool:
                for tp, path, lg in pool.map(load, todo):
                    self._logs[tp] = lg
                    self._dir_of[tp] = d
            if clean:
                os.unlink(marker)    # from now on a crash must be noticed at the next start

    def on_append(self, listener: Callable[[Log], None]) -> None:
        """Call ``listener`` with the Log after each append to any log of this manager, those
        opened later included (the server's fetch long-poll wake-up)."""
        self._append_listeners.append(listener)

    def _schedule_background(self) -> None:
        c = self.config
        self.scheduler.schedule(c[LOG_RETENTION_CHECK_INTERVAL_MS], self.cleanup_logs,
                                period_ms=c[LOG_RETENTION_CHECK_INTERVAL_MS])
        self._flush_period: int | None = None
        self._reschedule_flusher(self.default_log_config.flush_ms)
        self.scheduler.schedule(c[LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS], self.checkpoint_recovery_points,
                                period_ms=max(1, c[LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS]))
        self.scheduler.schedule(c[LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS],
                                self.checkpoint_log_start_offsets,
                                period_ms=max(1, c[LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS]))
        self.scheduler.schedule(c[REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS],
                                self.checkpoint_high_watermarks,
                                period_ms=c[REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS])
        self.scheduler.schedule(c[PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS],
                                self.remove_expired_producers,
                                period_ms=c[PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS])
        if c[LOG_CLEANER_ENABLE]:
            self.scheduler.schedule(c[LOG_CLEANER_BACKOFF_MS], self.clean_logs,
                                    period_ms=max(1, c[LOG_CLEANER_BACKOFF_MS]))

    def _reschedule_flusher(self, flush_ms: int) -> None:
        # The flush.ms timer must tick at least as often as the smallest flush.ms of any log.
        period = max(1, min(flush_ms, self.config[LOG_FLUSH_SCHEDULER_INTERVAL_MS]))
        if period >= (1 << 62) or (self._flush_period is not None and period >= self._flush_period):
            return
        self._flush_period = period
        self.scheduler.schedule(period, lambda: self.flush_dirty_logs(period), period_ms=period)

    # --- partitions ---
    def get_or_create_log(self, topic: str, partition: int,
                          topic_config: LogConfig | Mapping[str, Any] | None = None,
                          topic_id: uuid.UUID | None = None) -> Log:
        """The log of ``topic``-``partition``, created in the least loaded log dir if missing;
        ``topic_config`` (topic-level names) overrides the broker defaults. With the topic's id
        (KIP-516) the directory records it in ``partition.metadata``, and a log found there that
        records another id -- a stray copy of an earlier topic of this name -- is deleted and the
        partition starts empty, as Kafka's brokers do with stray logs."""
        cfg = self._log_config(topic_config)
        if topic_id == UUID_ZERO:
            topic_id = None         # not known yet (a topic written by tools from before ids)
        with self._lock:
            tp = (topic, partition)
            lg = self._logs.get(tp)
            recorded = read_topic_id(lg.dir) if lg is not None and topic_id is not None else None
            if lg is not None and topic_id is not None and recorded is not None and recorded != topic_id:
                log.warning("%s-%d: the log on disk belongs to topic id %s, not %s (the topic was deleted and "
                            "created again while this broker was away): deleting it", topic, partition,
                            uuid_text(recorded), uuid_text(topic_id))
                del self._logs[tp], self._dir_of[tp]
                self.cleaner.forget(lg)
                lg.delete()
                lg = recorded = None
            if lg is None:
                d = min(self.log_dirs, key=lambda x: sum(1 for v in self._dir_of.values() if v == x))
                lg = Log(os.path.join(d, f"{topic}-{partition}"), cfg, files=self.files,
                         scheduler=self.scheduler, clock=self.clock, clean_shutdown=True,
                         append_listeners=self._append_listeners)
                self._logs[tp] = lg
                self._dir_of[tp] = d
            elif topic_config is not None:
                lg.config = cfg
            if topic_id is not None and recorded is None:
                write_topic_id(lg.dir, topic_id)
        self._reschedule_flusher(cfg.flush_ms)
        return lg

    def _log_config(self, topic_config: LogConfig | Mapping[str, Any] | None) -> LogConfig:
        if isinstance(topic_config, LogConfig):
            return topic_config
        if not topic_config:
            return self.default_log_config
        return LogConfig.from_broker(self.config, topic_config)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove a partition (DeleteTopics): files go after log.segment.delete.delay.ms."""
        with self._lock:
            lg = self._logs.pop((topic, partition), None)
            self._dir_of.pop((topic, partition), None)
        if lg is None:
            return False
        self.cleaner.forget(lg)
        lg.delete()
        return True

    # --- background work (public so tests drive it with a fake clock) ---
    def cleanup_logs(self) -> int:
        """Retention for every log; returns the segments deleted."""
        now = self.clock()
        return sum(lg.delete_old_segments(now) for lg in self.logs())

    def flush_dirty_logs(self, _period: int | None = None) -> int:
        now = self.clock()
        return sum(1 for lg in self.logs() if lg.flush_if_due(now))

    def remove_expired_producers(self) -> int:
        """Producer-id expiration for every log; returns the producers forgotten."""
        now, ms = self.clock(), self.config[PRODUCER_ID_EXPIRATION_MS]
        return sum(lg.remove_expired_producers(now, ms) for lg in self.logs())

    def clean_logs(self) -> int:
        """One compaction pass over the compacted logs; returns the logs cleaned."""
        return sum(1 for lg in self.logs() if lg.config.compact and self.cleaner.clean(lg))

    def _by_dir(self, value: Callable[[Log], int]) -> dict[str, dict[TopicPartition, int]]:
        out: dict[str, dict[TopicPartition, int]] = {d: {} for d in self.log_dirs}
        with self._lock:
            for tp, lg in self._logs.items():
                out[self._dir_of[tp]][tp] = value(lg)
        return out

    def checkpoint_recovery_points(self) -> None:
        for d, offsets in self._by_dir(lambda lg: lg.recovery_point).items():
            OffsetCheckpointFile(os.path.join(d, RECOVERY_POINT_CHECKPOINT)).write(offsets)

    def checkpoint_log_start_offsets(self) -> None:
        for d, offsets in self._by_dir(lambda lg: lg.log_start_offset).items():
            OffsetCheckpointFile(os.path.join(d, LOG_START_OFFSET_CHECKPOINT)).write(offsets)

    def checkpoint_high_watermarks(self) -> None:
        for d, offsets in self._by_dir(lambda lg: lg.high_watermark).items():
            OffsetCheckpointFile(os.path.join(d, REPLICATION_OFFSET_CHECKPOINT)).write(offsets)

    def shutdown(self) -> None:
        """Stop background work, flush and close every log, checkpoint, write the clean-shutdown
        marker in each log dir. What fails on the way (a full disk) is logged and the rest still
        runs; a dir whose logs did not all close and checkpoint gets no marker, so the next start
        recovers it, as Kafka treats a log dir that failed."""
        self.scheduler.shutdown(run_pending=True)
        clean = set(self.log_dirs)
        with self._lock:
            logs = [(self._dir_of[tp], lg) for tp, lg in self._logs.items()]
        for d, lg in logs:
            try:
                lg.close()
            except (OSError, errors.KafkaStorageError) as e:
                log.error("closing %s failed, its dir is recovered at the next start: %s", lg.dir, e)
                clean.discard(d)
        for checkpoint in (self.checkpoint_recovery_points, self.checkpoint_log_start_offsets,
                           self.checkpoint_high_watermarks):
            try:
                checkpoint()
            except OSError as e:      # one call writes every dir's file: which one failed is unknown
                log.error("checkpoint at shutdown failed, every log dir is recovered at the next start: %s", e)
                clean.clear()
        for d in sorted(clean):
            try:
                with open(os.path.join(d, CLEAN_SHUTDOWN_FILE), "w"):
                    pass
            except OSError as e:
                log.error("no clean-shutdown marker in %s, it is recovered at the next start: %s", d, e)
        self._release_locks()

    def _release_locks(self) -> None:
        for lock in self._locks:
            lock.release()
        self._locks = []
