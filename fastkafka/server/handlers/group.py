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

from typing import TYPE_CHECKING

import logging

from fastkafka import errors
from fastkafka.coordinator import OFFSETS_TOPIC, OffsetAndMetadata, partition_for
from fastkafka.coordinator.coordinator import wall_clock_ms
from fastkafka.coordinator.transactions import TRANSACTION_STATE_TOPIC
from fastkafka.protocol import ApiKey

from ..authorizer import GROUP, TOPIC, AclOperation
from ..dispatch import DELAYED
from .authorization import require_group, require_transactional_id
from .consumer_group import CONSUMER_GROUP_RANGES

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_find_coordinator", "handle_join_group", "handle_sync_group", "handle_heartbeat",
           "handle_leave_group", "handle_list_groups", "handle_describe_groups",
           "handle_delete_groups", "handle_offset_delete", "handle_offset_commit", "handle_offset_fetch",
           "GROUP_RANGES", "commit_response", "partition_exists", "requested_offsets"]

log = logging.getLogger("fastkafka.coordinator")

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _groups(ctx: RequestContext):
    return ctx.services.group_coordination().groups


_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
_UNSTABLE = errors.UnstableOffsetCommitError.code
_GROUP_DENIED = errors.GroupAuthorizationFailedError.code
READ, DESCRIBE, DELETE = AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE


def handle_find_coordinator(ctx: RequestContext, req):
    """Up to v3 one ``key``; v4+ (KIP-699) a batch of ``coordinator_keys``, each answered on its
    own in ``coordinators`` (an authorization failure is that key's error, not the request's)."""
    if req.key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        raise errors.InvalidRequestError(f"unknown key type {req.key_type}")
    svc = ctx.services.group_coordination()          # make sure the coordinators are up (and loading)
    if ctx.version < 4:
        if req.key_type == TRANSACTION_KEY_TYPE:
            require_transactional_id(ctx, DESCRIBE, req.key)
        else:
            require_group(ctx, DESCRIBE, req.key)
        code, message, node_id, host, port = _coordinator(ctx, svc, req.key, req.key_type)
        return ctx.response(error_code=code, error_message=message, node_id=node_id, host=host, port=port)
    cls = ctx.codec.api.response
    out = []
    for key in req.coordinator_keys:
        try:
            if req.key_type == TRANSACTION_KEY_TYPE:
                require_transactional_id(ctx, DESCRIBE, key)
            else:
                require_group(ctx, DESCRIBE, key)
        except errors.KafkaError as e:
            out.append(cls.Coordinators(key=key, error_code=e.code, error_message=str(e), host=""))
            continue
        code, message, node_id, host, port = _coordinator(ctx, svc, key, req.key_type)
        out.append(cls.Coordinators(key=key, node_id=node_id, host=host, port=port, error_code=code,
                                    error_message=message))
    return cls(throttle_time_ms=0, coordinators=out)


def _coordinator(ctx: RequestContext, svc, key: str, key_type: int) -> tuple[int, str | None, int, str, int]:
    """``(error, message, node_id, host, port)`` of the coordinator of ``key``."""
    if ctx.services.cluster is not None:
        return _cluster_coordinator(ctx, svc, key, key_type)
    if key_type == TRANSACTION_KEY_TYPE:
        svc.transaction_coordinator()              # creates __transaction_state on first use
    host, port = ctx.services.endpoint(ctx.listener)
    return 0, None, ctx.services.broker_id, host, port


def _cluster_coordinator(ctx: RequestContext, svc, key: str, key_type: int):
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
        return errors.CoordinatorNotAvailableError.code, why, -1, "", -1
    md = ctx.services.zk_metadata()
    leader = md.leader(topic, partition_for(key, partitions))
    info = md.brokers().get(leader)
    ep = info.endpoint(ctx.listener) if info is not None else None
    if ep is None:
        return (errors.CoordinatorNotAvailableError.code, f"the {topic} partition of {key!r} has no leader",
                -1, "", -1)
    return 0, None, leader, ep[0], ep[1]


def handle_join_group(ctx: RequestContext, req):
    """JoinGroup. v7+ answers the group's ``protocol_type`` and, with an error, a null protocol
    type and name (Kafka's rule). v8+'s ``reason`` has no effect but the log line, as in Kafka.
    v9's ``skip_assignment`` is always false: it is KRaft's new coordinator telling a static
    leader to keep its assignment, which Kafka's ZooKeeper-mode broker never does either."""
    require_group(ctx, READ, req.group_id)
    cls = ctx.codec.api.response
    if ctx.version >= 8 and req.reason:
        log.info("member %r of group %s joins: %s", req.member_id, req.group_id, req.reason)
    flexible_names = ctx.version >= 7

    def done(r):
        ctx.send(cls(throttle_time_ms=0, error_code=r.error, generation_id=r.generation_id,
                     protocol_type=None if r.error else r.protocol_type,
                     protocol_name=r.protocol_name or None if flexible_names else r.protocol_name,
                     leader=r.leader_id, member_id=r.member_id, skip_assignment=False,
                     members=[cls.Members(member_id=m, group_instance_id=i, metadata=meta)
                              for m, i, meta in r.members]))
    _groups(ctx).join_group(
        req.group_id, req.member_id, req.group_instance_id, ctx.client_id or "", "/" + ctx.client_host,
        req.session_timeout_ms, req.rebalance_timeout_ms, req.protocol_type,
        [(p.name, p.metadata) for p in req.protocols], done,
        require_known_member_id=ctx.version >= 4)
    return DELAYED


