"""Produce: hand each partition's records to its log, as they arrived (DESIGN §3).

The records are a writable ``memoryview`` into the request frame; ``Log.append`` validates
them in Cython and stamps offsets in place, so nothing here touches individual records.
Produce v0–v2 may carry legacy message sets (magic 0/1): they are converted to v2 batches first
(``fastkafka.legacy.to_v2``); v3+ must be magic 2 (UNSUPPORTED_FOR_MESSAGE_FORMAT otherwise).

acks: 0 → no response at all (the connection is simply unmuted); 1 and -1 → answer after the
append (on a single broker the leader is every replica, so -1 equals 1). Any other value →
INVALID_REQUIRED_ACKS for every partition. Errors are per partition and never stop the others.
"""
from __future__ import annotations


from fastkafka import errors
from fastkafka.records import magic_of

from .failure import failure

__all__ = ["handle_produce"]


_INVALID_ACKS = errors.InvalidRequiredAcksError.code
_UNSUPPORTED_FORMAT = errors.UnsupportedForMessageFormatError.code


def _append(topics, topic: str, partition: int, records, version: int):
    """(error_code, base_offset, log_append_time, log_start_offset) for one partition."""
    lg = topics.log(topic, partition)
    if records is None:
        raise errors.InvalidRecordError("null records")
    magic = magic_of(records) if len(records) else 2
    if magic != 2:
        if version >= 3 or magic not in (0, 1):
            if magic in (0, 1):
                return _UNSUPPORTED_FORMAT, -1, -1, -1
            raise errors.CorruptMessageError(f"unknown magic {magic}")
        from fastkafka import legacy  # noqa: PLC0415  (only old clients pay for the import)
        records = legacy.to_v2(records)
    info = lg.append(records, leader_epoch=0)
    return 0, info.base_offset, info.log_append_time, info.log_start_offset


def handle_produce(ctx, req):
    topics = ctx.broker.topics
    version = ctx.version
    resp_cls = ctx.codec.api.response
    acks = req.acks
    out = []
    for t in req.topic_data:
        parts = []
        for p in t.partition_data:
            if acks not in (0, 1, -1):
                code, base, lat, lso = _INVALID_ACKS, -1, -1, -1
            else:
                try:
                    code, base, lat, lso = _append(topics, t.name, p.index, p.records, version)
                except Exception as e:
                    code, base, lat, lso = failure(e, "append to %s-%d", t.name, p.index)[0], -1, -1, -1
            parts.append(resp_cls.Responses.PartitionResponses(
                index=p.index, error_code=code, base_offset=base, log_append_time_ms=lat, log_start_offset=lso))
        out.append(resp_cls.Responses(name=t.name, partition_responses=parts))
    if acks == 0:
        return None
    return resp_cls(responses=out, throttle_time_ms=0)
