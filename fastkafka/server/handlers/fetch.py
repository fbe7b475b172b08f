"""Fetch v0–16: file regions out of the logs, long-polled in a purgatory woken by appends.

Per partition the log resolves ``(segment file, position, length)``; the response carries that
region and the network processor ``sendfile``\\ s it (DESIGN §3) — no record bytes enter Python,
except for v0–v3 fetchers, which get the v2 batches down-converted to the message format they
read (magic 0 for v0–v1, magic 1 for v2–v3).

Limits (KIP-74, v3+): ``max_bytes`` bounds the whole response and ``partition_max_bytes`` each
partition, but the first partition with data returns at least one whole batch so a consumer
can never get stuck behind a batch larger than its limits. Older versions may get a partial
trailing batch, which their clients skip by size.

Long poll: if fewer than ``min_bytes`` are available and ``max_wait_ms`` > 0, the fetch waits in
the broker's fetch purgatory, watched under each of its partitions; an append to any of them
re-reads, and the deadline answers with whatever is there.

Followers (``replica_id`` >= 0, cluster mode) read up to the log end instead of the high
watermark, and each fetch offset tells the replica manager how far the follower got (which moves
the high watermark and the ISR). ``current_leader_epoch`` (v9+) older than the partition's
answers FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (on a single broker the partition's
epoch is 0, as Metadata says; the check is leader.py's, shared with ListOffsets and
OffsetForLeaderEpoch).

A follower's partition listed for this broker in ``leader.replication.throttled.replicas`` is
answered empty while the follower is out of the ISR and the leader's replication throttle is over
its rate (KIP-73, :mod:`..replication_quota`); the bytes sent for such partitions are recorded
against it when the response goes out.

``last_fetched_epoch`` (v12+, flexible): the epoch of the last record the fetcher holds; when its
log has diverged from the leader's (that epoch ends here before the fetch offset, or this log
never had it), the partition is answered with no records and ``diverging_epoch`` (the epoch and
end offset to truncate to), as Kafka's leaders answer consumers and followers.

READ_COMMITTED (v4+) reads up to the last stable offset (below every open transaction) and
lists the aborted transactions of what it returns, from the segments' aborted-transaction
indexes; clients drop those producers' batches up to their ABORT markers. Every answer reports
the last stable offset. With an authorizer a consumer needs READ on each topic and a follower
CLUSTER_ACTION on the cluster (TOPIC_AUTHORIZATION_FAILED per partition otherwise).

Fetch sessions (v7+, KIP-227, :mod:`..fetch_sessions`): the session cache turns the request into
the partitions to read (a full fetch's own, or every partition of an incremental fetch's session)
and, when the answer goes out, into the partitions to send (an incremental fetch's changed ones)
and the session id; a long poll waits on all the partitions read.

Topic ids (v13+, KIP-516): topics are named by id, answered by id; an id no topic has answers
UNKNOWN_TOPIC_ID for each of its partitions (a topic deleted and created again under its name is
another topic, so a consumer never reads the new one at the old one's offsets). v14 only adds
tiered storage's error, which a broker without tiered storage never answers; v15 moves the
follower's id into the tagged ``replica_state`` (KIP-903). v16 (KIP-951): a partition refused
with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries ``current_leader`` and the response
the leaders' ``node_endpoints`` on the request's listener, so the client goes to the new leader
without asking for metadata first (``leader.hint_leaders``, shared with Produce v10).
"""
from __future__ import annotations

from typing import TYPE_CHECKING


from fastkafka import errors
from fastkafka.protocol.messages.core import fetch_replica_id

from ..authorizer import TOPIC, AclOperation
from ..dispatch import DELAYED
from ..fetch_sessions import FetchContext
from ..purgatory import DelayedOperation
from ..send import FileRegion
from .failure import failure
from .leader import hint_leaders, leader_log

if TYPE_CHECKING:
    from ..dispatch import RequestContext
    from ..metrics import BrokerMetrics

__all__ = ["handle_fetch"]


READ_COMMITTED = 1
_LEADER_HINTS = 16      # KIP-951: the leader and its address come with a refusal
_NOT_LED = frozenset({errors.NotLeaderOrFollowerError.code, errors.FencedLeaderEpochError.code})


