"""One mirror stream: a member of the mirror's group on the source, copying what it is assigned.

``--num-streams N`` runs N of them in one process, each a thread with its own group membership,
fetcher (in a :class:`~fastkafka.mirror.prefetch.Prefetcher`), producers and connections --
the seeds' mirror: consumer streams of one group on the source, producing to the target.

The stream thread's loop: join the group when the mirror's topics changed (a new matching
topic, a source topic that grew) or the coordinator asks for a rebalance; heartbeat; take the
next converted poll from the prefetcher and hand it to the delivery
(:mod:`~fastkafka.mirror.delivery`); commit every ``commit_interval_ms`` -- and, with
exactly-once, as soon as a send caught up with the source: a read_committed reader of the target
sees nothing of a transaction until it commits, and an idle stream has nothing to gain by
waiting (at most ten such commits per interval). A rebalance pauses
the prefetcher, commits what was delivered, joins, and starts the new partitions from the
delivery's positions. A Kafka error (a broker down, a fenced producer) drops what is in flight
without committing it and rejoins, so the stream resumes from what was committed: duplicates at
worst with at-least-once, nothing twice with exactly-once. Other exceptions end the stream and
the mirror with them.

Example::

    s = Stream(mirror_context, index=0)     # built by fastkafka.mirror.Mirror
    s.start(); ...; s.stop(); s.join()
"""
from __future__ import annotations

import logging
import threading
import time

from fastkafka import errors
from fastkafka.client.fetcher import EARLIEST, LATEST, Fetcher
from fastkafka.client.group_member import GroupMember
from fastkafka.client.metadata import Cluster

from .convert import Converted
from .fatal import FATAL
from .delivery import AtLeastOnce, ExactlyOnce
from .prefetch import Prefetcher
from .progress import Stats
from .syncs import SyncTracker

__all__ = ["Stream"]

log = logging.getLogger("fastkafka.mirror")
_MORE = 3       # polls' results sent together at most, beyond the first
# A caught-up stream commits at once (see _loop), but at most _CAUGHT_UP_SHARE times per
# commit_interval_ms: a trickle of records then costs a bounded number of transactions.
_CAUGHT_UP_SHARE = 10


