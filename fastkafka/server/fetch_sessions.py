"""Incremental fetch sessions (KIP-227): what each fetcher last asked for and was told, so it need
not repeat itself.

A Fetch v7+ carries ``(session_id, session_epoch)``:

* id 0, epoch -1: a full fetch outside any session (what confluent-kafka, aiokafka and
  fastkafka's own fetchers send);
* id 0, epoch 0: a full fetch that opens a session when the cache has a slot; the answer names
  it (id 0 when there was no room), and the session expects epoch 1 next;
* id > 0, epoch > 0: an incremental fetch: it lists only the partitions it adds or whose fetch
  position changed, and ``forgotten_topics_data`` the ones it drops; the broker reads every
  partition of the session and answers only those whose answer changed: records, an error, a
  diverging epoch, or a high watermark, last stable offset or log start offset other than the
  one last answered. An unknown id answers FETCH_SESSION_ID_NOT_FOUND, an epoch other than the
  expected one INVALID_FETCH_SESSION_EPOCH, a session whose partitions all go is closed (answered
  as a sessionless fetch);
* id > 0, epoch -1 or 0: closes that session, then as id 0 with the same epoch.

Kafka's rules (``FetchSession.scala``), with one addition: the last stable offset is compared
too, so a read_committed consumer hears of a transaction's end even when nothing else moved.
A partition answered with records goes to the end of the session's order, so the next fetch's
``max_bytes`` goes first to the others. The epoch advances when the request is accepted and is
checked again when the (possibly long-polled) answer is built: a second request on the same
session meanwhile makes the first one answer INVALID_FETCH_SESSION_EPOCH, as in Kafka.

The cache holds ``max.incremental.fetch.session.cache.slots`` sessions. When it is full, a new
session may evict (Kafka's ``tryEvict``): the least recently used session if it was idle longer
than ``min.incremental.fetch.session.eviction.ms``; otherwise the least valuable evictable session
when the new one is worth more. Worth orders (privileged, partitions): followers' sessions are
privileged; a session is evictable by a consumer's once it is older than the eviction time, by a
follower's when it is a consumer's or older than the eviction time.

Partitions are keyed ``(topic key, partition)``: the topic key is the topic id when the request
names topics by id (v13+), its name otherwise; a session opened with one never serves the other
(FETCH_SESSION_TOPIC_ID_ERROR). One lock guards the cache and its sessions; the work under it is
a dictionary operation per partition.

Example::

    >>> from types import SimpleNamespace as P
    >>> cache = FetchSessionCache(max_slots=10, eviction_ms=120_000)
    >>> p0 = P(partition=0, fetch_offset=0, partition_max_bytes=1 << 20, log_start_offset=-1,
    ...        current_leader_epoch=-1, last_fetched_epoch=-1)
    >>> full = cache.context(12, 0, 0, [("t", None, [p0])], [], privileged=False)
    >>> answered = [("t", None, [dict(partition_index=0, error_code=0, high_watermark=5,
    ...                             last_stable_offset=5, log_start_offset=0, records=b"x")])]
    >>> code, session_id, parts = full.answer(answered)
    >>> code, session_id > 0, cache.num_sessions(), cache.num_partitions()
    (0, True, 1, 1)
    >>> again = cache.context(12, session_id, 1, [], [], privileged=False)   # nothing to add
    >>> [(name, [p.partition for p in ps]) for name, _, ps in again.topics]
    [('t', [0])]
    >>> unchanged = [("t", None, [dict(partition_index=0, error_code=0, high_watermark=5,
    ...                              last_stable_offset=5, log_start_offset=0, records=b"")])]
    >>> again.answer(unchanged) == (0, session_id, [])
    True
    >>> cache.context(12, session_id, 1, [], [], privileged=False).error   # epoch 1 was used
    71
"""
from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from typing import Callable, Hashable

from fastkafka import errors
from fastkafka.config.definitions import (MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS,
                                          MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS)