def handle_sync_group(ctx: RequestContext, req):
    """SyncGroup. v5+: the request's protocol type and name, when set, must be the group's
    (INCONSISTENT_GROUP_PROTOCOL otherwise), and the answer carries the group's."""
    require_group(ctx, READ, req.group_id)

    def done(r):
        ctx.send(ctx.response(throttle_time_ms=0, error_code=r.error, assignment=r.assignment,
                              protocol_type=r.protocol_type, protocol_name=r.protocol_name))
    v5 = ctx.version >= 5
    _groups(ctx).sync_group(req.group_id, req.generation_id, req.member_id, req.group_instance_id,
                            {a.member_id: a.assignment for a in req.assignments}, done,
                            protocol_type=req.protocol_type if v5 else None,
                            protocol_name=req.protocol_name if v5 else None)
    return DELAYED


def handle_heartbeat(ctx: RequestContext, req):
    require_group(ctx, READ, req.group_id)
    code = _groups(ctx).heartbeat(req.group_id, req.generation_id, req.member_id,
                                  req.group_instance_id)
    return ctx.response(throttle_time_ms=0, error_code=code)


def handle_leave_group(ctx: RequestContext, req):
    """LeaveGroup. v3+ (KIP-345) names several members, each by member id and/or
    ``group_instance_id``, and answers an error per member; v5+'s per-member ``reason`` has no
    effect but the log line, as in Kafka."""
    require_group(ctx, READ, req.group_id)
    if ctx.version < 3:
        return ctx.response(throttle_time_ms=0,
                            error_code=_groups(ctx).leave_group(req.group_id, req.member_id))
    for m in req.members:
        if m.reason:
            log.info("member %r (instance %r) leaves group %s: %s", m.member_id, m.group_instance_id,
                     req.group_id, m.reason)
    code, codes = _groups(ctx).leave_group_members(
        req.group_id, [(m.member_id, m.group_instance_id) for m in req.members])
    cls = ctx.codec.api.response
    return cls(throttle_time_ms=0, error_code=code, members=[
        cls.Members(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=c)
        for m, c in zip(req.members, codes)])


def handle_list_groups(ctx: RequestContext, req):
    """ListGroups. v4+ filters by ``states_filter`` (ignoring case) and answers each group's
    state; v5+ by ``types_filter`` (``classic`` or KIP-848's ``consumer``) and answers each
    group's type."""
    gc = _groups(ctx)
    code, groups = gc.group_overviews(req.states_filter if ctx.version >= 4 else ())
    typed = [(g, t, s, gc.group_type(g)) for g, t, s in groups]
    if ctx.version >= 5 and req.types_filter:
        wanted = {t.lower() for t in req.types_filter}
        typed = [x for x in typed if x[3] in wanted]
    if not ctx.authorize_cluster(DESCRIBE):
        typed = [x for x in typed if ctx.authorize(DESCRIBE, GROUP, x[0])]
    cls = ctx.codec.api.response
    return cls(throttle_time_ms=0, error_code=code,
               groups=[cls.Groups(group_id=g, protocol_type=t, group_state=s, group_type=k)
                       for g, t, s, k in typed])


def handle_describe_groups(ctx: RequestContext, req):
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


def handle_delete_groups(ctx: RequestContext, req):
    allowed = [g for g in req.groups_names if ctx.authorize(DELETE, GROUP, g)]
    result = dict.fromkeys(req.groups_names, _GROUP_DENIED)
    result.update(_groups(ctx).delete_groups(allowed) if allowed else {})
    cls = ctx.codec.api.response
    return cls(throttle_time_ms=0,
               results=[cls.Results(group_id=g, error_code=result[g]) for g in req.groups_names])


def partition_exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    info = ctx.services.topics.get(topic)
    return info is not None and 0 <= partition < info.partitions


def handle_offset_commit(ctx: RequestContext, req):
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
                                req.group_instance_id, done, api_version=v)
    return DELAYED


def requested_offsets(ctx: RequestContext, req, offset_of) -> tuple[dict, dict]:
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


