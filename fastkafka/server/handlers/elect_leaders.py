"""ElectLeaders (KIP-183, KIP-460): move partitions' leadership to their preferred replicas
(type 0), or give a partition without a live leader one from outside its ISR (type 1).

Needs ALTER on the cluster. The controller decides (any other broker's controller answers
NOT_CONTROLLER per partition, and clients then ask the controller Metadata names). Asked for
every partition (a null list), the answer leaves out those whose leader was already right,
as Kafka's does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors

from ..authorizer import AclOperation

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_elect_leaders"]


def handle_elect_leaders(ctx: RequestContext, req):
    wanted = None if req.topic_partitions is None else [
        (t.topic, p) for t in req.topic_partitions for p in t.partitions]
    if not ctx.authorize_cluster(AclOperation.ALTER):
        top = errors.ClusterAuthorizationFailedError.code
        results: dict[tuple[str, int], int | errors.KafkaError] = {
            tp: errors.ClusterAuthorizationFailedError("Not authorized to alter the cluster") for tp in wanted or ()}
    else:
        top = 0
        try:
            results = ctx.services.elect_leaders(req.election_type, wanted, req.timeout_ms)
        except errors.NotControllerError as e:     # all partitions, asked of another broker
            top, results = e.code, {}
        if wanted is None:
            results = {tp: r for tp, r in results.items() if not isinstance(r, errors.ElectionNotNeededError)}
    by_topic: dict[str, list] = {}
    for (topic, p), r in results.items():
        code, message = (r.code, str(r)) if isinstance(r, errors.KafkaError) else (0, None)
        by_topic.setdefault(topic, []).append({"partition_id": p, "error_code": code, "error_message": message})
    return ctx.codec.api.response(
        throttle_time_ms=0, error_code=top,
        replica_election_results=[{"topic": t, "partition_result": ps} for t, ps in by_topic.items()])
