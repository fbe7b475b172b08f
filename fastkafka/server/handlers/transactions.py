"""InitProducerId, the transaction APIs and KIP-664's DescribeTransactions / ListTransactions:
requests translated to :class:`TransactionCoordinator`
calls (and TxnOffsetCommit to the group coordinator, WriteTxnMarkers to the partitions' logs).

Older versions cannot read PRODUCER_FENCED (90): InitProducerId below v4 and the others below
v2 get INVALID_PRODUCER_EPOCH (47) instead, as Kafka answers them.

Authorization (with an authorizer), as Kafka's KafkaApis: WRITE on the transactional id for every
transactional call (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent InitProducerId needs
IDEMPOTENT_WRITE on the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED);
AddPartitionsToTxn WRITE on each topic (TOPIC_AUTHORIZATION_FAILED, the others not attempted);
AddOffsetsToTxn and TxnOffsetCommit READ on the group (and on each committed topic);
WriteTxnMarkers CLUSTER_ACTION; DescribeTransactions and ListTransactions DESCRIBE on each id.

Example (a transactional producer's requests)::

    FindCoordinator(key="app-1", key_type=1)   -> this broker
    InitProducerId("app-1", 60000)             -> producer id 1000, epoch 0
    AddPartitionsToTxn("app-1", 1000, 0, t-0)  -> ok; then Produce to t-0 (transactional batches)
    EndTxn("app-1", 1000, 0, committed=True)   -> ok: markers written, read_committed sees t-0
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors
from fastkafka.coordinator import OFFSETS_TOPIC, OffsetAndMetadata
from fastkafka.coordinator.coordinator import wall_clock_ms
from fastkafka.protocol import ApiKey
from fastkafka.config.definitions import REQUEST_TIMEOUT_MS

from ..authorizer import TOPIC, TRANSACTIONAL_ID, AclOperation
from ..delayed_partitions import wait_for_acks_all
from ..dispatch import DELAYED
from ..txn_markers import write_marker
from .authorization import require_cluster, require_group, require_transactional_id
from .group import commit_response, partition_exists, requested_offsets

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["TRANSACTION_RANGES", "handle_init_producer_id", "handle_add_partitions_to_txn",
           "handle_add_offsets_to_txn", "handle_end_txn", "handle_txn_offset_commit",
           "handle_write_txn_markers", "handle_describe_transactions", "handle_list_transactions"]

_FENCED = errors.ProducerFencedError.code
_OLD_FENCED = errors.InvalidProducerEpochError.code


def _for_version(code: int, version: int, first_fenced: int) -> int:
    return _OLD_FENCED if code == _FENCED and version < first_fenced else code


def _coordinator(ctx: RequestContext):
    """The transaction coordinator, or None before ``__transaction_state`` exists (cluster mode:
    the first transactional FindCoordinator creates it once enough brokers are alive)."""
    return ctx.services.group_coordination().transaction_coordinator()


_NOT_AVAILABLE = errors.CoordinatorNotAvailableError.code
WRITE = AclOperation.WRITE


def handle_init_producer_id(ctx: RequestContext, req):
    if req.transactional_id is not None:
        require_transactional_id(ctx, WRITE, req.transactional_id)
    elif not (ctx.authorize_cluster(AclOperation.IDEMPOTENT_WRITE) or ctx.authorize_any(WRITE, TOPIC)):
        raise errors.ClusterAuthorizationFailedError("Not authorized to get a producer id (idempotent write)")
    svc = ctx.services.group_coordination()
    if req.transactional_id is None:       # idempotent only: a fresh producer id
        return ctx.response(throttle_time_ms=0, error_code=0, producer_id=svc.producer_ids.next_id(),
                            producer_epoch=0)
    tc = svc.transaction_coordinator()
    if tc is None:
        return ctx.response(throttle_time_ms=0, error_code=_NOT_AVAILABLE)
    code, pid, epoch = tc.init_producer_id(req.transactional_id, req.transaction_timeout_ms,
                                           req.producer_id, req.producer_epoch)
    return ctx.response(throttle_time_ms=0, error_code=_for_version(code, ctx.version, 4),
                        producer_id=pid, producer_epoch=epoch)


def handle_add_partitions_to_txn(ctx: RequestContext, req):
    topics = req.v3_and_below_topics
    require_transactional_id(ctx, WRITE, req.v3_and_below_transactional_id)
    wanted = {(t.name, p) for t in topics for p in t.partitions}
    writable = {t.name for t in topics if ctx.authorize(WRITE, TOPIC, t.name)}
    refused = {tp: errors.TopicAuthorizationFailedError.code for tp in wanted if tp[0] not in writable}
    refused.update((tp, errors.UnknownTopicOrPartitionError.code) for tp in wanted
                   if tp not in refused and not partition_exists(ctx, *tp))
    tc = _coordinator(ctx)
    if tc is None:
        codes = dict.fromkeys(wanted, _NOT_AVAILABLE)
    elif refused:       # nothing is added: the others were not attempted
        codes = {tp: refused.get(tp, errors.OperationNotAttemptedError.code) for tp in wanted}
    else:
        code = tc.add_partitions(req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                 req.v3_and_below_producer_epoch, wanted)
        codes = dict.fromkeys(wanted, _for_version(code, ctx.version, 2))
    cls = ctx.codec.api.response
    result = cls.ResultsByTopicV3AndBelow
    return cls(throttle_time_ms=0, results_by_topic_v3_and_below=[
        result(name=t.name, results_by_partition=[
            result.ResultsByPartition(partition_index=p, partition_error_code=codes[(t.name, p)])
            for p in t.partitions]) for t in topics])


def handle_add_offsets_to_txn(ctx: RequestContext, req):
    require_transactional_id(ctx, WRITE, req.transactional_id)
    require_group(ctx, AclOperation.READ, req.group_id)
    svc = ctx.services.group_coordination()
    tc = svc.transaction_coordinator()
    if tc is None:
        return ctx.response(throttle_time_ms=0, error_code=_NOT_AVAILABLE)
    partition = svc.groups.manager.partition_for(req.group_id)
    code = tc.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                             {(OFFSETS_TOPIC, partition)})
    return ctx.response(throttle_time_ms=0, error_code=_for_version(code, ctx.version, 2))


def handle_end_txn(ctx: RequestContext, req):
    require_transactional_id(ctx, WRITE, req.transactional_id)
    tc = _coordinator(ctx)
    if tc is None:
        return ctx.response(throttle_time_ms=0, error_code=_NOT_AVAILABLE)
    code = tc.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed)
    return ctx.response(throttle_time_ms=0, error_code=_for_version(code, ctx.version, 2))


def handle_txn_offset_commit(ctx: RequestContext, req):
    require_transactional_id(ctx, WRITE, req.transactional_id)
    require_group(ctx, AclOperation.READ, req.group_id)
    now = wall_clock_ms()
    offsets, codes = requested_offsets(ctx, req, lambda p: OffsetAndMetadata(
        p.committed_offset, p.committed_metadata, now, None, p.committed_leader_epoch))
    if offsets:
        got = ctx.services.group_coordination().groups.txn_commit_offsets(
            req.group_id, req.producer_id, req.producer_epoch, offsets, req.member_id,
            req.generation_id, req.group_instance_id)
        codes.update({tp: _for_version(c, ctx.version, 2) for tp, c in got.items()})
    return commit_response(ctx, req, codes)


def handle_write_txn_markers(ctx: RequestContext, req):
    """From a transaction coordinator: write each marker at this broker's led partitions; in
    cluster mode answered once they are replicated (REQUEST_TIMED_OUT after request.timeout.ms)."""
    require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    svc = ctx.services
    groups = svc.group_coordination().groups
    waiting = []
    markers = []
    for m in req.markers:
        topics: list[tuple[str, list[dict]]] = []
        markers.append((m.producer_id, topics))
        for t in m.topics:
            parts: list[dict] = []
            topics.append((t.name, parts))
            for p in t.partition_indexes:
                kw = dict(partition_index=p, error_code=0)
                parts.append(kw)
                try:
                    wait = write_marker(svc.topics, svc.replicas, groups, t.name, p, m.producer_id,
                                        m.producer_epoch, m.coordinator_epoch, m.transaction_result)
                except errors.KafkaError as e:
                    kw["error_code"] = e.code
                    continue
                if wait is not None:
                    waiting.append((kw, wait))

    def response():
        cls = ctx.codec.api.response
        return cls(markers=[cls.Markers(producer_id=pid, topics=[
            cls.Markers.Topics(name=name, partitions=[cls.Markers.Topics.Partitions(**kw) for kw in parts])
            for name, parts in topics]) for pid, topics in markers])
    if waiting:
        assert svc.replicas is not None, "only replicated markers wait"
        wait_for_acks_all(svc.config[REQUEST_TIMEOUT_MS], waiting, lambda: ctx.send(response()),
                          svc.replicas.produce_purgatory)
        return DELAYED
    return response()


def handle_describe_transactions(ctx: RequestContext, req):
    tc = _coordinator(ctx)
    cls = ctx.codec.api.response
    out = []
    for tid in req.transactional_ids:
        if not ctx.authorize(AclOperation.DESCRIBE, TRANSACTIONAL_ID, tid):
            code, t = errors.TransactionalIdAuthorizationFailedError.code, None
        else:
            code, t = (_NOT_AVAILABLE, None) if tc is None else tc.describe_transaction(tid)
        if t is None:
            out.append(cls.TransactionStates(error_code=code, transactional_id=tid, transaction_state=""))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(t.partitions):
            if ctx.authorize(AclOperation.DESCRIBE, TOPIC, topic):
                by_topic.setdefault(topic, []).append(p)
        out.append(cls.TransactionStates(
            error_code=0, transactional_id=tid, transaction_state=t.state_name,
            transaction_timeout_ms=t.timeout_ms, transaction_start_time_ms=t.start_ms,
            producer_id=t.producer_id, producer_epoch=t.producer_epoch,
            topics=[{"topic": topic, "partitions": ps} for topic, ps in by_topic.items()]))
    return cls(throttle_time_ms=0, transaction_states=out)


def handle_list_transactions(ctx: RequestContext, req):
    tc = _coordinator(ctx)
    if tc is None:      # no __transaction_state yet (cluster mode): no transactions
        return ctx.response(throttle_time_ms=0, error_code=0, unknown_state_filters=[], transaction_states=[])
    unknown, found = tc.list_transactions(req.state_filters, req.producer_id_filters,
                                          req.duration_filter)
    return ctx.response(throttle_time_ms=0, error_code=0, unknown_state_filters=unknown,
                        transaction_states=[
                            {"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                             "transaction_state": t.state_name} for t in found
                            if ctx.authorize(AclOperation.DESCRIBE, TRANSACTIONAL_ID, t.transactional_id)])


# api key -> (handler, min version, max version), merged into the dispatch table's RANGES.
TRANSACTION_RANGES = {
    ApiKey.INIT_PRODUCER_ID: (handle_init_producer_id, 0, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: (handle_add_partitions_to_txn, 0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (handle_add_offsets_to_txn, 0, 3),
    ApiKey.END_TXN: (handle_end_txn, 0, 3),
    ApiKey.WRITE_TXN_MARKERS: (handle_write_txn_markers, 0, 1),
    ApiKey.TXN_OFFSET_COMMIT: (handle_txn_offset_commit, 0, 3),
    ApiKey.DESCRIBE_TRANSACTIONS: (handle_describe_transactions, 0, 0),
    ApiKey.LIST_TRANSACTIONS: (handle_list_transactions, 0, 1),
}
