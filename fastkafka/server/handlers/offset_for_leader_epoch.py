"""OffsetForLeaderEpoch (KIP-101/KIP-279/KIP-320): where an epoch of the leader's log ends.

A follower asks with the latest epoch it holds and truncates its log to the answer before it
fetches; a consumer asks with the epoch of the last record it read to detect a truncated log.
The answer is ``(epoch, end offset)`` from the leader-epoch cache: the log end for the current
epoch, the start of the next one for an older epoch, ``(-1, -1)`` when the cache cannot say.
``current_leader_epoch`` (v2+) fences requests with stale metadata (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH, checked first, on a single broker against its epoch 0 too); only the
leader answers, a follower's question or a consumer's (NOT_LEADER_OR_FOLLOWER elsewhere). The
latest epoch ends at the log end offset for both, not the high watermark: Kafka's
``LeaderEpochFileCache.endOffsetFor`` answers the log end, and a consumer, which never read past
the high watermark, sees no truncation there either way. A follower (``replica_id`` >= 0, v3+)
needs CLUSTER_ACTION on the cluster, a consumer DESCRIBE on each topic.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .authorization import AclOperation, require_cluster, require_topic
from .failure import failure
from .leader import leader_log

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_offset_for_leader_epoch"]


def handle_offset_for_leader_epoch(ctx: RequestContext, req):
    cls = ctx.codec.api.response
    from_replica = ctx.version >= 3 and req.replica_id >= 0
    if from_replica:
        require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            kw = dict(partition=p.partition, error_code=0, leader_epoch=-1, end_offset=-1)
            try:
                if not from_replica:
                    require_topic(ctx, AclOperation.DESCRIBE, t.topic)
                lg = leader_log(ctx, t.topic, p.partition, p.current_leader_epoch)
                kw["leader_epoch"], kw["end_offset"] = lg.leader_epochs.end_offset_for(p.leader_epoch,
                                                                                       lg.log_end_offset)
            except Exception as e:
                kw["error_code"] = failure(e, "offset for leader epoch of %s-%d", t.topic, p.partition)[0]
            parts.append(cls.Topics.Partitions(**kw))
        out.append(cls.Topics(topic=t.topic, partitions=parts))
    return cls(throttle_time_ms=0, topics=out)
