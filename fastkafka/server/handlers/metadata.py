"""Metadata: this broker as the only broker and the controller, and the requested topics.

Which topics: v0 sends an empty list for "all"; v1+ sends null for all and an empty list for
none. A missing topic is created with the broker defaults when ``auto.create.topics.enable`` is
on and the request allows it (``allow_auto_topic_creation``, v4+; always before v4), and is then
returned at once with its partitions: in embedded mode the partitions exist as soon as the call
returns, so there is nothing to wait for (Kafka answers LEADER_NOT_AVAILABLE here and lets the
client retry).

With an authorizer, "all topics" lists only those the principal may DESCRIBE; a named topic it
may not describe answers TOPIC_AUTHORIZATION_FAILED (existing or not), and auto-creation needs
CREATE on the cluster or on the topic (Kafka's KafkaApis). An auto-created topic's partitions
are charged to the client's controller mutation quota (KIP-599) without refusing or throttling
this response: the client's next CreateTopics finds the bucket that much emptier.

Cluster mode (``zookeeper.connect``): the brokers are every registered broker, the controller is
the elected one, and each partition carries the leader, replicas and ISR the controller wrote; a
partition without a leader answers LEADER_NOT_AVAILABLE so clients retry. The leader epoch (v7+)
is the one Fetch, ListOffsets and OffsetForLeaderEpoch fence ``current_leader_epoch`` against
(handlers/leader.py): the state znode's in cluster mode, ``EMBEDDED_LEADER_EPOCH`` (0) on a
single broker, where every log's leader-epoch cache holds that one epoch from its start. Auto-creation waits
(bounded) for the controller to elect the new partitions' leaders.

Topic ids (v10+, KIP-516): every topic answers its id. A request may name topics by id (v12+):
each is answered by name and id, or UNKNOWN_TOPIC_ID with a null name when no topic has it (and
TOPIC_AUTHORIZATION_FAILED with a null name when the principal may not describe it, so an id
tells nobody a name); ids are never auto-created. As in Kafka, ids and null names before v12 are
INVALID_REQUEST. v10's ``include_cluster_authorized_operations`` works as in v8; v11 dropped it
with the response's ``cluster_authorized_operations``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors
from fastkafka.cluster.embedded import validate_topic_name
from fastkafka.protocol.types import UUID_ZERO

from ..authorizer import CLUSTER_NAME, TOPIC, AclOperation, ResourceType
from ..mutation_quota import record_auto_creation
from ..topics import EMBEDDED_LEADER_EPOCH, INTERNAL_TOPICS

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_metadata", "live_brokers"]

_NONE = 0
_NO_LEADER = errors.LeaderNotAvailableError.code


def _cluster_partitions(resp_cls, metadata, info):
    """Cluster mode: each partition's leader, replicas and ISR as the controller last wrote them."""
    live = metadata.brokers()
    parts = []
    for p in range(info.partitions):
        view = metadata.partition(info.name, p)
        if view is None:
            continue
        parts.append(resp_cls.Topics.Partitions(
            error_code=_NONE if view.leader >= 0 else _NO_LEADER, partition_index=p, leader_id=view.leader,
            leader_epoch=view.leader_epoch, replica_nodes=list(view.replicas), isr_nodes=list(view.isr),
            offline_replicas=[r for r in view.replicas if r not in live]))
    return parts


def _topic(ctx: RequestContext, info, ops_asked: bool):
    svc, resp_cls = ctx.services, ctx.codec.api.response
    me = svc.broker_id
    if svc.cluster is not None:
        parts = _cluster_partitions(resp_cls, svc.metadata, info)
    else:
        parts = [resp_cls.Topics.Partitions(error_code=_NONE, partition_index=p, leader_id=me,
                                            leader_epoch=EMBEDDED_LEADER_EPOCH,
                                            replica_nodes=[me], isr_nodes=[me], offline_replicas=[])
                 for p in range(info.partitions)]
    return resp_cls.Topics(error_code=_NONE, name=info.name, topic_id=info.topic_id,
                           is_internal=info.name in INTERNAL_TOPICS, partitions=parts,
                           topic_authorized_operations=ctx.authorized_operations(TOPIC, info.name, ops_asked))


