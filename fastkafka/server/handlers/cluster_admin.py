"""DescribeCluster, DescribeLogDirs, DescribeProducers and the ACL APIs (Kafka 3.x admin clients).

DescribeCluster answers what Metadata answers about brokers and the controller, plus the
cluster's authorized operations when asked. DescribeLogDirs lists each ``log.dirs`` entry with
the size of every partition in it (``offset_lag`` 0 and no future replicas: nothing moves
between directories here) and, from v4, the file system's total and usable bytes.
DescribeProducers lists the producers each partition's leader remembers, with the coordinator
epoch of their last marker and the first offset of their open transaction (-1: none). The ACL APIs
answer SECURITY_DISABLED, Kafka's answer when no authorizer is configured.
"""
from __future__ import annotations

import os

from fastkafka import errors
from fastkafka.protocol import ApiKey

from ..authorized_operations import CLUSTER, authorized_operations
from .failure import failure
from .metadata import live_brokers

__all__ = ["CLUSTER_ADMIN_RANGES"]

_NO_AUTHORIZER = "No Authorizer is configured on the broker"
_SECURITY_DISABLED = errors.SecurityDisabledError.code
BROKER_ENDPOINT = 1


def handle_describe_cluster(ctx, req):
    if req.endpoint_type != BROKER_ENDPOINT:       # v1+: KRaft controllers are asked for type 2
        return ctx.codec.api.response(
            throttle_time_ms=0, error_code=errors.UnsupportedEndpointTypeError.code,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted "
                          f"an endpoint of type {req.endpoint_type}", endpoint_type=BROKER_ENDPOINT)
    nodes, controller_id = live_brokers(ctx)
    return ctx.codec.api.response(
        throttle_time_ms=0, error_code=0, cluster_id=ctx.broker.cluster_id, controller_id=controller_id,
        brokers=[{"broker_id": i, "host": h, "port": p, "rack": r} for i, h, p, r in nodes],
        cluster_authorized_operations=authorized_operations(
            CLUSTER, req.include_cluster_authorized_operations))


def _wanted(req):
    """None for every partition, else {topic: set of partitions} the request names."""
    if req.topics is None:
        return None
    return {t.topic: set(t.partitions) for t in req.topics}


def handle_describe_log_dirs(ctx, req):
    wanted = _wanted(req)
    logs = ctx.broker.logs
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


def _partition_producers(topics, name: str, p: int) -> dict:
    try:
        active = topics.log(name, p).describe_producers()
    except Exception as e:
        code, msg = failure(e, "producers of %s-%d", name, p)
        return {"partition_index": p, "error_code": code, "error_message": msg,
                "active_producers": []}
    return {"partition_index": p, "error_code": 0,
            "active_producers": [a._asdict() for a in active]}


def handle_describe_producers(ctx, req):
    topics = ctx.broker.topics
    return ctx.codec.api.response(throttle_time_ms=0, topics=[
        {"name": t.name, "partitions": [_partition_producers(topics, t.name, p) for p in t.partition_indexes]}
        for t in req.topics])


def handle_describe_acls(ctx, req):
    return ctx.codec.api.response(throttle_time_ms=0, error_code=_SECURITY_DISABLED,
                                  error_message=_NO_AUTHORIZER, resources=[])


def handle_create_acls(ctx, req):
    return ctx.codec.api.response(throttle_time_ms=0, results=[
        {"error_code": _SECURITY_DISABLED, "error_message": _NO_AUTHORIZER} for _ in req.creations])


def handle_delete_acls(ctx, req):
    return ctx.codec.api.response(throttle_time_ms=0, filter_results=[
        {"error_code": _SECURITY_DISABLED, "error_message": _NO_AUTHORIZER, "matching_acls": []}
        for _ in req.filters])


# api key -> (handler, min version, max version), merged into the dispatch table's RANGES.
CLUSTER_ADMIN_RANGES = {
    ApiKey.DESCRIBE_CLUSTER: (handle_describe_cluster, 0, 1),
    ApiKey.DESCRIBE_LOG_DIRS: (handle_describe_log_dirs, 0, 4),
    ApiKey.DESCRIBE_PRODUCERS: (handle_describe_producers, 0, 0),
    ApiKey.DESCRIBE_ACLS: (handle_describe_acls, 0, 1),
    ApiKey.CREATE_ACLS: (handle_create_acls, 0, 1),
    ApiKey.DELETE_ACLS: (handle_delete_acls, 0, 1),
}
