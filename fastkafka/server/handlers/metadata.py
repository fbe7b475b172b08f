"""Metadata: this broker as the only broker and the controller, and the requested topics.

Which topics: v0 sends an empty list for "all"; v1+ sends null for all and an empty list for
none. A missing topic is created with the broker defaults when ``auto.create.topics.enable`` is
on and the request allows it (``allow_auto_topic_creation``, v4+; always before v4), and is then
returned at once with its partitions: in embedded mode the partitions exist as soon as the call
returns, so there is nothing to wait for (Kafka answers LEADER_NOT_AVAILABLE here and lets the
client retry).
"""
from __future__ import annotations

from fastkafka import errors
from fastkafka.cluster.embedded import validate_topic_name

from ..topics import INTERNAL_TOPICS

__all__ = ["handle_metadata"]

_NONE = 0


def _topic(resp_cls, broker, info, version):
    me = broker.broker_id
    parts = [resp_cls.Topics.Partitions(error_code=_NONE, partition_index=p, leader_id=me, leader_epoch=0,
                                        replica_nodes=[me], isr_nodes=[me], offline_replicas=[])
             for p in range(info.partitions)]
    return resp_cls.Topics(error_code=_NONE, name=info.name, is_internal=info.name in INTERNAL_TOPICS,
                           partitions=parts)


def handle_metadata(ctx, req):
    broker = ctx.broker
    topics = broker.topics
    resp_cls = ctx.codec.api.response
    version = ctx.version
    host, port = broker.endpoint(ctx.listener)
    out_topics = []
    if req.topics is None or (version == 0 and not req.topics):
        for info in sorted(topics.all().values(), key=lambda i: i.name):
            out_topics.append(_topic(resp_cls, broker, info, version))
    else:
        allow_create = req.allow_auto_topic_creation if version >= 4 else True
        for t in req.topics:
            name = t.name
            info = topics.get(name)
            if info is None:
                try:
                    validate_topic_name(name)
                except errors.KafkaError as e:
                    out_topics.append(resp_cls.Topics(error_code=e.code, name=name, partitions=[]))
                    continue
                if allow_create:
                    try:
                        info = topics.auto_create(name)
                    except errors.KafkaError as e:
                        out_topics.append(resp_cls.Topics(error_code=e.code, name=name, partitions=[]))
                        continue
            if info is None:
                out_topics.append(resp_cls.Topics(error_code=errors.UnknownTopicOrPartitionError.code,
                                                  name=name, partitions=[]))
            else:
                out_topics.append(_topic(resp_cls, broker, info, version))
    return resp_cls(
        throttle_time_ms=0,
        brokers=[resp_cls.Brokers(node_id=broker.broker_id, host=host, port=port, rack=None)],
        cluster_id=broker.cluster_id,
        controller_id=broker.broker_id,
        topics=out_topics,
    )