def live_brokers(ctx: RequestContext) -> tuple[list[tuple[int, str, int, str | None]], int]:
    """``([(broker id, host, port, rack)], controller id)`` as seen on the client's listener:
    this broker in embedded mode, every live registered broker in cluster mode."""
    svc = ctx.services
    if svc.cluster is None:
        host, port = svc.endpoint(ctx.listener)
        return [(svc.broker_id, host, port, None)], svc.broker_id
    nodes = []
    md = svc.zk_metadata()
    for b in sorted(md.brokers().values(), key=lambda b: b.id):
        ep = b.endpoint(ctx.listener)
        if ep is not None:
            nodes.append((b.id, ep[0], ep[1], b.rack))
    return nodes, md.controller_id


def _topic_ids_asked(req, version: int) -> list:
    """The distinct non-zero topic ids a v10+ request names (Kafka then ignores its names)."""
    ids = []
    for t in req.topics:
        if version < 12 and (t.name is None or t.topic_id != UUID_ZERO):
            raise errors.InvalidRequestError(f"Metadata v{version} names topics by name only")
        if t.topic_id == UUID_ZERO and t.name is None:
            raise errors.InvalidRequestError("a topic needs a name or an id")
        if t.topic_id != UUID_ZERO and t.topic_id not in ids:
            ids.append(t.topic_id)
    return ids


def handle_metadata(ctx: RequestContext, req):
    svc = ctx.services
    topics = svc.topics
    resp_cls = ctx.codec.api.response
    version = ctx.version
    out_topics = []
    ops_asked = version >= 8 and req.include_topic_authorized_operations
    describe = AclOperation.DESCRIBE
    ids = _topic_ids_asked(req, version) if version >= 10 and req.topics else []
    if ids:
        for i in ids:
            name = topics.name_of(i)
            info = topics.get(name) if name is not None else None
            if info is None or name is None:
                code = errors.UnknownTopicIdError.code
            elif not ctx.authorize(describe, TOPIC, name):
                code = errors.TopicAuthorizationFailedError.code
            else:
                out_topics.append(_topic(ctx, info, ops_asked))
                continue
            out_topics.append(resp_cls.Topics(error_code=code, name=None, topic_id=i, partitions=[]))
    elif req.topics is None or (version == 0 and not req.topics):
        for info in sorted(topics.all().values(), key=lambda i: i.name):
            if ctx.authorize(describe, TOPIC, info.name):
                out_topics.append(_topic(ctx, info, ops_asked))
    else:
        allow_create = req.allow_auto_topic_creation if version >= 4 else True
        denied = errors.TopicAuthorizationFailedError.code
        for t in req.topics:
            name = t.name
            if not ctx.authorize(describe, TOPIC, name):
                out_topics.append(resp_cls.Topics(error_code=denied, name=name, partitions=[]))
                continue
            info = topics.get(name)
            if info is None and allow_create and not (ctx.authorize_cluster(AclOperation.CREATE)
                                                      or ctx.authorize(AclOperation.CREATE, TOPIC, name)):
                out_topics.append(resp_cls.Topics(error_code=denied, name=name, partitions=[]))
                continue
            if info is None:
                try:
                    validate_topic_name(name)
                except errors.KafkaError as e:
                    out_topics.append(resp_cls.Topics(error_code=e.code, name=name, partitions=[]))
                    continue
                if allow_create:
                    try:
                        info = topics.auto_create(name)
                        if info is not None:
                            record_auto_creation(ctx, info.partitions)
                    except errors.KafkaError as e:
                        out_topics.append(resp_cls.Topics(error_code=e.code, name=name, partitions=[]))
                        continue
            if info is None:
                out_topics.append(resp_cls.Topics(error_code=errors.UnknownTopicOrPartitionError.code,
                                                  name=name, partitions=[]))
            else:
                out_topics.append(_topic(ctx, info, ops_asked))
    nodes, controller_id = live_brokers(ctx)
    return resp_cls(
        throttle_time_ms=0,
        brokers=[resp_cls.Brokers(node_id=i, host=h, port=p, rack=r) for i, h, p, r in nodes],
        cluster_id=svc.cluster_id,
        controller_id=controller_id,
        topics=out_topics,
        cluster_authorized_operations=ctx.authorized_operations(
            ResourceType.CLUSTER, CLUSTER_NAME, 8 <= version <= 10 and req.include_cluster_authorized_operations),
    )