class _Read:
    """One pass over the requested partitions: per-partition results and the bytes found."""

    __slots__ = ("results", "total", "errored", "replication", "throttled")

    def __init__(self, replication: bool = False):
        self.results: list[tuple] = []     # per topic: (name, topic id or None, [partition response kwargs])
        self.total = 0
        self.errored = False
        self.replication = replication    # a follower's fetch (counted apart from consumers' bytes out)
        self.throttled = 0    # bytes of a follower's throttled partitions (the leader's replication quota)


def _topics(ctx: RequestContext, req):
    """``(name, topic id, partitions)`` per requested topic; v13+ name topics by id (the name is
    None when no topic has the id)."""
    if ctx.version < 13:
        return [(t.topic, None, t.partitions) for t in req.topics]
    name_of = ctx.services.topics.name_of
    return [(name_of(t.topic_id), t.topic_id, t.partitions) for t in req.topics]


def _session(ctx: RequestContext, req) -> FetchContext:
    """The request's fetch session context (v0-6: none, the request's partitions)."""
    topics = _topics(ctx, req)
    if ctx.version < 7:
        return FetchContext(None, topics=topics)
    name_of = ctx.services.topics.name_of if ctx.version >= 13 else None
    # a session keys a v13+ partition by its topic id alone: no name needed to forget it
    forgotten = [(None, t.topic_id, t.partitions) if name_of else (t.topic, None, t.partitions)
                 for t in req.forgotten_topics_data]
    return ctx.services.fetch_sessions.context(ctx.version, req.session_id, req.session_epoch, topics, forgotten,
                                             fetch_replica_id(ctx.version, req) >= 0, name_of)


def _read_all(ctx: RequestContext, req, topics) -> _Read:
    replicas = ctx.services.replicas
    version = ctx.version
    rid = fetch_replica_id(version, req)
    # a follower's fetch (cluster mode): the replica manager records its progress
    followed = replicas if replicas is not None and rid >= 0 else None
    follower = rid if followed is not None else -1
    down_magic = 0 if version <= 1 else (1 if version <= 3 else None)
    kip74 = version >= 3
    budget = req.max_bytes if kip74 else 1 << 62
    committed = version >= 4 and req.isolation_level == READ_COMMITTED
    from_replica = rid >= 0
    out = _Read(from_replica)
    quota = followed.leader_quota if followed is not None and not followed.leader_quota.unlimited else None
    for topic, topic_id, partitions in topics:
        parts = []
        # Kafka: a follower needs CLUSTER_ACTION on the cluster, a consumer READ on each topic
        allowed = (ctx.authorize_cluster(AclOperation.CLUSTER_ACTION) if from_replica
                   else topic is None or ctx.authorize(AclOperation.READ, TOPIC, topic))
        for p in partitions:
            hw = start = stable = -1
            code = 0
            diverging = None
            records: bytes | FileRegion = b""
            aborted: list | None = [] if committed else None
            try:
                if not allowed:
                    raise errors.TopicAuthorizationFailedError(f"not authorized to read {topic}")
                if topic is None:
                    raise errors.UnknownTopicIdError(f"no topic has the id {topic_id}")
                lg = leader_log(ctx, topic, p.partition, p.current_leader_epoch)
                if followed is not None:
                    followed.follower_fetched(topic, p.partition, follower, p.fetch_offset, p.log_start_offset)
                hw, start = lg.high_watermark, lg.log_start_offset
                stable = lg.last_stable_offset
                upto = None if follower >= 0 else (stable if committed else hw)
                limit = min(p.partition_max_bytes, budget - out.total)
                throttled = quota is not None and quota.is_throttled(
                    lg.config.leader_replication_throttled_replicas, p.partition)
                # held back: answered empty, nothing recorded
                held = throttled and followed is not None and followed.holds_back(topic, p.partition, follower)
                if p.last_fetched_epoch >= 0 and version >= 12:
                    diverging = _diverging(lg, p.last_fetched_epoch, p.fetch_offset)
                    held = held or diverging is not None
                if not held and (limit > 0 or (kip74 and out.total == 0)):
                    region = lg.read(p.fetch_offset, max(limit, 0), max_offset=upto,
                                     min_one_message=kip74 and out.total == 0)
                    hw, start = region.high_watermark, region.log_start_offset
                    if region.length:
                        if down_magic is not None:
                            records = _down_convert(region, down_magic)
                        else:
                            records = FileRegion(region.file.fileno(), region.position, region.length,
                                                 owner=region)
                        out.total += len(records)
                        if throttled:
                            out.throttled += len(records)
                        if committed:
                            aborted = [{"producer_id": pid, "first_offset": first} for pid, first
                                       in lg.aborted_transactions(p.fetch_offset, stable)]
            except Exception as e:
                code = failure(e, "fetch from %s-%d", topic, p.partition)[0]
                out.errored = True
            parts.append(dict(partition_index=p.partition, error_code=code, high_watermark=hw,
                              last_stable_offset=stable, log_start_offset=start,
                              aborted_transactions=aborted, diverging_epoch=diverging,
                              preferred_read_replica=-1, records=records))
        out.results.append((topic, topic_id, parts))
    return out


