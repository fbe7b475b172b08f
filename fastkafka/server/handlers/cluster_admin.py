"""DescribeCluster, DescribeLogDirs, DescribeProducers and the ACL APIs (Kafka 3.x admin clients).

DescribeCluster answers what Metadata answers about brokers and the controller, plus the
cluster's authorized operations when asked. DescribeLogDirs lists each ``log.dirs`` entry with
the size of every partition in it (``offset_lag`` 0 and no future replicas: nothing moves
between directories here) and, from v4, the file system's total and usable bytes.
DescribeProducers lists the producers each partition's leader remembers, with the coordinator
epoch of their last marker and the first offset of their open transaction (-1: none).

DescribeLogDirs needs DESCRIBE on the cluster, DescribeProducers READ on each topic. The ACL APIs
(DescribeAcls: DESCRIBE on the cluster; CreateAcls, DeleteAcls: ALTER on the cluster) read and
change the metadata store's ACLs, validated as Kafka validates them (INVALID_REQUEST per creation
or filter); without an authorizer they answer SECURITY_DISABLED, as Kafka does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import os

from fastkafka import errors
from fastkafka.protocol import ApiKey
from fastkafka.security.acl import AclBinding, AclBindingFilter, InvalidAcl

from ..authorizer import CLUSTER, CLUSTER_NAME, TOPIC, AclOperation
from .authorization import require_cluster
from .failure import failure
from .leader import leader_log
from .metadata import live_brokers

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["CLUSTER_ADMIN_RANGES"]

_NO_AUTHORIZER = "No Authorizer is configured on the broker"
_SECURITY_DISABLED = errors.SecurityDisabledError.code
BROKER_ENDPOINT = 1


def handle_describe_cluster(ctx: RequestContext, req):
    if req.endpoint_type != BROKER_ENDPOINT:       # v1+: KRaft controllers are asked for type 2
        return ctx.codec.api.response(
            throttle_time_ms=0, error_code=errors.UnsupportedEndpointTypeError.code,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted "
                          f"an endpoint of type {req.endpoint_type}", endpoint_type=BROKER_ENDPOINT)
    nodes, controller_id = live_brokers(ctx)
    return ctx.codec.api.response(
        throttle_time_ms=0, error_code=0, cluster_id=ctx.services.cluster_id, controller_id=controller_id,
        brokers=[{"broker_id": i, "host": h, "port": p, "rack": r} for i, h, p, r in nodes],
        cluster_authorized_operations=ctx.authorized_operations(
            CLUSTER, CLUSTER_NAME, req.include_cluster_authorized_operations))


def _wanted(req):
    """None for every partition, else {topic: set of partitions} the request names."""
    if req.topics is None:
        return None
    return {t.topic: set(t.partitions) for t in req.topics}


def handle_describe_log_dirs(ctx: RequestContext, req):
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return ctx.codec.api.response(throttle_time_ms=0, error_code=errors.ClusterAuthorizationFailedError.code,
                                      results=[])
    wanted = _wanted(req)
    logs = ctx.services.logs
    by_dir: dict[str, dict[str, list]] = {d: {} for d in logs.log_dirs}
    for lg in logs.logs():
        if wanted is not None and lg.partition not in wanted.get(lg.topic, ()):
            continue
        topics = by_dir.setdefault(os.path.dirname(lg.dir), {})
        topics.setdefault(lg.topic, []).append(
            {"partition_index": lg.partition, "partition_size": lg.size, "offset_lag": 0,
             "is_future_key": False})
    results = []
    for d, topics in sorted(by_dir.items()):
        try:
            st = os.statvfs(d)
            total, usable, code = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize, 0
        except OSError:
            total, usable, code = -1, -1, errors.KafkaStorageError.code
        results.append({"error_code": code, "log_dir": d, "total_bytes": total, "usable_bytes": usable,
                        "topics": [{"name": t, "partitions": sorted(ps, key=lambda p: p["partition_index"])}
                                   for t, ps in sorted(topics.items())]})
    return ctx.codec.api.response(throttle_time_ms=0, error_code=0, results=results)


def _partition_producers(ctx: RequestContext, name: str, p: int) -> dict:
    try:
        if not ctx.authorize(AclOperation.READ, TOPIC, name):
            raise errors.TopicAuthorizationFailedError(f"Not authorized to read topic {name}")
        # any replica answers, as Kafka's (kafka-transactions.sh --broker-id asks a follower)
        active = leader_log(ctx, name, p, -1, require_leader=False).describe_producers()
    except Exception as e:
        code, msg = failure(e, "producers of %s-%d", name, p)
        return {"partition_index": p, "error_code": code, "error_message": msg,
                "active_producers": []}
    return {"partition_index": p, "error_code": 0,
            "active_producers": [a._asdict() for a in active]}


def handle_describe_producers(ctx: RequestContext, req):
    return ctx.codec.api.response(throttle_time_ms=0, topics=[
        {"name": t.name, "partitions": [_partition_producers(ctx, t.name, p) for p in t.partition_indexes]}
        for t in req.topics])


def _acl_filter(f) -> AclBindingFilter:
    return AclBindingFilter.of(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                               f.principal_filter, f.host_filter, f.operation, f.permission_type)


def _acl_fields(a: AclBinding) -> dict:
    return {"resource_type": a.resource_type, "resource_name": a.resource_name, "pattern_type": a.pattern_type,
            "principal": a.principal, "host": a.host, "operation": a.operation,
            "permission_type": a.permission_type}


def handle_describe_acls(ctx: RequestContext, req):
    cls = ctx.codec.api.response
    if ctx.services.authorizer is None:
        return cls(throttle_time_ms=0, error_code=_SECURITY_DISABLED, error_message=_NO_AUTHORIZER, resources=[])
    require_cluster(ctx, AclOperation.DESCRIBE)
    try:
        wanted = _acl_filter(req)
    except InvalidAcl as e:
        return cls(throttle_time_ms=0, error_code=errors.InvalidRequestError.code, error_message=str(e),
                   resources=[])
    by_pattern: dict[tuple, list] = {}
    for a in ctx.services.metadata.acls():
        if wanted.matches(a):
            by_pattern.setdefault(a.pattern, []).append(
                {"principal": a.principal, "host": a.host, "operation": a.operation,
                 "permission_type": a.permission_type})
    return cls(throttle_time_ms=0, error_code=0, resources=[
        {"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": acls}
        for (rtype, name, ptype), acls in sorted(by_pattern.items())])


def handle_create_acls(ctx: RequestContext, req):
    cls = ctx.codec.api.response
    if ctx.services.authorizer is None:
        return cls(throttle_time_ms=0, results=[
            {"error_code": _SECURITY_DISABLED, "error_message": _NO_AUTHORIZER} for _ in req.creations])
    require_cluster(ctx, AclOperation.ALTER)
    results: list[dict] = []
    new = []
    for c in req.creations:
        try:
            new.append(AclBinding.of(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal,
                                     c.host, c.operation, c.permission_type))
            results.append({"error_code": 0})
        except InvalidAcl as e:
            results.append({"error_code": errors.InvalidRequestError.code, "error_message": str(e)})
    if new:
        try:
            ctx.services.metadata.change_acls(add=new)
        except Exception as e:       # the store could not persist them (ZooKeeper gone): none was stored
            code, msg = failure(e, "store %d ACLs", len(new))
            results = [r if r["error_code"] else {"error_code": code, "error_message": msg} for r in results]
    return cls(throttle_time_ms=0, results=results)


def handle_delete_acls(ctx: RequestContext, req):
    cls = ctx.codec.api.response
    if ctx.services.authorizer is None:
        return cls(throttle_time_ms=0, filter_results=[
            {"error_code": _SECURITY_DISABLED, "error_message": _NO_AUTHORIZER, "matching_acls": []}
            for _ in req.filters])
    require_cluster(ctx, AclOperation.ALTER)
    store = ctx.services.metadata
    current = list(store.acls())
    results, doomed = [], {}
    for f in req.filters:
        try:
            wanted = _acl_filter(f)
        except InvalidAcl as e:
            results.append({"error_code": errors.InvalidRequestError.code, "error_message": str(e),
                            "matching_acls": []})
            continue
        matching = [a for a in current if wanted.matches(a)]
        doomed.update(dict.fromkeys(matching))
        results.append({"error_code": 0, "matching_acls": [
            {"error_code": 0, **_acl_fields(a)} for a in matching]})
    if doomed:
        try:
            store.change_acls(remove=list(doomed))
        except Exception as e:
            code, msg = failure(e, "delete %d ACLs", len(doomed))
            results = [r if r["error_code"] else {"error_code": code, "error_message": msg, "matching_acls": []}
                       for r in results]
    return cls(throttle_time_ms=0, filter_results=results)


# api key -> (handler, min version, max version), merged into the dispatch table's RANGES.
CLUSTER_ADMIN_RANGES = {
    ApiKey.DESCRIBE_CLUSTER: (handle_describe_cluster, 0, 1),
    ApiKey.DESCRIBE_LOG_DIRS: (handle_describe_log_dirs, 0, 4),
    ApiKey.DESCRIBE_PRODUCERS: (handle_describe_producers, 0, 0),
    ApiKey.DESCRIBE_ACLS: (handle_describe_acls, 0, 3),
    ApiKey.CREATE_ACLS: (handle_create_acls, 0, 3),
    ApiKey.DELETE_ACLS: (handle_delete_acls, 0, 3),
}
