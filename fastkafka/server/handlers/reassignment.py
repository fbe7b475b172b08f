"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455), answered by the
controller (any other broker answers NOT_CONTROLLER, and clients retry at the controller
Metadata names). Altering needs ALTER on the cluster, listing DESCRIBE.

The embedded broker is a one-broker cluster: a partition can only be "moved" to itself, and
nothing is ever under way.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors
from fastkafka.cluster.election import no_such_partition, not_controller

from ..authorizer import AclOperation

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_alter_partition_reassignments", "handle_list_partition_reassignments"]


def _refused(ctx: RequestContext, e: errors.KafkaError, **extra):
    return ctx.codec.api.response(throttle_time_ms=0, error_code=e.code, error_message=str(e), **extra)


def handle_alter_partition_reassignments(ctx: RequestContext, req):
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return _refused(ctx, errors.ClusterAuthorizationFailedError("Not authorized to alter the cluster"),
                        responses=[])
    wanted = {(t.name, p.partition_index): None if p.replicas is None else tuple(p.replicas)
              for t in req.topics for p in t.partitions}
    controller = ctx.services.controller
    if controller is None:
        results = {tp: _embedded_alter(ctx.services, tp, target) for tp, target in wanted.items()}
    elif not controller.active:
        return _refused(ctx, not_controller(), responses=[])
    else:
        results = controller.alter_reassignments(wanted)
    responses: dict[str, list] = {}
    for (topic, p), e in results.items():
        responses.setdefault(topic, []).append({"partition_index": p, "error_code": e.code if e else 0,
                                                "error_message": str(e) if e else None})
    return ctx.codec.api.response(throttle_time_ms=0, error_code=0, error_message=None, responses=[
        {"name": t, "partitions": ps} for t, ps in responses.items()])


def _embedded_alter(broker, tp, target):
    info = broker.metadata.topics().get(tp[0])
    if info is None or not 0 <= tp[1] < info.partitions:
        return no_such_partition()
    if target is None:
        return errors.NoReassignmentInProgressError(f"No reassignment in progress for partition {tp[1]}.")
    if target != (broker.broker_id,):
        return errors.InvalidReplicaAssignmentError(
            f"The proposed replicas {list(target)} include brokers that are not alive.")
    return None


def handle_list_partition_reassignments(ctx: RequestContext, req):
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return _refused(ctx, errors.ClusterAuthorizationFailedError("Not authorized to describe the cluster"),
                        topics=[])
    wanted = None if req.topics is None else {(t.name, p) for t in req.topics for p in t.partition_indexes}
    controller = ctx.services.controller
    try:
        ongoing = {} if controller is None else controller.list_reassignments(wanted)
    except errors.NotControllerError as e:
        return _refused(ctx, e, topics=[])
    topics: dict[str, list] = {}
    for (topic, p), (replicas, adding, removing) in sorted(ongoing.items()):
        topics.setdefault(topic, []).append({"partition_index": p, "replicas": list(replicas),
                                             "adding_replicas": list(adding), "removing_replicas": list(removing)})
    return ctx.codec.api.response(throttle_time_ms=0, error_code=0, error_message=None, topics=[
        {"name": t, "partitions": ps} for t, ps in topics.items()])