__all__ = ["FetchSessionCache", "FetchContext", "CachedPartition", "INVALID_SESSION_ID", "INITIAL_EPOCH",
           "FINAL_EPOCH", "next_epoch"]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0     # a full fetch that may open a session
FINAL_EPOCH = -1      # a full fetch outside any session (and the close of the one it names)
_MAX_ID = (1 << 31) - 1

_NOT_FOUND = errors.FetchSessionIdNotFoundError.code
_BAD_EPOCH = errors.InvalidFetchSessionEpochError.code
_TOPIC_ID_ERROR = errors.FetchSessionTopicIdError.code


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: -1 stays -1; after int32's largest comes 1, never 0 (the
    client's ``FetchMetadata.nextEpoch``)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_ID else epoch + 1


class CachedPartition:
    """A session's partition: the request fields an incremental fetch may leave out (the same
    attribute names as a request partition, so the reader takes either) and the offsets last
    answered (``-1``: answer next time whatever they are)."""

    __slots__ = ("topic", "topic_id", "partition", "fetch_offset", "partition_max_bytes", "log_start_offset",
                 "current_leader_epoch", "last_fetched_epoch", "high_watermark", "last_stable_offset",
                 "local_log_start_offset")

    def __init__(self, topic, topic_id, p, answered: dict | None = None):
        self.topic, self.topic_id, self.partition = topic, topic_id, p.partition
        self.update(p)
        if answered is None:
            self.high_watermark = self.last_stable_offset = self.local_log_start_offset = -1
        else:
            self.high_watermark = answered["high_watermark"]
            self.last_stable_offset = answered["last_stable_offset"]
            self.local_log_start_offset = answered["log_start_offset"]

    def update(self, p) -> None:
        """Take a request's fields for this partition."""
        self.fetch_offset = p.fetch_offset
        self.partition_max_bytes = p.partition_max_bytes
        self.log_start_offset = getattr(p, "log_start_offset", -1)          # v5+
        self.current_leader_epoch = getattr(p, "current_leader_epoch", -1)  # v9+
        self.last_fetched_epoch = getattr(p, "last_fetched_epoch", -1)      # v12+

    def must_answer(self, kw: dict) -> bool:
        """Whether this partition's answer ``kw`` (the response partition's fields) goes out, and
        remember what it tells (Kafka's ``maybeUpdateResponseData``)."""
        changed = bool(kw["records"]) or kw.get("diverging_epoch") is not None
        if kw.get("preferred_read_replica", -1) >= 0:
            changed = True
        if self.high_watermark != kw["high_watermark"]:
            self.high_watermark = kw["high_watermark"]
            changed = True
        if self.last_stable_offset != kw["last_stable_offset"]:
            self.last_stable_offset = kw["last_stable_offset"]
            changed = True
        if self.local_log_start_offset != kw["log_start_offset"]:
            self.local_log_start_offset = kw["log_start_offset"]
            changed = True
        if kw["error_code"]:
            self.high_watermark = -1    # answered again once the error is gone
            changed = True
        return changed


class _Session:
    __slots__ = ("id", "privileged", "uses_topic_ids", "created", "last_used", "epoch", "partitions")

    def __init__(self, session_id: int, privileged: bool, uses_topic_ids: bool, now: float, partitions):
        self.id, self.privileged, self.uses_topic_ids = session_id, privileged, uses_topic_ids
        self.created = self.last_used = now
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.partitions: dict[Hashable, CachedPartition] = partitions   # in fetch order

    def worth(self) -> tuple:
        return (self.privileged, len(self.partitions), self.id)


def _key(topic, topic_id, partition: int) -> tuple:
    return (topic if topic_id is None else topic_id, partition)