def commit_response(ctx: RequestContext, req, codes: dict) -> object:
    """OffsetCommit's and TxnOffsetCommit's answer: a code per partition the request named."""
    cls = ctx.codec.api.response
    return cls(throttle_time_ms=0, topics=[
        cls.Topics(name=t.name, partitions=[
            cls.Topics.Partitions(partition_index=p.partition_index,
                                  error_code=codes[(t.name, p.partition_index)])
            for p in t.partitions]) for t in req.topics])


def handle_offset_fetch(ctx: RequestContext, req):
    """OffsetFetch. v8+ (KIP-709) asks for several groups at once: each group answers on its own,
    with its own error (GROUP_AUTHORIZATION_FAILED for a group the principal may not describe)."""
    if ctx.version < 8:
        require_group(ctx, DESCRIBE, req.group_id)
        cls = ctx.codec.api.response
        code, topics = _fetch_group(ctx, req.group_id, req.topics, req.require_stable, cls.Topics)
        return cls(throttle_time_ms=0, error_code=code, topics=topics)
    cls = ctx.codec.api.response
    out = []
    for g in req.groups:
        if not ctx.authorize(DESCRIBE, GROUP, g.group_id):
            out.append(cls.Groups(group_id=g.group_id, error_code=_GROUP_DENIED, topics=[]))
            continue
        code, topics = _fetch_group(ctx, g.group_id, g.topics, req.require_stable, cls.Groups.Topics,
                                    g.member_id, g.member_epoch)
        out.append(cls.Groups(group_id=g.group_id, error_code=code, topics=topics))
    return cls(throttle_time_ms=0, groups=out)


def _fetch_group(ctx: RequestContext, group_id: str, topics, require_stable: bool, topic_cls, member_id=None,
                 member_epoch=-1) -> tuple[int, list]:
    """One group's committed offsets: its error and the response's topics (``topic_cls`` and its
    ``Partitions``: the flat v0-v7 layout or a v8 group's). v9's member id and epoch are checked
    against a KIP-848 consumer group's (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH)."""
    v = ctx.version
    part_cls = topic_cls.Partitions
    by_topic: dict[str, list] = {}
    wanted: list | None = None
    if topics is not None:
        wanted = []
        for t in topics:
            if ctx.authorize(DESCRIBE, TOPIC, t.name):
                wanted.extend((t.name, p) for p in t.partition_indexes)
            else:
                by_topic[t.name] = [part_cls(partition_index=p, committed_offset=-1, metadata="",
                                             error_code=_TOPIC_DENIED)
                                    for p in t.partition_indexes]
    groups = _groups(ctx)
    code, got = groups.fetch_offsets(group_id, wanted, member_id, member_epoch)
    if wanted is None:
        got = {tp: om for tp, om in got.items() if ctx.authorize(DESCRIBE, TOPIC, tp[0])}
    # KIP-447: a consumer that must not start from offsets a transaction may still replace
    unstable = groups.unstable_offsets(group_id) if v >= 7 and require_stable and not code else ()
    for (topic, partition), om in (got.items() if wanted is None else
                                   ((tp, got.get(tp)) for tp in wanted)):
        if (topic, partition) in unstable:
            by_topic.setdefault(topic, []).append(part_cls(
                partition_index=partition, committed_offset=-1, metadata="", error_code=_UNSTABLE))
            continue
        by_topic.setdefault(topic, []).append(part_cls(
            partition_index=partition,
            committed_offset=-1 if om is None else om.offset,
            committed_leader_epoch=-1 if om is None else om.leader_epoch,
            metadata="" if om is None else om.metadata,
            # v0/v1 have no top-level error: each partition carries it
            error_code=code if v < 2 else 0))
    return code, [topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()]


def handle_offset_delete(ctx: RequestContext, req):
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
        ApiKey.OFFSET_COMMIT: (handle_offset_commit, 0, 9),
        ApiKey.OFFSET_FETCH: (handle_offset_fetch, 0, 9),
        ApiKey.FIND_COORDINATOR: (handle_find_coordinator, 0, 5),
        ApiKey.JOIN_GROUP: (handle_join_group, 0, 9),
        ApiKey.SYNC_GROUP: (handle_sync_group, 0, 5),
        ApiKey.HEARTBEAT: (handle_heartbeat, 0, 4),
        ApiKey.LEAVE_GROUP: (handle_leave_group, 0, 5),
        ApiKey.LIST_GROUPS: (handle_list_groups, 0, 5),
        ApiKey.DESCRIBE_GROUPS: (handle_describe_groups, 0, 5),
        ApiKey.DELETE_GROUPS: (handle_delete_groups, 0, 2),
        ApiKey.OFFSET_DELETE: (handle_offset_delete, 0, 0),
        **CONSUMER_GROUP_RANGES,     # KIP-848 (handlers/consumer_group.py)
    }


# api key -> (handler, min version, max version), merged into the dispatch table's RANGES.
GROUP_RANGES = _ranges()