def _diverging(lg, last_fetched_epoch: int, fetch_offset: int) -> dict | None:
    """v12+ (KIP-320, Kafka's ``Partition.fetchRecords``): the fetcher's log diverges from this
    one when the epoch of its last record ends here before its fetch offset, or this log never
    had that epoch; then the answer carries no records, only where the fetcher must truncate
    to (the largest epoch here not after its one, and that epoch's end offset)."""
    epoch, end = lg.leader_epochs.end_offset_for(last_fetched_epoch, lg.log_end_offset)
    if end < fetch_offset or epoch < last_fetched_epoch:
        return {"epoch": epoch, "end_offset": end}
    return None


def _count(metrics: BrokerMetrics, read: _Read) -> None:
    """The answer's bytes and failed partitions, once per topic (the response is final here)."""
    for name, _topic_id, parts in read.results:
        if name is None:
            continue
        metrics.fetched(name, sum(len(kw["records"]) for kw in parts),
                            sum(1 for kw in parts if kw["error_code"]), read.replication)


def _down_convert(region, magic: int) -> bytes:
    from fastkafka import legacy  # noqa: PLC0415  (only old fetchers pay for the import)
    return legacy.down_convert(region.read_bytes(), magic)


def _response(ctx: RequestContext, read: _Read, session: FetchContext):
    if ctx.metrics is not None:
        _count(ctx.metrics, read)
    replicas = ctx.services.replicas
    if read.throttled and replicas is not None:       # only followers' fetches are throttled
        replicas.leader_quota.record(read.throttled)
    error_code, session_id, results = session.answer(read.results)
    cls = ctx.codec.api.response
    nodes = []
    if ctx.version >= _LEADER_HINTS:
        refused = [(name, kw["partition_index"], kw) for name, _, parts in results for kw in parts
                   if kw["error_code"] in _NOT_LED]
        if refused:
            nodes = hint_leaders(ctx, refused, cls.Responses.Partitions.CurrentLeader, cls.NodeEndpoints)
    return cls(throttle_time_ms=0, error_code=error_code, session_id=session_id, node_endpoints=nodes, responses=[
        cls.Responses(topic=name, topic_id=topic_id, partitions=[cls.Responses.Partitions(**kw) for kw in parts])
        for name, topic_id, parts in results])


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes``; completes on an append that satisfies it or at its deadline."""

    def __init__(self, ctx, req, session: FetchContext):
        super().__init__(req.max_wait_ms)
        self.ctx, self.req, self.session = ctx, req, session
        self.read: _Read | None = None

    def try_complete(self) -> bool:
        read = _read_all(self.ctx, self.req, self.session.topics)
        if read.total >= self.req.min_bytes or read.errored:
            self.read = read
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        read = self.read if self.read is not None else _read_all(self.ctx, self.req, self.session.topics)
        self.ctx.send(_response(self.ctx, read, self.session))


def handle_fetch(ctx: RequestContext, req):
    session = _session(ctx, req)
    if session.error:
        return _response(ctx, _Read(), session)
    read = _read_all(ctx, req, session.topics)
    if req.max_wait_ms <= 0 or read.total >= req.min_bytes or read.errored or not session.topics:
        return _response(ctx, read, session)
    keys = [(name, p.partition) for name, _, partitions in session.topics if name is not None
            for p in partitions]
    op = DelayedFetch(ctx, req, session)
    ctx.services.fetch_purgatory.try_complete_else_watch(op, keys)
    return DELAYED