class FetchContext:
    """One Fetch's view of the session cache: ``error`` (a session error answers no partitions),
    ``topics`` (``(name, topic id, partitions)`` to read, in order) and :meth:`answer`."""

    __slots__ = ("cache", "error", "topics", "session", "epoch", "full", "privileged", "uses_topic_ids")

    def __init__(self, cache, error: int = 0, topics=(), session=None, epoch: int = FINAL_EPOCH,
                 full: bool = False, privileged: bool = False, uses_topic_ids: bool = False):
        self.cache, self.error, self.topics = cache, error, list(topics)
        self.session, self.epoch, self.full = session, epoch, full
        self.privileged, self.uses_topic_ids = privileged, uses_topic_ids

    def answer(self, results: list) -> tuple[int, int, list]:
        """``(error code, session id, results to send)`` for ``results``, the read of
        :attr:`topics`: one tuple per entry, in the same order, whose last item is the list of its
        partitions' response fields (the other items are passed through).
        A full fetch opens its session here; an incremental one keeps the partitions whose
        answer changed and remembers what they were told. Call once, when the answer goes out."""
        if self.error:
            return self.error, INVALID_SESSION_ID, []
        if self.session is not None:
            return self.cache.answer_incremental(self, results)
        if self.full:
            return 0, self.cache.open_session(self, results), results
        return 0, INVALID_SESSION_ID, results


