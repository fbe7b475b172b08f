"""The seeds' high-level consumer: ``create_consumer(config)`` -> :class:`ConsumerConnector`.

``create_message_streams({topic: n})`` joins the group ``group.id`` and returns, per topic,
``n`` :class:`KafkaStream` iterators of :class:`MessageAndMetadata`;
``create_message_streams_by_filter(Whitelist(regex) | Blacklist(regex), n)`` subscribes to
every topic the filter matches, and keeps watching: a topic created later that matches is
picked up within ``metadata.refresh.interval.ms`` (the group rebalances onto it).

Each assigned partition feeds exactly one stream (partitions are dealt round-robin over the
streams); several partitions may feed one stream. One background thread — the connector's
fetcher — heartbeats, rejoins on a rebalance, auto-commits (``enable.auto.commit``,
``auto.commit.interval.ms``), long-polls the partition leaders and hands each fetched
message set to its stream's queue (``queued.max.message.chunks`` deep). Positions start at
the group's committed offsets, else at ``auto.offset.reset``. ``commit_offsets()`` commits
what the streams have handed out so far; delivery is at least once. Before a rebalance takes
partitions away, the streams stop handing them out and what was handed out is committed, so
their next owner starts right after it.

Membership is pluggable: by default a :class:`~fastkafka.client.group_member.GroupMember`
(the broker's group coordinator); any object with the same ``join`` / ``heartbeat`` /
``rejoin_needed`` / ``commit`` / ``committed`` / ``leave`` can be passed instead — the seeds'
ZooKeeper registry is one (:mod:`fastkafka.cli.zookeeper_consumer`).

Example::

    connector = create_consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                                 "auto.offset.reset": "smallest"})
    streams = connector.create_message_streams({"orders": 2})["orders"]
    for m in streams[0]:                     # blocks; consumer.timeout.ms bounds the wait
        print(m.topic, m.partition, m.offset, m.key, m.message)
    connector.commit_offsets()
    connector.shutdown()
"""
from __future__ import annotations

import logging
import queue
import re
import threading
import time
from typing import NamedTuple

from fastkafka import errors

from .config import ClientConfig, ConfigException
from .fetcher import EARLIEST, LATEST, Fetcher
from .group_member import GroupMember
from .metadata import Cluster

__all__ = ["create_consumer", "ConsumerConnector", "KafkaStream", "MessageAndMetadata",
           "Whitelist", "Blacklist", "TopicFilter", "ConsumerTimeout"]

log = logging.getLogger("fastkafka.client")
_END = object()


class ConsumerTimeout(Exception):
    """No message arrived within ``consumer.timeout.ms`` (the seeds' ConsumerTimeoutException)."""


class MessageAndMetadata(NamedTuple):
    """One consumed record and where it came from."""
    topic: str
    partition: int
    offset: int
    key: bytes | None
    message: bytes | None
    timestamp: int
    headers: list

    @property
    def value(self) -> bytes | None:
        return self.message


class TopicFilter:
    """A Java-style regex over topic names (``,`` also separates alternatives, as the seeds)."""

    def __init__(self, regex: str):
        self.regex = regex
        self._re = re.compile("|".join(f"(?:{p.strip()})" for p in regex.split(",")))

    def matches(self, topic: str, internal: bool = False) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


class Whitelist(TopicFilter):
    """Topics whose whole name matches; internal topics never."""

    def matches(self, topic: str, internal: bool = False) -> bool:
        return not internal and self._re.fullmatch(topic) is not None


class Blacklist(TopicFilter):
    """Topics whose name does not match; internal topics never."""

    def matches(self, topic: str, internal: bool = False) -> bool:
        return not internal and self._re.fullmatch(topic) is None


class KafkaStream:
    """An iterator of :class:`MessageAndMetadata` over the chunks its partitions deliver."""

    def __init__(self, connector: "ConsumerConnector", chunks: int, timeout_ms: int):
        self._connector = connector
        self.queue: queue.Queue = queue.Queue(chunks)
        self._timeout = None if timeout_ms < 0 else timeout_ms / 1000
        self._current = iter(())

    def __iter__(self):
        return self

    def __next__(self) -> MessageAndMetadata:
        c = self._connector
        while True:
            # the ownership check (in _messages) and the record of what was handed out are one
            # step, so a revocation's commit covers every message handed out before it
            m = c.hand_out(self._current)
            if m is not None:
                return m
            try:
                chunk = self.queue.get(timeout=self._timeout)
            except queue.Empty:
                raise ConsumerTimeout(f"no message within {self._timeout * 1000:.0f} ms") from None
            if chunk is _END:
                self.queue.put(_END)   # stays ended for later calls
                raise StopIteration
            self._current = self._messages(chunk)

    def _messages(self, ms):
        gen = self._connector.generation_seen
        for mo in ms:
            if gen != self._connector.generation_seen and (ms.topic, ms.partition) not in \
                    self._connector.owned:
                return   # revoked by a rebalance: its new owner reads it
            r = mo.message
            yield MessageAndMetadata(ms.topic, ms.partition, mo.offset, r.key, r.value,
                                     r.timestamp, r.headers)


