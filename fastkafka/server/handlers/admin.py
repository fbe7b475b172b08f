"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords.

Each entry of a request succeeds or fails on its own with Kafka's error code (and, where the
version has one, message): INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION.
``validate_only`` runs every check and changes nothing. A topic named twice in one request is
INVALID_REQUEST for each occurrence, as Kafka answers. Changes are synchronous in embedded mode,
so ``timeout_ms`` never expires.
"""
from __future__ import annotations

import logging
from collections import Counter

from fastkafka import errors

__all__ = ["handle_create_topics", "handle_delete_topics", "handle_create_partitions",
           "handle_delete_records"]

log = logging.getLogger("fastkafka.server")


def _failure(e: Exception) -> tuple[int, str | None]:
    if isinstance(e, errors.KafkaError):
        return e.code, str(e) or None
    log.exception("topic administration failed")
    return errors.UnknownServerError.code, "unexpected server error"


def _duplicates(names) -> set[str]:
    return {n for n, c in Counter(names).items() if c > 1}


def handle_create_topics(ctx, req):
    topics = ctx.broker.topics
    cls = ctx.codec.api.response
    dup = _duplicates(t.name for t in req.topics)
    out = []
    for t in req.topics:
        code, msg = 0, None
        try:
            if t.name in dup:
                raise errors.InvalidRequestError(f"Create topics request from client contains topic {t.name} more than once.")
            configs = {c.name: c.value for c in t.configs}
            if req.validate_only:
                topics.validate_create(t.name, t.num_partitions, t.replication_factor, configs, t.assignments)
            else:
                topics.create(t.name, t.num_partitions, t.replication_factor, configs, t.assignments)
        except Exception as e:  # noqa: BLE001 — each topic answers for itself
            code, msg = _failure(e)
        out.append(cls.Topics(name=t.name, error_code=code, error_message=msg))
    return cls(throttle_time_ms=0, topics=out)


def handle_delete_topics(ctx, req):
    topics = ctx.broker.topics
    cls = ctx.codec.api.response
    dup = _duplicates(req.topic_names)
    out = []
    for name in req.topic_names:
        code = 0
        try:
            if name in dup:
                raise errors.InvalidRequestError("topic listed more than once")
            topics.delete(name)
        except Exception as e:  # noqa: BLE001
            code, _ = _failure(e)
        out.append(cls.Responses(name=name, error_code=code))
    return cls(throttle_time_ms=0, responses=out)


def handle_create_partitions(ctx, req):
    topics = ctx.broker.topics
    cls = ctx.codec.api.response
    dup = _duplicates(t.name for t in req.topics)
    out = []
    for t in req.topics:
        code, msg = 0, None
        try:
            if t.name in dup:
                raise errors.InvalidRequestError("topic listed more than once")
            if t.assignments is not None:
                me = ctx.broker.broker_id
                if any(list(a.broker_ids) != [me] for a in t.assignments):
                    raise errors.InvalidReplicaAssignmentError(f"every new partition must be on broker {me}")
            topics.add_partitions(t.name, t.count, validate_only=req.validate_only)
        except Exception as e:  # noqa: BLE001
            code, msg = _failure(e)
        out.append(cls.Results(name=t.name, error_code=code, error_message=msg))
    return cls(throttle_time_ms=0, results=out)


def handle_delete_records(ctx, req):
    topics = ctx.broker.topics
    cls = ctx.codec.api.response
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            low, code = -1, 0
            try:
                low = topics.log(t.name, p.partition_index).delete_records(p.offset)
            except Exception as e:  # noqa: BLE001
                code, _ = _failure(e)
            parts.append(cls.Topics.Partitions(partition_index=p.partition_index, low_watermark=low,
                                               error_code=code))
        out.append(cls.Topics(name=t.name, partitions=parts))
    return cls(throttle_time_ms=0, topics=out)