class FetchSessionCache:
    """The broker's fetch sessions; thread-safe.

    ``max_slots`` is ``max.incremental.fetch.session.cache.slots``, ``eviction_ms``
    ``min.incremental.fetch.session.eviction.ms``; ``clock`` returns milliseconds.

    Example::

        >>> cache = FetchSessionCache(max_slots=0, eviction_ms=1000)
        >>> cache.context(12, 0, 0, [], [], privileged=False).answer([])   # no slot: no session
        (0, 0, [])
        >>> cache.context(12, 99, 1, [], [], privileged=False).error      # FETCH_SESSION_ID_NOT_FOUND
        70
    """

    def __init__(self, max_slots: int, eviction_ms: int, clock: Callable[[], float] | None = None):
        self.max_slots, self.eviction_ms = max_slots, eviction_ms
        self._clock = clock or (lambda: time.monotonic() * 1000.0)
        self._lock = threading.Lock()
        self._sessions: OrderedDict[int, _Session] = OrderedDict()   # least recently used first
        self.evictions = 0      # IncrementalFetchSessionEvictionsPerSec, as a count

    @classmethod
    def from_config(cls, cfg) -> "FetchSessionCache":
        return cls(cfg[MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS], cfg[MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS])

    # --- metrics (Kafka's FetchSessionCache gauges) ---
    def num_sessions(self) -> int:
        """NumIncrementalFetchSessions."""
        return len(self._sessions)

    def num_partitions(self) -> int:
        """NumIncrementalFetchPartitionsCached."""
        with self._lock:
            return sum(len(s.partitions) for s in self._sessions.values())

    def sessions(self) -> list[tuple[int, int, int]]:
        """``(session id, next epoch expected, partitions)`` of each session, least recently used first."""
        with self._lock:
            return [(s.id, s.epoch, len(s.partitions)) for s in self._sessions.values()]

    def close(self, session_id: int) -> None:
        """Forget a session (its client will open another with a full fetch)."""
        with self._lock:
            self._sessions.pop(session_id, None)

    # --- the request path ---
    def context(self, version: int, session_id: int, epoch: int, topics, forgotten, privileged: bool,
                name_of: Callable | None = None) -> FetchContext:
        """The context of a Fetch v7+: ``topics`` and ``forgotten`` are ``(name, topic id,
        partitions)`` per topic of the request's ``topics`` and ``forgotten_topics_data`` (topic id
        None before v13; forgotten partitions are indexes); ``privileged``: a follower's fetch;
        ``name_of`` resolves a v13+ session's topic ids whose name was unknown when added."""
        uses_topic_ids = version >= 13
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                with self._lock:
                    self._sessions.pop(session_id, None)
            return FetchContext(self, topics=topics, full=epoch == INITIAL_EPOCH, privileged=privileged,
                                uses_topic_ids=uses_topic_ids)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return FetchContext(self, _NOT_FOUND)
            if session.epoch != epoch:
                return FetchContext(self, _BAD_EPOCH)
            if session.uses_topic_ids != uses_topic_ids:
                return FetchContext(self, _TOPIC_ID_ERROR)
            cached = session.partitions
            for topic, topic_id, parts in topics:
                for p in parts:
                    key = _key(topic, topic_id, p.partition)
                    cp = cached.get(key)
                    if cp is None:
                        cached[key] = CachedPartition(topic, topic_id, p)
                    else:
                        cp.update(p)
            for topic, topic_id, indexes in forgotten:
                for i in indexes:
                    cached.pop(_key(topic, topic_id, i), None)
            if not cached:
                del self._sessions[session_id]
                return FetchContext(self, topics=topics)
            session.last_used = self._clock()
            self._sessions.move_to_end(session_id)
            session.epoch = next_epoch(epoch)
            return FetchContext(self, topics=_groups(cached.values(), name_of), session=session, epoch=epoch)

    def answer_incremental(self, ctx: FetchContext, results: list) -> tuple[int, int, list]:
        session = ctx.session
        out = []
        with self._lock:
            if session.epoch != next_epoch(ctx.epoch):   # another request on this session came meanwhile
                return _BAD_EPOCH, session.id, []
            cached = session.partitions
            for (_, _, cps), entry in zip(ctx.topics, results):
                kept = []
                for cp, kw in zip(cps, entry[-1]):
                    if cp.must_answer(kw):
                        kept.append(kw)
                        if kw["records"]:
                            key = _key(cp.topic, cp.topic_id, cp.partition)
                            if cached.get(key) is cp:
                                cached[key] = cached.pop(key)   # to the back of the order
                if kept:
                    out.append(entry[:-1] + (kept,))
        return 0, session.id, out

    def open_session(self, ctx: FetchContext, results: list) -> int:
        size = sum(len(entry[-1]) for entry in results)
        with self._lock:
            now = self._clock()
            if len(self._sessions) >= self.max_slots and not self._evict_for(ctx.privileged, size, now):
                return INVALID_SESSION_ID
            cached = {}
            for (topic, topic_id, parts), entry in zip(ctx.topics, results):
                for p, kw in zip(parts, entry[-1]):
                    cached[_key(topic, topic_id, p.partition)] = CachedPartition(topic, topic_id, p, kw)
            session_id = random.randint(1, _MAX_ID)
            while session_id in self._sessions:
                session_id = random.randint(1, _MAX_ID)
            self._sessions[session_id] = _Session(session_id, ctx.privileged, ctx.uses_topic_ids, now, cached)
            return session_id

    def _evict_for(self, privileged: bool, size: int, now: float) -> bool:
        """Make room for a new session of ``size`` partitions (Kafka's ``tryEvict``); under the lock."""
        if not self._sessions:
            return False
        lru = next(iter(self._sessions.values()))
        if now - lru.last_used > self.eviction_ms:
            victim = lru
        else:
            old = now - self.eviction_ms
            candidates = [s for s in self._sessions.values()
                          if s.created < old or (privileged and not s.privileged)]
            if not candidates:
                return False
            victim = min(candidates, key=_Session.worth)
            if (privileged, size, 0) < victim.worth():
                return False
        del self._sessions[victim.id]
        self.evictions += 1
        return True


def _groups(cached, name_of) -> list:
    """The session's partitions as consecutive runs of one topic, the order they are read and
    answered in (a topic may come more than once, as in Kafka's responses)."""
    out = []
    last: tuple[str | None, object, list] | None = None
    for cp in cached:
        if cp.topic is None and name_of is not None:
            cp.topic = name_of(cp.topic_id)
        if last is None or cp.topic != last[0] or cp.topic_id != last[1]:
            last = (cp.topic, cp.topic_id, [])
            out.append(last)
        last[2].append(cp)
    return out