class Stream(threading.Thread):
    """A mirror stream thread. ``context`` provides ``source_config`` (ClientConfig),
    ``target_props`` (dict), ``group``, ``selector`` (TopicSelector), ``exactly_once``,
    ``commit_interval_ms``, ``routes()`` -> ``(version, {source topic: Route})``, and
    ``sync_writer`` (a :class:`~fastkafka.mirror.syncs.SyncWriter`, or None: no offset syncs)
    with ``offset_lag_max``, and ``metrics`` (a :class:`~fastkafka.mirror.metrics.MirrorMetrics`,
    or None: metrics off)."""

    def __init__(self, context, index: int):
        super().__init__(name=f"fastkafka-mirror-{index}", daemon=True)
        self.context = context
        self.stats = Stats()
        self.metrics = context.metrics.stream() if context.metrics is not None else None
        self.error: BaseException | None = None
        self._stop_event = threading.Event()
        c = context.source_config
        self.cluster = Cluster(c)
        self.member = GroupMember(self.cluster, context.group)
        writer = getattr(context, "sync_writer", None)
        syncs = None if writer is None else SyncTracker(writer, context.offset_lag_max)
        self.delivery = (ExactlyOnce(self.member, context.target_props, context.group,
                                     context.selector.target_topic, syncs)
                         if context.exactly_once else AtLeastOnce(self.member, context.target_props, syncs))
        self.prefetcher = Prefetcher(Fetcher(Cluster(c), isolation_level=1),
                                     name=f"fastkafka-mirror-{index}-fetch")
        self.default_start = EARLIEST if c["auto.offset.reset"] == "earliest" else LATEST
        self.heartbeat_s = c["heartbeat.interval.ms"] / 1000
        self.backoff_s = max(c["retry.backoff.ms"] / 1000, 0.5)
        self.version = None          # the routes version of the current membership
        self.owned: set[tuple[str, int]] = set()
        self._rejoin = True

    def stop(self) -> None:
        self._stop_event.set()

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # noqa: BLE001 - the mirror re-raises it
            self.error = e
            log.error("stream %s failed: %r", self.name, e)
        finally:
            self._shutdown()

    def _loop(self) -> None:
        commit_every = self.context.commit_interval_ms / 1000
        next_commit = next_hb = last_commit = time.monotonic()
        while not self._stop_event.is_set():
            try:
                if self._rejoin or self.member.rejoin_needed or self.context.routes()[0] != self.version:
                    self._rebalance()
                    next_hb = time.monotonic() + self.heartbeat_s
                    next_commit = time.monotonic() + commit_every
                if not self.owned:
                    self._stop_event.wait(0.1)
                    next_hb = self._heartbeat(next_hb)
                    continue
                # never sleep past a due commit: an idle stream would hold its transactions
                # open up to 100 ms longer than commit_interval_ms
                item = self.prefetcher.get(min(0.1, max(0.0, next_commit - time.monotonic())))
                if item is not None and self._deliver([item] + self.prefetcher.ready(_MORE)) \
                        and self.delivery.commits_when_caught_up:
                    next_commit = min(next_commit, last_commit + commit_every / _CAUGHT_UP_SHARE)
                now = time.monotonic()
                if now >= next_commit:
                    self.delivery.commit()
                    last_commit, next_commit = now, now + commit_every
                next_hb = self._heartbeat(next_hb)
            except FATAL:
                raise
            except errors.KafkaError as e:
                log.warning("stream %s: %s: %s; resuming from the last commit", self.name, type(e).__name__, e)
                self.prefetcher.pause()
                self.delivery.abandon()
                self.owned, self._rejoin = set(), True
                self._stop_event.wait(self.backoff_s)

    def _deliver(self, items: list) -> bool:
        """Send what the prefetcher has ready in one go: the producer pipelines the requests
        (the target appends one while the next is on the wire) instead of waiting for each.
        True when this caught up with the source: every partition polled was left with no lag
        and no further poll is waiting."""
        parts: dict = {}
        lag: dict = {}
        for item in items:
            if item.error is not None:
                raise item.error
            for part in item.parts:
                prev = parts.get(part.source)
                parts[part.source] = part if prev is None else Converted(
                    part.source, part.next_offset, prev.chunks + part.chunks,
                    prev.records + part.records, prev.bytes + part.bytes,
                    None if prev.offsets is None or part.offsets is None else prev.offsets + part.offsets)
            lag.update(item.lag)
        if self.metrics is None:
            self.delivery.send(list(parts.values()))
        else:
            sent = int(time.time() * 1000)
            self.delivery.send(list(parts.values()))
            self.metrics.delivered(parts.values(), sent, int(time.time() * 1000))
        self.stats.add(sum(p.records for p in parts.values()), sum(p.bytes for p in parts.values()), lag)
        return bool(parts) and not any(lag.values()) and self.prefetcher.queue.empty()

    def _heartbeat(self, due: float) -> float:
        now = time.monotonic()
        if now < due or not self.member.member_id:
            return due
        if not self.member.heartbeat():
            self._rejoin = True
        return now + self.heartbeat_s

    def _rebalance(self) -> None:
        """Hand over cleanly (commit what was delivered), join with the current topics, start
        the new assignment where the delivery says."""
        self.prefetcher.pause()
        if self.owned:
            self.delivery.revoke()
            self.owned = set()
        version, routes = self.context.routes()
        self.cluster.invalidate()      # the group leader assigns from fresh partition counts
        if routes:
            assigned = self.member.join(sorted(routes))
        else:
            self.member.leave()
            assigned = set()
        self.version, self._rejoin = version, False
        assigned = {tp for tp in assigned if tp[0] in routes}
        self.stats.owned(assigned)
        if not assigned:
            return
        starts = self.delivery.start(assigned)
        self.prefetcher.resume({tp: starts.get(tp, self.default_start) for tp in assigned}, routes)
        self.owned = assigned
        log.info("stream %s: %d partitions (%s)", self.name, len(assigned),
                 ", ".join(f"{t}-{p}@{starts.get((t, p), 'reset')}" for t, p in sorted(assigned)))

    def _shutdown(self) -> None:
        """Stop fetching, commit what was delivered (closing open transactions), leave."""
        try:
            self.prefetcher.close()
            if self.owned and self.error is None:
                self.delivery.revoke()
        except errors.KafkaError as e:
            log.warning("stream %s: final commit failed: %s", self.name, e)
        finally:
            self.owned = set()
            self.member.leave()
            self.delivery.close()
            self.prefetcher.fetcher.close()
            self.prefetcher.fetcher.cluster.close()
            self.cluster.close()
