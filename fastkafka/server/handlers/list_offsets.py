"""ListOffsets: v0 is the seeds' ``getOffsetsBefore`` (segment base offsets, newest first, up to
``max_num_offsets``); v1+ answer one (timestamp, offset) per partition.

Special timestamps: -1 latest (the high watermark; with isolation_level READ_COMMITTED, v2+,
the last stable offset), -2 earliest (the log start offset); any
other value finds the first record with a timestamp at or after it (offset -1 and timestamp -1
when there is none, as Kafka answers). Each topic needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from fastkafka import errors

from .authorization import AclOperation, require_topic
from .failure import failure

__all__ = ["handle_list_offsets"]

LATEST = -1
READ_COMMITTED = 1


def handle_list_offsets(ctx, req):
    topics = ctx.broker.topics
    version = ctx.version
    committed = version >= 2 and req.isolation_level == READ_COMMITTED
    cls = ctx.codec.api.response
    out = []
    for t in req.topics:
        parts = []
        seen = set()
        for p in t.partitions:
            kw = dict(partition_index=p.partition_index, error_code=0, old_style_offsets=[],
                      timestamp=-1, offset=-1, leader_epoch=-1)
            try:
                if version >= 1 and p.partition_index in seen:
                    raise errors.InvalidRequestError("partition listed twice")
                seen.add(p.partition_index)
                require_topic(ctx, AclOperation.DESCRIBE, t.name)
                lg = topics.log(t.name, p.partition_index)
                if version == 0:
                    if p.max_num_offsets < 0:
                        raise errors.InvalidRequestError("max_num_offsets is negative")
                    kw["old_style_offsets"] = lg.offsets_before(p.timestamp, p.max_num_offsets)
                elif p.timestamp == LATEST and committed:
                    kw["offset"] = lg.last_stable_offset
                    kw["leader_epoch"] = 0
                else:
                    found = lg.offset_for_timestamp(p.timestamp)
                    if found is not None:
                        kw["offset"], kw["timestamp"] = found
                        kw["leader_epoch"] = 0
            except Exception as e:
                kw["error_code"] = failure(e, "list offsets of %s-%d", t.name, p.partition_index)[0]
            parts.append(cls.Topics.Partitions(**kw))
        out.append(cls.Topics(name=t.name, partitions=parts))
    return cls(throttle_time_ms=0, topics=out)
