"""Group and offset APIs: requests translated to :class:`GroupCoordinator` calls.

JoinGroup, SyncGroup and OffsetCommit return ``DELAYED``: the coordinator answers through a
callback when the rebalance completes or the commit is replicated, possibly from its timer
thread or the one that moved the high watermark, and the callback sends the response
(``RequestContext.send`` is thread-safe). Everything else answers at once. Error codes come
from the coordinator; nothing here raises for a group-level condition.

Authorization (with an authorizer), as Kafka's KafkaApis: READ on the group for JoinGroup,
SyncGroup, Heartbeat, LeaveGroup and OffsetCommit (plus READ on each committed topic); DESCRIBE on
the group (or transactional id) for FindCoordinator, DescribeGroups and OffsetFetch (plus DESCRIBE
on each topic, and "all topics" lists only describable ones); DELETE on the group for DeleteGroups
and OffsetDelete (plus READ on each topic); ListGroups lists every group with DESCRIBE on the
cluster, else only the groups the principal may describe.

Example (what a kafka-python consumer's first requests amount to)::

    FindCoordinator(key="g")         -> this broker
    JoinGroup(g, member_id="")       -> (parked until the rebalance completes) generation 1
    SyncGroup(g, 1, assignments)     -> this member's assignment
    OffsetFetch(g, [t-0])            -> committed offset or -1
"""
from __future__ import annotations

from fastkafka import errors
from fastkafka.coordinator import OFFSETS_TOPIC, OffsetAndMetadata, partition_for
from fastkafka.coordinator.coordinator import wall_clock_ms
from fastkafka.coordinator.transactions import TRANSACTION_STATE_TOPIC
from fastkafka.protocol import ApiKey

from ..authorizer import GROUP, TOPIC, AclOperation
from ..dispatch import DELAYED
from .authorization import require_group, require_transactional_id

__all__ = ["handle_find_coordinator", "handle_join_group", "handle_sync_group", "handle_heartbeat",
           "handle_leave_group", "handle_list_groups", "handle_describe_groups",
           "handle_delete_groups", "handle_offset_delete", "handle_offset_commit", "handle_offset_fetch",
           "GROUP_RANGES", "commit_response", "partition_exists", "requested_offsets"]

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _groups(ctx):
    return ctx.broker.group_coordination().groups


_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
_UNSTABLE = errors.UnstableOffsetCommitError.code
_GROUP_DENIED = errors.GroupAuthorizationFailedError.code
READ, DESCRIBE, DELETE = AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE


def handle_find_coordinator(ctx, req):
    if req.key_type == TRANSACTION_KEY_TYPE:
        require_transactional_id(ctx, DESCRIBE, req.key)
    else:
        require_group(ctx, DESCRIBE, req.key)
    svc = ctx.broker.group_coordination()          # make sure the coordinators are up (and loading)
    if req.key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return ctx.response(error_code=errors.InvalidRequestError.code,
                            error_message=f"unknown key type {req.key_type}", node_id=-1, host="", port=-1)
    if ctx.broker.cluster is not None:
        return _cluster_coordinator(ctx, svc, req.key, req.key_type)
    if req.key_type == TRANSACTION_KEY_TYPE:
        svc.transaction_coordinator()              # creates __transaction_state on first use
    host, port = ctx.broker.endpoint(ctx.listener)
    return ctx.response(error_code=0, error_message=None, node_id=ctx.broker.broker_id, host=host, port=port)


def _cluster_coordinator(ctx, svc, key: str, key_type: int):
    """Cluster mode: a group's coordinator is the leader of its ``__consumer_offsets`` partition,
    a transactional id's that of its ``__transaction_state`` partition, once the topic exists
    (it is created here when enough brokers are alive, as Kafka does)."""
    if key_type == TRANSACTION_KEY_TYPE:
        why = svc.transaction_state_unavailable()
        topic = TRANSACTION_STATE_TOPIC
        tc = None if why is not None else svc.transaction_coordinator()
        partitions = tc.num_partitions if tc is not None else 0
    else:
        why = svc.offsets_topic_unavailable()
        topic, partitions = OFFSETS_TOPIC, svc.groups.manager.num_partitions
    if why is not None:
        return ctx.response(error_code=errors.CoordinatorNotAvailableError.code, error_message=why,
                            node_id=-1, host="", port=-1)
    md = ctx.broker.metadata
    leader = md.leader(topic, partition_for(key, partitions))
    info = md.brokers().get(leader)
    ep = info.endpoint(ctx.listener) if info is not None else None
    if ep is None:
        return ctx.response(error_code=errors.CoordinatorNotAvailableError.code,
                            error_message=f"the {topic} partition of {key!r} has no leader", node_id=-1,
                            host="", port=-1)
    return ctx.response(error_code=0, error_message=None, node_id=leader, host=ep[0], port=ep[1])


