"""Followers copy their leaders: one fetcher thread per (leader broker, fetcher index).

A fetcher owns the partitions this broker follows on one leader (``num.replica.fetchers`` threads
per leader share them by hash). For each partition it first *truncates*: it asks the leader
(OffsetForLeaderEpoch, KIP-101/KIP-279) where the latest epoch of its own log ends on the
leader and cuts its log there, so a tail the old leader never committed is dropped before
anything new is appended after it. Without an epoch to ask about it truncates to its high
watermark, as Kafka does. Then it fetches: one Fetch with ``replica_id`` = this broker for all
its partitions, long-polled (``replica.fetch.wait.max.ms``), appending what comes exactly as
the leader stored it (``Log.append_as_follower``), taking the leader's high watermark
(bounded by its own log end) and the leader's log start offset (bounded by its high
watermark: segments below it are deleted, so retention and DeleteRecords on the leader are
retention on every replica). Its next fetch offset tells the leader how far it got, which is
how the leader's high watermark and ISR move.

OFFSET_OUT_OF_RANGE (Kafka's ``AbstractFetcherThread.fetchOffsetAndTruncate``): the fetcher
asks the leader for its log end (ListOffsets latest, as a replica: the log end, not the high
watermark). A log that ends past it (an unclean election made a shorter log the leader's) is
truncated there. Otherwise it asks for the leader's log start (ListOffsets earliest): a log
that ends below it -- retention or DeleteRecords ran on the leader while this replica was away
-- holds nothing the leader can continue, so it is dropped whole and starts again at the
leader's log start (``Log.truncate_fully_and_start_at``); else the leader's log has grown
meanwhile and the next fetch simply goes on from this log's end.

Throttling (KIP-73): a partition listed for this broker in its topic's
``follower.replication.throttled.replicas`` is left out of the fetch while it is behind the
leader's high watermark and the follower's quota (:mod:`.replication_quota`) is over its rate;
its appended bytes are recorded against that quota. When every partition is held back the
fetcher waits ``replica.fetch.backoff.ms``.

Errors: a connection failure backs off ``replica.fetch.backoff.ms`` and reconnects; a
partition the leader no longer leads (or does not know, or whose epoch moved) pauses until the
replica manager hands it over again with the new leader.

Example (a single broker as the leader, a bare Log as the copy)::

    >>> import tempfile, time
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.log import Log
    >>> from fastkafka.records import build_batch
    >>> from fastkafka.server.broker import Broker
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> leader = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": tmpdir.name}))
    >>> leader.startup(); _ = leader.topics.create("orders", 1)
    >>> _ = leader.topics.log("orders", 0).append(bytearray(build_batch([(b"k", b"v", [], 1)])))
    >>> tmpdir2 = tempfile.TemporaryDirectory(); copy = Log(tmpdir2.name + "/orders-0")
    >>> f = ReplicaFetcher(2, 1, lambda: ("127.0.0.1", leader.port), lambda t, p: copy, KafkaConfig({}))
    >>> f.add("orders", 0, epoch=0); f.start()
    >>> for _ in range(200):
    ...     if copy.log_end_offset == 1:
    ...         break
    ...     time.sleep(0.05)
    >>> f.stop(); leader.shutdown()
    >>> copy.log_end_offset, copy.read(0, 1 << 20).read_bytes()[12:] == (
    ...     leader.topics.log("orders", 0).read(0, 1 << 20).read_bytes()[12:])
    (1, True)
    >>> tmpdir.cleanup(); tmpdir2.cleanup()
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Callable

from fastkafka import errors
from fastkafka.client.connection import BrokerConnection
from fastkafka.client.security import ClientSecurity
from fastkafka.protocol import ApiKey
from fastkafka.config.definitions import (REPLICA_FETCH_BACKOFF_MS, REPLICA_FETCH_MAX_BYTES, REPLICA_FETCH_MIN_BYTES,
                                          REPLICA_FETCH_RESPONSE_MAX_BYTES, REPLICA_FETCH_WAIT_MAX_MS,
                                          REPLICA_SOCKET_TIMEOUT_MS)

from .replication_quota import ReplicationQuota

if TYPE_CHECKING:
    from fastkafka.log import Log

__all__ = ["ReplicaFetcher"]

log = logging.getLogger("fastkafka.server.replication")

_NONE = 0
_OUT_OF_RANGE = errors.OffsetOutOfRangeError.code
UNDEFINED_EPOCH = -1
LATEST_TIMESTAMP = -1      # ListOffsets: the leader's log end (asked as a replica)
EARLIEST_TIMESTAMP = -2    # ListOffsets: the leader's log start


class _FetchState:
    __slots__ = ("epoch", "truncated", "paused", "in_sync")

    def __init__(self, epoch: int):
        self.epoch = epoch          # the leader epoch this broker follows the partition in
        self.truncated = False      # truncation by epoch done for this epoch
        self.paused = False         # the leader refused it: wait for new instructions
        self.in_sync = False        # reached the leader's high watermark (never throttled then)


class ReplicaFetcher:
    """One thread fetching a set of partitions from one leader. Thread-safe add/remove."""

    def __init__(self, broker_id: int, leader_id: int, address: Callable[[], tuple[str, int] | None],
                 logs: Callable[[str, int], Log | None], config, index: int = 0,
                 security: ClientSecurity | None = None, quota: ReplicationQuota | None = None,
                 metrics=None):
        self.broker_id, self.leader_id, self.index = broker_id, leader_id, index
        self._metrics = metrics     # BrokerMetrics or None: bytes appended, per topic
        self._security = security
        self._quota = quota
        self._address, self._logs = address, logs
        self._wait_ms = config[REPLICA_FETCH_WAIT_MAX_MS]
        self._min_bytes = config[REPLICA_FETCH_MIN_BYTES]
        self._max_bytes = config[REPLICA_FETCH_MAX_BYTES]
        self._response_max_bytes = config[REPLICA_FETCH_RESPONSE_MAX_BYTES]
        self._backoff_s = config[REPLICA_FETCH_BACKOFF_MS] / 1000
        self._timeout_ms = config[REPLICA_SOCKET_TIMEOUT_MS]
        self._parts: dict[tuple[str, int], _FetchState] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._wake = threading.Event()
        self._conn: BrokerConnection | None = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"fastkafka-replica-fetcher-{leader_id}-{index}")

    # --- what the replica manager tells it ---
    def add(self, topic: str, partition: int, epoch: int) -> None:
        """Follow ``topic``-``partition`` in leader epoch ``epoch`` (truncating first when the
        epoch is new to this fetcher)."""
        with self._lock:
            st = self._parts.get((topic, partition))
            if st is None or st.epoch != epoch:
                self._parts[(topic, partition)] = _FetchState(epoch)
            elif st.paused:
                st.paused = False
        self._wake.set()

    def remove(self, topic: str, partition: int) -> None:
        with self._lock:
            self._parts.pop((topic, partition), None)

    def partitions(self) -> set[tuple[str, int]]:
        with self._lock:
            return set(self._parts)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        self._wake.set()
        conn = self._conn
        if conn is not None:
            conn.close()     # a long poll in flight ends now
        self._thread.join(timeout)

    # --- the loop ---
    def _run(self) -> None:
        while not self._stopped.is_set():
            with self._lock:
                active = {tp: st for tp, st in self._parts.items() if not st.paused}
            if not active:
                self._wake.wait(0.5)
                self._wake.clear()
                continue
            try:
                conn = self._connection()
                todo = {tp: st for tp, st in active.items() if not st.truncated}
                if todo:
                    self._truncate(conn, todo)
                self._fetch(conn, {tp: st for tp, st in active.items() if st.truncated})
            except (errors.NetworkException, OSError) as e:
                if not self._stopped.is_set():
                    log.info("replica fetcher %d->%d: %s; retrying", self.broker_id, self.leader_id, e)
                self._disconnect()
                self._stopped.wait(self._backoff_s)
            except Exception:
                log.exception("replica fetcher %d->%d failed; retrying", self.broker_id, self.leader_id)
                self._disconnect()
                self._stopped.wait(self._backoff_s)
        self._disconnect()

    def _connection(self) -> BrokerConnection:
        if self._conn is None:
            addr = self._address()
            if addr is None:
                raise errors.BrokerNotAvailableError(f"leader {self.leader_id} has no address")
            # the long poll must fit in the socket timeout
            timeout = max(self._timeout_ms, self._wait_ms + 5000)
            self._conn = BrokerConnection(addr[0], addr[1], node_id=self.leader_id,
                                          client_id=f"broker-{self.broker_id}-fetcher-{self.index}",
                                          request_timeout_ms=timeout, security=self._security).connect()
        return self._conn

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _pause(self, tp, st: _FetchState, why: str) -> None:
        with self._lock:
            if self._parts.get(tp) is st:
                st.paused = True
        log.info("replica fetcher %d->%d: %s-%d paused (%s)", self.broker_id, self.leader_id, tp[0], tp[1], why)

    # --- one request for many partitions, and its answers ---
    def _request(self, conn: BrokerConnection, api_key: int, parts, entry, *, topic_field: str = "topic",
                 **fields):
        """``api_key`` for ``parts`` grouped by topic (``entry(partition, state, log)`` each;
        the topic's name in ``topic_field``)."""
        by_topic: dict[str, list] = {}
        for (t, p), st in parts.items():
            lg = self._logs(t, p)
            if lg is not None:
                by_topic.setdefault(t, []).append(entry(p, st, lg))
        return conn.request(api_key, dict(fields, topics=[{topic_field: t, "partitions": ps}
                                                          for t, ps in by_topic.items()]))

    def _answers(self, topics, parts, partition_field: str, topic_field: str = "topic"):
        """``(tp, state, log, partition answer)`` per answered partition still followed here; a
        partition the leader refuses (other than OFFSET_OUT_OF_RANGE) is paused instead.

        Each answer is handed out under the fetcher's lock and only while the partition is
        still followed in the same state: one removed (or re-added for a new leader) while the
        request was in flight must not be touched by the old leader's answer, and ``remove``
        returning means no such answer is being applied (Kafka's partitionMapLock)."""
        for t in topics:
            for p in t.partitions:
                tp = (getattr(t, topic_field), getattr(p, partition_field))
                st, lg = parts.get(tp), self._logs(*tp)
                if st is None or lg is None:
                    continue
                if p.error_code not in (_NONE, _OUT_OF_RANGE):
                    self._pause(tp, st, errors.ERROR_NAMES.get(p.error_code, str(p.error_code)))
                    continue
                with self._lock:
                    if self._parts.get(tp) is st:
                        yield tp, st, lg, p

    # --- truncation by leader epoch ---
    def _truncate(self, conn: BrokerConnection, todo) -> None:
        resp = self._request(conn, ApiKey.OFFSET_FOR_LEADER_EPOCH, todo, lambda p, st, lg: dict(
            partition=p, current_leader_epoch=st.epoch, leader_epoch=lg.leader_epochs.latest_epoch()),
            replica_id=self.broker_id)
        for _tp, st, lg, p in self._answers(resp.topics, todo, "partition"):
            if p.error_code == _NONE:
                lg.truncate_to(self._truncation_offset(lg, p.leader_epoch, p.end_offset))
                st.truncated = True

    @staticmethod
    def _truncation_offset(lg, leader_epoch: int, end_offset: int) -> int:
        """Where this replica's log stops agreeing with the leader's (KIP-279): the leader's end
        of the latest epoch both know, but no further than this log's own end of that epoch."""
        if leader_epoch == UNDEFINED_EPOCH or end_offset < 0:
            return lg.high_watermark     # nothing to compare by: keep only what was committed
        _epoch, own_end = lg.leader_epochs.end_offset_for(leader_epoch, lg.log_end_offset)
        return min(end_offset, own_end if own_end >= 0 else lg.log_end_offset, lg.log_end_offset)

    # --- fetching ---
    def _throttled(self, quota: ReplicationQuota, tp) -> bool:
        """Is ``tp`` one of this follower's throttled replicas?"""
        lg = self._logs(*tp)
        return lg is not None and quota.is_throttled(lg.config.follower_replication_throttled_replicas, tp[1])

    def _fetch(self, conn: BrokerConnection, parts) -> None:
        throttled: set = set()
        quota = self._quota
        if quota is not None and not quota.unlimited and parts:
            throttled = {tp for tp in parts if self._throttled(quota, tp)}
            if throttled and quota.exceeded():
                parts = {tp: st for tp, st in parts.items() if tp not in throttled or st.in_sync}
                if not parts:
                    self._stopped.wait(self._backoff_s)
                    return
        if not parts:
            return
        resp = self._request(conn, ApiKey.FETCH, parts, lambda p, st, lg: dict(
            partition=p, current_leader_epoch=st.epoch, fetch_offset=lg.log_end_offset,
            log_start_offset=lg.log_start_offset, partition_max_bytes=self._max_bytes),
            replica_id=self.broker_id, max_wait_ms=self._wait_ms, min_bytes=self._min_bytes,
            max_bytes=self._response_max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
            forgotten_topics_data=[], rack_id="")
        if resp.error_code:
            raise errors.for_code(resp.error_code)("fetch from the leader failed")
        out_of_range = {}
        for tp, st, lg, p in self._answers(resp.responses, parts, "partition_index"):
            if p.error_code == _OUT_OF_RANGE:
                out_of_range[tp] = st
                continue
            if p.records:
                try:
                    lg.append_as_follower(p.records)
                except errors.ReplicaDivergedError as e:
                    log.warning("replica fetcher %d->%d: %s", self.broker_id, self.leader_id, e)
                    st.truncated = False
                    continue
                if quota is not None and tp in throttled:   # throttled: only with a quota
                    quota.record(len(p.records))
                if self._metrics is not None:
                    self._metrics.replicated(tp[0], len(p.records))
            st.in_sync = lg.log_end_offset >= p.high_watermark
            lg.update_high_watermark(min(p.high_watermark, lg.log_end_offset))
            if p.log_start_offset > lg.log_start_offset:
                # Kafka's follower takes max(its own, the leader's); never past what it has
                # committed (a leader's start is at most its high watermark, so this only
                # waits for this replica's high watermark to catch up)
                lg.maybe_increment_log_start_offset(min(p.log_start_offset, lg.high_watermark))
        if out_of_range:
            self._reset_out_of_range(conn, out_of_range)

    # --- OFFSET_OUT_OF_RANGE ---
    def _reset_out_of_range(self, conn: BrokerConnection, parts) -> None:
        """Where each log goes on after the leader found its fetch offset out of range (the
        module docstring; Kafka's fetchOffsetAndTruncate)."""
        behind = {}
        for tp, st, lg, leader_end in self._leader_offsets(conn, parts, LATEST_TIMESTAMP):
            if leader_end < lg.log_end_offset:
                log.warning("replica fetcher %d->%d: %s-%d ends at %d, past the leader's end %d: truncating there",
                            self.broker_id, self.leader_id, tp[0], tp[1], lg.log_end_offset, leader_end)
                lg.truncate_to(leader_end)
            else:
                behind[tp] = st
        for tp, _st, lg, leader_start in self._leader_offsets(conn, behind, EARLIEST_TIMESTAMP):
            if leader_start > lg.log_end_offset:
                log.warning("replica fetcher %d->%d: %s-%d ends at %d, below the leader's log start %d: "
                            "starting over there", self.broker_id, self.leader_id, tp[0], tp[1],
                            lg.log_end_offset, leader_start)
                lg.truncate_fully_and_start_at(leader_start)

    def _leader_offsets(self, conn: BrokerConnection, parts, timestamp: int):
        """``(tp, state, log, offset)`` from the leader's ListOffsets for ``timestamp``, asked as
        this replica (so latest is the leader's log end), fenced by the epoch followed."""
        if not parts:
            return
        resp = self._request(conn, ApiKey.LIST_OFFSETS, parts, lambda p, st, lg: dict(
            partition_index=p, current_leader_epoch=st.epoch, timestamp=timestamp, max_num_offsets=1),
            topic_field="name", replica_id=self.broker_id, isolation_level=0)
        for tp, st, lg, p in self._answers(resp.topics, parts, "partition_index", topic_field="name"):
            if p.error_code == _NONE and p.offset >= 0:
                yield tp, st, lg, p.offset
