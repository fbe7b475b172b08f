"""KIP-848's consumer group APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe, translated to
:class:`~fastkafka.coordinator.consumer_groups.ConsumerGroupHeartbeats` calls.

A heartbeat is answered once what it changed in the group is replicated in
``__consumer_offsets`` (``DELAYED``, then ``ctx.send``); ConsumerGroupDescribe at once.
Assignments travel by topic id (KIP-516); ConsumerGroupDescribe names each topic too, and each
member's regex, looked up here (a topic deleted meanwhile answers an empty name). Authorization, as
Kafka's KafkaApis: READ on the group for the heartbeat, DESCRIBE on each group described.

Example (what a confluent-kafka consumer with ``group.protocol=consumer`` amounts to)::

    FindCoordinator(key="g")                         -> this broker
    ConsumerGroupHeartbeat(g, m, epoch 0, ["t"])     -> epoch 1, assignment {t's id: [0, 1]}
    ConsumerGroupHeartbeat(g, m, epoch 1)            -> epoch 1 (every heartbeat_interval_ms)
    ConsumerGroupHeartbeat(g, m, epoch -1)           -> left
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors
from fastkafka.protocol import ApiKey

from ..authorizer import GROUP, AclOperation
from ..dispatch import DELAYED
from .authorization import require_group

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_consumer_group_heartbeat", "handle_consumer_group_describe", "CONSUMER_GROUP_RANGES"]

_GROUP_DENIED = errors.GroupAuthorizationFailedError.code


def _groups(ctx: RequestContext):
    return ctx.services.group_coordination().groups


def handle_consumer_group_heartbeat(ctx: RequestContext, req):
    require_group(ctx, AclOperation.READ, req.group_id)
    _groups(ctx).consumer_group_heartbeat(
        req.group_id, req.member_id, req.member_epoch, instance_id=req.instance_id, rack_id=req.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms, subscribed_topic_names=req.subscribed_topic_names,
        subscribed_topic_regex=req.subscribed_topic_regex if ctx.version >= 1 else None,
        server_assignor=req.server_assignor,
        owned=None if req.topic_partitions is None else
        [(tp.topic_id, list(tp.partitions)) for tp in req.topic_partitions],
        client_id=ctx.client_id or "", client_host="/" + ctx.client_host,
        callback=lambda r: ctx.send(_heartbeat_response(ctx, r)))
    return DELAYED


def _heartbeat_response(ctx: RequestContext, r):
    cls = ctx.codec.api.response
    assignment = None
    if r.assignment is not None:
        assignment = cls.Assignment(topic_partitions=[
            cls.Assignment.TopicPartitions(topic_id=tid, partitions=sorted(ps))
            for tid, ps in r.assignment.items()])
    return cls(throttle_time_ms=0, error_code=r.error, error_message=r.message, member_id=r.member_id,
               member_epoch=r.member_epoch, heartbeat_interval_ms=r.heartbeat_interval_ms,
               assignment=assignment)


def handle_consumer_group_describe(ctx: RequestContext, req):
    cls = ctx.codec.api.response
    members_cls = cls.Groups.Members
    coordinator = _groups(ctx)
    out = []
    for gid in req.group_ids:
        if not ctx.authorize(AclOperation.DESCRIBE, GROUP, gid):
            out.append(cls.Groups(error_code=_GROUP_DENIED, group_id=gid, group_state="", assignor_name="",
                                  members=[]))
            continue

        def described(code, group):
            # under the coordinator's lock: the group is read whole, not while it changes
            if code:
                return cls.Groups(error_code=code, group_id=gid, group_state="", assignor_name="", members=[])
            return cls.Groups(
                group_id=gid, group_state=group.state, group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch, assignor_name=group.assignor_name,
                authorized_operations=ctx.authorized_operations(GROUP, gid, req.include_authorized_operations),
                members=[members_cls(
                    member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                    member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=sorted(m.subscribed_topic_names),
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=members_cls.Assignment(
                        topic_partitions=_named(ctx, members_cls.Assignment, m.assigned)),
                    target_assignment=members_cls.TargetAssignment(
                        topic_partitions=_named(ctx, members_cls.TargetAssignment, group.target.get(m.member_id, {}))))
                    for m in group.members.values()])
        out.append(coordinator.read_consumer_group(gid, described))
    return cls(throttle_time_ms=0, groups=out)


def _named(ctx: RequestContext, assignment_cls, partitions: dict) -> list:
    names = ctx.services.topics.name_of
    return [assignment_cls.TopicPartitions(topic_id=tid, topic_name=names(tid) or "", partitions=sorted(ps))
            for tid, ps in partitions.items()]


# api key -> (handler, min version, max version), merged into the group handlers' ranges.
CONSUMER_GROUP_RANGES = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (handle_consumer_group_heartbeat, 0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (handle_consumer_group_describe, 0, 0),
}