def handle_join_group(ctx, req):
    require_group(ctx, READ, req.group_id)
    cls = ctx.codec.api.response

    def done(r):
        ctx.send(cls(throttle_time_ms=0, error_code=r.error, generation_id=r.generation_id,
                     protocol_name=r.protocol_name, leader=r.leader_id, member_id=r.member_id,
                     members=[cls.Members(member_id=m, group_instance_id=i, metadata=meta)
                              for m, i, meta in r.members]))
    _groups(ctx).join_group(
        req.group_id, req.member_id, req.group_instance_id, ctx.client_id or "", "/" + ctx.client_host,
        req.session_timeout_ms, req.rebalance_timeout_ms, req.protocol_type,
        [(p.name, p.metadata) for p in req.protocols], done,
        require_known_member_id=ctx.version >= 4)
    return DELAYED


def handle_sync_group(ctx, req):
    require_group(ctx, READ, req.group_id)
    def done(r):
        ctx.send(ctx.response(throttle_time_ms=0, error_code=r.error, assignment=r.assignment))
    _groups(ctx).sync_group(req.group_id, req.generation_id, req.member_id, req.group_instance_id,
                            {a.member_id: a.assignment for a in req.assignments}, done)
    return DELAYED


def handle_heartbeat(ctx, req):
    require_group(ctx, READ, req.group_id)
    code = _groups(ctx).heartbeat(req.group_id, req.generation_id, req.member_id,
                                  req.group_instance_id)
    return ctx.response(throttle_time_ms=0, error_code=code)


def handle_leave_group(ctx, req):
    require_group(ctx, READ, req.group_id)
    return ctx.response(throttle_time_ms=0, error_code=_groups(ctx).leave_group(req.group_id, req.member_id))


def handle_list_groups(ctx, req):
    code, groups = _groups(ctx).list_groups()
    if not ctx.authorize_cluster(DESCRIBE):
        groups = [(g, t) for g, t in groups if ctx.authorize(DESCRIBE, GROUP, g)]
    cls = ctx.codec.api.response
    return cls(throttle_time_ms=0, error_code=code,
               groups=[cls.Groups(group_id=g, protocol_type=t) for g, t in groups])


def handle_describe_groups(ctx, req):
    gc = _groups(ctx)
    cls = ctx.codec.api.response
    out = []
    ops_asked = ctx.version >= 3 and req.include_authorized_operations
    for gid in req.groups:
        if not ctx.authorize(DESCRIBE, GROUP, gid):
            out.append(cls.Groups(error_code=_GROUP_DENIED, group_id=gid, group_state="", protocol_type="",
                                  protocol_data="", members=[]))
            continue
        s = gc.describe_group(gid)
        out.append(cls.Groups(
            error_code=s.error, group_id=gid, group_state=s.state,
            authorized_operations=ctx.authorized_operations(GROUP, gid, ops_asked),
            protocol_type=s.protocol_type, protocol_data=s.protocol,
            members=[cls.Groups.Members(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                        client_id=m.client_id, client_host=m.client_host,
                                        member_metadata=m.metadata, member_assignment=m.assignment)
                     for m in s.members]))
    return cls(throttle_time_ms=0, groups=out)


def handle_delete_groups(ctx, req):
    allowed = [g for g in req.groups_names if ctx.authorize(DELETE, GROUP, g)]
    result = dict.fromkeys(req.groups_names, _GROUP_DENIED)
    result.update(_groups(ctx).delete_groups(allowed) if allowed else {})
    cls = ctx.codec.api.response
    return cls(throttle_time_ms=0,
               results=[cls.Results(group_id=g, error_code=result[g]) for g in req.groups_names])


def partition_exists(ctx, topic: str, partition: int) -> bool:
    info = ctx.broker.topics.get(topic)
    return info is not None and 0 <= partition < info.partitions


def handle_offset_commit(ctx, req):
    v = ctx.version
    now = wall_clock_ms()
    # v2-v4 may ask for a retention of their own; it is stored as an expire timestamp (value v1)
    retention = req.retention_time_ms if 2 <= v <= 4 else -1

    def offset_of(p):
        ts = p.commit_timestamp if v == 1 and p.commit_timestamp >= 0 else now
        return OffsetAndMetadata(p.committed_offset, p.committed_metadata, ts,
                                 ts + retention if retention >= 0 else None,
                                 p.committed_leader_epoch if v >= 6 else -1)
    require_group(ctx, READ, req.group_id)
    offsets, codes = requested_offsets(ctx, req, offset_of)
    if not offsets:
        return commit_response(ctx, req, codes)

    def done(stored):
        ctx.send(commit_response(ctx, req, {**codes, **stored}))
    generation = req.generation_id_or_member_epoch if v >= 1 else -1
    _groups(ctx).commit_offsets(req.group_id, req.member_id if v >= 1 else "", generation, offsets,
                                req.group_instance_id, done)
    return DELAYED


