"""DeleteRecords: move a partition's log start offset forward, at its leader, and answer once
every live replica dropped the records (Kafka's DelayedDeleteRecords).

The leader moves its own log start offset at once (-1 asks for the high watermark; past the
high watermark is OFFSET_OUT_OF_RANGE: records not yet committed cannot be deleted). Followers
take the leader's log start offset from their next fetch and report theirs on the one after;
the answer waits in a purgatory until the *low watermark* — the smallest log start offset over
the leader and its followers on live brokers — reaches the requested offset, and carries it.
After ``timeout_ms`` the answer is REQUEST_TIMED_OUT with the low watermark reached so far (the
leader has deleted; a follower has not said so yet). A broker that does not lead the partition
answers NOT_LEADER_OR_FOLLOWER; one that loses the leadership while waiting answers it then.
A single broker leads every partition and answers at once. DELETE on the topic is needed
(TOPIC_AUTHORIZATION_FAILED otherwise).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors

from ..authorizer import TOPIC, AclOperation
from ..delayed_partitions import DelayedPartitions
from ..dispatch import DELAYED
from ..partition import LEADER
from .authorization import require_topic
from .failure import failure
from .leader import leader_log

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_delete_records"]

HIGH_WATERMARK = -1
_NOT_LEADER = errors.NotLeaderOrFollowerError.code
_TIMED_OUT = errors.RequestTimedOutError.code


def _delayed(ctx: RequestContext, timeout_ms: int, topics, waiting) -> DelayedPartitions:
    """Each ``(fields, (partition state, offset to reach))`` answers once the partition's low
    watermark reached the offset (NOT_LEADER_OR_FOLLOWER once this broker no longer leads it),
    REQUEST_TIMED_OUT with the low watermark reached so far when the time is up."""
    replicas = ctx.services.replicas

    def ready(w):
        part, required = w
        if part.role != LEADER:
            return {"error_code": _NOT_LEADER, "low_watermark": -1}
        low = replicas.low_watermark(part)
        return {"error_code": 0, "low_watermark": low} if low >= required else None

    def expired(w):
        return {"error_code": _TIMED_OUT, "low_watermark": replicas.low_watermark(w[0])}

    return DelayedPartitions(timeout_ms, waiting, ready=ready, expired=expired,
                             respond=lambda: ctx.send(_response(ctx, topics)))


def _response(ctx: RequestContext, topics):
    cls = ctx.codec.api.response
    return cls(throttle_time_ms=0, topics=[
        cls.Topics(name=name, partitions=[cls.Topics.Partitions(**kw) for kw in parts]) for name, parts in topics])


def handle_delete_records(ctx: RequestContext, req):
    replicas = ctx.services.replicas
    topics, waiting = [], []
    for t in req.topics:
        parts: list[dict] = []
        topics.append((t.name, parts))
        deletable = ctx.authorize(AclOperation.DELETE, TOPIC, t.name)
        for p in t.partitions:
            kw = dict(partition_index=p.partition_index, low_watermark=-1, error_code=0)
            parts.append(kw)
            try:
                if not deletable:
                    require_topic(ctx, AclOperation.DELETE, t.name)
                lg = leader_log(ctx, t.name, p.partition_index, -1)
                required = lg.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                kw["low_watermark"] = lg.delete_records(required)
                part = replicas.get(t.name, p.partition_index) if replicas is not None else None
                if part is not None:
                    waiting.append((kw, (part, required)))
            except Exception as e:  # noqa: BLE001 — each partition answers for itself
                kw["error_code"] = failure(e, "delete records of %s-%d", t.name, p.partition_index)[0]
    if waiting:
        assert replicas is not None, "only replicated partitions wait"
        _delayed(ctx, req.timeout_ms, topics, waiting).wait_in(
            replicas.delete_records_purgatory, [(w[0].topic, w[0].partition) for _, w in waiting])
        return DELAYED
    return _response(ctx, topics)