class ConsumerConnector:
    """Group-managed consumption; build it with :func:`create_consumer`."""

    def __init__(self, config: dict | ClientConfig, membership=None):
        self.config = config if isinstance(config, ClientConfig) else ClientConfig(config)
        if not self.config["group.id"]:
            raise errors.InvalidGroupIdError("group.id is required for a ConsumerConnector")
        self.cluster = Cluster(self.config)
        self.member = membership if membership is not None else GroupMember(
            self.cluster, self.config["group.id"])
        self.fetcher = Fetcher(Cluster(self.config))   # its own connections: another thread
        self._topic_streams: dict[str, list[KafkaStream]] = {}
        self._filter: tuple[TopicFilter, list[KafkaStream]] | None = None
        # owned/generation_seen change together, and _consumed grows, under _handout
        self._handout = threading.Lock()
        self.owned: set[tuple[str, int]] = set()
        self.generation_seen = -1
        self._session_timeout = self.config["session.timeout.ms"] / 1000
        self._last_heard = time.monotonic()   # the membership's last sign of life
        self._consumed: dict[tuple[str, int], int] = {}
        self._committed: dict[tuple[str, int], int] = {}
        self._stop = threading.Event()
        self._rejoin = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    # -- the API --------------------------------------------------------------------------

    def create_message_streams(self, topic_count: dict[str, int]) -> dict[str, list[KafkaStream]]:
        """``{topic: n}`` -> ``{topic: [n KafkaStreams]}``; (re)joins the group."""
        for topic, n in topic_count.items():
            self._topic_streams[topic] = [self._new_stream() for _ in range(max(1, n))]
        self._start()
        return {t: self._topic_streams[t] for t in topic_count}

    def create_message_streams_by_filter(self, topic_filter: TopicFilter, num_streams: int = 1
                                         ) -> list[KafkaStream]:
        """Streams over every topic ``topic_filter`` matches, now and created later."""
        streams = [self._new_stream() for _ in range(max(1, num_streams))]
        self._filter = (topic_filter, streams)
        self._start()
        return streams

    def hand_out(self, messages) -> MessageAndMetadata | None:
        """The next of a stream's ``messages`` (None when they are used up), counted as
        consumed in the same step as the ownership check that produced it, so a revocation's
        commit covers every message handed out before it."""
        with self._handout:
            m = next(messages, None)
            if m is not None:
                self._consumed[m.topic, m.partition] = m.offset + 1
            return m

    def commit_offsets(self) -> None:
        """Commit the offsets of everything the streams have handed out."""
        self._commit(self.owned)

    def _commit(self, tps) -> None:
        with self._handout:    # the streams' threads add partitions to _consumed
            done = {tp: off for tp, off in self._consumed.items()
                    if tp in tps and self._committed.get(tp) != off}
        if done:
            self.member.commit(done)
            self._committed.update(done)

    def _revoke(self) -> None:
        """Before a rejoin: streams stop handing out the owned partitions (a chunk already in a
        stream is cut short: its generation is gone and it is no longer owned), then what they
        did hand out is committed for the partitions' next owner."""
        with self._handout:
            revoked, self.owned = self.owned, set()
            self.generation_seen = None
        try:
            self._commit(revoked)
        except errors.KafkaError as e:
            log.warning("commit before rebalance failed: %s", e)

    def shutdown(self) -> None:
        """Stop fetching, commit (with auto-commit on), leave the group, end the streams.

        Afterwards ``owned`` is empty: the partitions are the group's other members' now."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        try:
            if self.config["enable.auto.commit"] and self.member.member_id:
                self.commit_offsets()
        except errors.KafkaError as e:
            log.warning("final commit failed: %s", e)
        self.member.leave()
        with self._handout:
            self.owned, self.generation_seen = set(), None
        for s in self._all_streams():
            try:
                s.queue.put_nowait(_END)
            except queue.Full:
                _drain_then_end(s.queue)
        self.fetcher.close()
        self.fetcher.cluster.close()
        self.cluster.close()

    # -- internals ------------------------------------------------------------------------

    def _new_stream(self) -> KafkaStream:
        c = self.config
        return KafkaStream(self, c["queued.max.message.chunks"], c["consumer.timeout.ms"])

    def _all_streams(self) -> list[KafkaStream]:
        out = [s for ss in self._topic_streams.values() for s in ss]
        return out + (self._filter[1] if self._filter else [])

    def _subscription(self) -> dict[str, int]:
        """``{topic: streams}``; a group coordinator only looks at the topics."""
        topics = {t: len(ss) for t, ss in self._topic_streams.items()}
        if self._filter is not None:
            f, streams = self._filter
            topics.update({n: len(streams) for n, t in self.cluster.all_topics().items()
                           if n not in topics and f.matches(n, t.is_internal)})
        return dict(sorted(topics.items()))

    def _start(self) -> None:
        if self._thread is None:
            self._subscribed = self._subscription()
            self._assign(self.member.join(self._subscribed))
            self._thread = threading.Thread(target=self._run, name="fastkafka-consumer", daemon=True)
            self._thread.start()
        else:
            self._rejoin.set()

    def _assign(self, tps: set[tuple[str, int]]) -> None:
        """Positions from committed offsets (else auto.offset.reset); map partitions to streams."""
        self._last_heard = time.monotonic()
        with self._handout:
            self.generation_seen = self.member.generation
            self.owned = set(tps)
        self.fetcher.unassign(list(self.fetcher.positions))
        committed = self.member.committed(tps)
        default = EARLIEST if self.config["auto.offset.reset"] == "earliest" else LATEST
        self.fetcher.assign({tp: committed.get(tp, default) for tp in tps})
        self._committed = dict(committed)
        self._route: dict[tuple[str, int], KafkaStream] = {}
        filtered = sorted(tp for tp in tps if tp[0] not in self._topic_streams)
        for topic, streams in self._topic_streams.items():
            mine = sorted(tp for tp in tps if tp[0] == topic)
            for i, tp in enumerate(mine):
                self._route[tp] = streams[i % len(streams)]
        if self._filter is not None:
            for i, tp in enumerate(filtered):
                self._route[tp] = self._filter[1][i % len(self._filter[1])]

    def _run(self) -> None:
        c = self.config
        hb_every = c["heartbeat.interval.ms"] / 1000
        commit_every = c["auto.commit.interval.ms"] / 1000
        refresh_every = c["metadata.refresh.interval.ms"] / 1000
        now = time.monotonic()
        self._next_hb, next_commit, next_refresh = now + hb_every, now + commit_every, now + refresh_every
        while not self._stop.is_set():
            try:
                now = time.monotonic()
                if self._filter is not None and now >= next_refresh:
                    next_refresh = now + refresh_every
                    if self._subscription() != self._subscribed:
                        self._rejoin.set()
                self._heartbeat_if_due()
                if c["enable.auto.commit"] and now >= next_commit:
                    next_commit = now + commit_every
                    self.commit_offsets()
                if self._rejoin.is_set():
                    self._rejoin.clear()
                    self._revoke()   # hand over cleanly what we consumed
                    self._subscribed = self._subscription()
                    self._assign(self.member.join(self._subscribed))
                    continue
                for ms in self.fetcher.poll():
                    if self._rejoin.is_set():
                        break    # the rest belongs to a generation that is over
                    stream = self._route.get((ms.topic, ms.partition))
                    if stream is not None and len(ms.buffer):
                        self._put(stream, ms)
            except errors.KafkaError as e:
                log.warning("consumer connector: %s; retrying", e)
                if not getattr(e, "retriable", False):
                    self._rejoin.set()
                self._stop.wait(c["retry.backoff.ms"] / 1000)

    def _put(self, stream: KafkaStream, ms) -> None:
        while not self._stop.is_set():
            try:
                stream.queue.put(ms, timeout=0.05)
                return
            except queue.Full:
                if not self._heartbeat_if_due():   # a slow reader must not cost us the group
                    return

    def _heartbeat_if_due(self) -> bool:
        """Heartbeat when due; False (and a rejoin asked for) when the group moved on.

        No heartbeat answered for ``session.timeout.ms`` (coordinator unreachable, this thread
        stalled) counts as moved on: the coordinator has expelled this member and given its
        partitions to others by now, so it must stop handing them out before anything else.
        """
        if self.member.rejoin_needed:   # a refused commit, or a membership that learns by itself
            self._rejoin.set()
            return False
        now = time.monotonic()
        if now - self._last_heard >= self._session_timeout:
            if self.owned:
                log.warning("consumer connector: no heartbeat answered for %.1f s; giving up "
                            "%d partitions and rejoining", now - self._last_heard, len(self.owned))
            self._rejoin.set()
            return False
        if now < self._next_hb:
            return True
        self._next_hb = now + self.config["heartbeat.interval.ms"] / 1000
        if self.member.heartbeat():     # raises when unanswered: _last_heard stays
            self._last_heard = now      # the coordinator's deadline counts from after ``now``
            return True
        self._rejoin.set()
        return False


def _drain_then_end(q: queue.Queue) -> None:
    try:
        while True:
            q.get_nowait()
    except queue.Empty:
        pass
    q.put_nowait(_END)


def create_consumer(config: dict | ClientConfig) -> ConsumerConnector:
    """The seeds' ``Consumer.create(consumerConfig)``, with the broker's group coordinator.

    With ``zookeeper.connect`` set, use :func:`fastkafka.cli.zookeeper_consumer.create_consumer`
    (the ZooKeeper registry lives in ``fastkafka.cluster``, which this layer does not import).
    """
    config = config if isinstance(config, ClientConfig) else ClientConfig(config)
    if config["zookeeper.connect"]:
        raise ConfigException(
            "zookeeper.connect: create ZooKeeper-registry consumers with "
            "fastkafka.cli.zookeeper_consumer.create_consumer")
    return ConsumerConnector(config)