def requested_offsets(ctx, req, offset_of) -> tuple[dict, dict]:
    """OffsetCommit's and TxnOffsetCommit's partitions: ``({tp: offset_of(partition)}, {tp:
    error})`` for those that exist and may be read, and the others (TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_TOPIC_OR_PARTITION)."""
    offsets, codes = {}, {}
    for t in req.topics:
        readable = ctx.authorize(READ, TOPIC, t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if not readable:
                codes[tp] = _TOPIC_DENIED
            elif partition_exists(ctx, *tp):
                offsets[tp] = offset_of(p)
            else:
                codes[tp] = errors.UnknownTopicOrPartitionError.code
    return offsets, codes


def commit_response(ctx, req, codes: dict) -> object:
    """OffsetCommit's and TxnOffsetCommit's answer: a code per partition the request named."""
    cls = ctx.codec.api.response
    return cls(throttle_time_ms=0, topics=[
        cls.Topics(name=t.name, partitions=[
            cls.Topics.Partitions(partition_index=p.partition_index,
                                  error_code=codes[(t.name, p.partition_index)])
            for p in t.partitions]) for t in req.topics])


def handle_offset_fetch(ctx, req):
    v = ctx.version
    require_group(ctx, DESCRIBE, req.group_id)
    cls = ctx.codec.api.response
    by_topic: dict[str, list] = {}
    wanted = None
    if req.topics is not None:
        wanted = []
        for t in req.topics:
            if ctx.authorize(DESCRIBE, TOPIC, t.name):
                wanted.extend((t.name, p) for p in t.partition_indexes)
            else:
                by_topic[t.name] = [cls.Topics.Partitions(partition_index=p, committed_offset=-1, metadata="",
                                                          error_code=_TOPIC_DENIED)
                                    for p in t.partition_indexes]
    groups = _groups(ctx)
    code, got = groups.fetch_offsets(req.group_id, wanted)
    if wanted is None:
        got = {tp: om for tp, om in got.items() if ctx.authorize(DESCRIBE, TOPIC, tp[0])}
    # KIP-447: a consumer that must not start from offsets a transaction may still replace
    unstable = groups.unstable_offsets(req.group_id) if v >= 7 and req.require_stable and not code else ()
    for (topic, partition), om in (got.items() if wanted is None else
                                   ((tp, got.get(tp)) for tp in wanted)):
        if (topic, partition) in unstable:
            by_topic.setdefault(topic, []).append(cls.Topics.Partitions(
                partition_index=partition, committed_offset=-1, metadata="", error_code=_UNSTABLE))
            continue
        by_topic.setdefault(topic, []).append(cls.Topics.Partitions(
            partition_index=partition,
            committed_offset=-1 if om is None else om.offset,
            committed_leader_epoch=-1 if om is None else om.leader_epoch,
            metadata="" if om is None else om.metadata,
            # v0/v1 have no top-level error: each partition carries it
            error_code=code if v < 2 else 0))
    return cls(throttle_time_ms=0, error_code=code,
               topics=[cls.Topics(name=t, partitions=ps) for t, ps in by_topic.items()])


def handle_offset_delete(ctx, req):
    require_group(ctx, DELETE, req.group_id)
    readable = {t.name for t in req.topics if ctx.authorize(READ, TOPIC, t.name)}
    tps = [(t.name, p.partition_index) for t in req.topics if t.name in readable for p in t.partitions]
    code, result = _groups(ctx).delete_offsets(req.group_id, tps)
    for t in req.topics:
        if t.name not in readable:
            result.update(((t.name, p.partition_index), _TOPIC_DENIED) for p in t.partitions)
    cls = ctx.codec.api.response
    return cls(error_code=code, throttle_time_ms=0, topics=[
        cls.Topics(name=t.name, partitions=[
            cls.Topics.Partitions(partition_index=p.partition_index,
                                  error_code=result.get((t.name, p.partition_index), 0))
            for p in t.partitions]) for t in req.topics] if not code else [])


def _ranges():
    return {
        ApiKey.OFFSET_COMMIT: (handle_offset_commit, 0, 7),
        ApiKey.OFFSET_FETCH: (handle_offset_fetch, 0, 7),
        ApiKey.FIND_COORDINATOR: (handle_find_coordinator, 0, 2),
        ApiKey.JOIN_GROUP: (handle_join_group, 0, 5),
        ApiKey.SYNC_GROUP: (handle_sync_group, 0, 3),
        ApiKey.HEARTBEAT: (handle_heartbeat, 0, 3),
        ApiKey.LEAVE_GROUP: (handle_leave_group, 0, 2),
        ApiKey.LIST_GROUPS: (handle_list_groups, 0, 2),
        ApiKey.DESCRIBE_GROUPS: (handle_describe_groups, 0, 4),
        ApiKey.DELETE_GROUPS: (handle_delete_groups, 0, 1),
        ApiKey.OFFSET_DELETE: (handle_offset_delete, 0, 0),
    }


# api key -> (handler, min version, max version), merged into the dispatch table's RANGES.
GROUP_RANGES = _ranges()
