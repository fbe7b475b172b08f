"""Produce: hand each partition's records to its log, as they arrived (DESIGN §3).

The records are a writable ``memoryview`` into the request frame; ``Log.append`` validates
them in Cython and stamps offsets in place, so nothing here touches individual records.
Produce v0–v2 may carry legacy message sets (magic 0/1): they are converted to v2 batches first
(``fastkafka.legacy.to_v2``); v3+ must be magic 2 (UNSUPPORTED_FOR_MESSAGE_FORMAT otherwise).

acks: 0 → no response at all (the connection is simply unmuted); 1 → answer after the leader's
append; -1 (all) → refused with NOT_ENOUGH_REPLICAS before the append when the ISR is smaller
than ``min.insync.replicas``, else the answer waits in the produce purgatory until the high
watermark passes the batch (every in-sync replica has it) or ``timeout_ms`` passes
(REQUEST_TIMED_OUT); an ISR that shrank below ``min.insync.replicas`` meanwhile answers
NOT_ENOUGH_REPLICAS_AFTER_APPEND, as Kafka does (the records are in the log all the same). On a
single broker the leader is every replica, so -1 equals 1. Any other value → INVALID_REQUIRED_ACKS
for every partition. Errors are per partition and never stop the others.

Authorization (with an authorizer): WRITE on each topic (TOPIC_AUTHORIZATION_FAILED for its
partitions) and, for a transactional producer, WRITE on its transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), as Kafka checks them.

v8+ answers a refused partition's reason in ``error_message``; v9+ is flexible (KIP-482).

v10 (KIP-951): a partition refused with NOT_LEADER_OR_FOLLOWER — at once, or by an acks=all
wait that saw leadership move — carries ``current_leader`` (the leader and epoch this broker
knows), and the response's ``node_endpoints`` gives those leaders' addresses on the listener the
request came in on (``leader.hint_leaders``, shared with Fetch v16), so the client redirects
without a Metadata round trip. Kafka fills them for that error only (Fetch also for
FENCED_LEADER_EPOCH, which Produce never answers). Only refused partitions pay for the hint.
v11 is not advertised: it means the client understands TRANSACTION_ABORTABLE and the
transaction semantics of KIP-890 (server-side partition verification), which we do not have.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors
from fastkafka.records import magic_of

from ..authorizer import TOPIC, TRANSACTIONAL_ID, AclOperation
from ..delayed_partitions import wait_for_acks_all
from ..dispatch import DELAYED
from ..partition import ACKS_ALL, append_as_leader
from ..topics import EMBEDDED_LEADER_EPOCH
from .failure import failure
from .leader import hint_leaders

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_produce"]


_INVALID_ACKS = errors.InvalidRequiredAcksError.code
_UNSUPPORTED_FORMAT = errors.UnsupportedForMessageFormatError.code
_TOPIC_DENIED = errors.TopicAuthorizationFailedError.code
_TXN_DENIED = errors.TransactionalIdAuthorizationFailedError.code
_NOT_LEADER = errors.NotLeaderOrFollowerError.code
# v10+ (KIP-951): the first version whose response carries leader hints
_LEADER_HINTS = 10
# v8+ (KIP-467): a batch is accepted or refused whole here, so no record is singled out; the
# partition's error_message says why it was refused
_NO_RECORD_ERRORS = ()


def _append(ctx: RequestContext, replicas, topic: str, partition: int, records, acks: int):
    """(error_code, base_offset, log_append_time, log_start_offset, waiting) for one partition;
    ``waiting`` is the append's Replication when acks=all must wait. With metrics on, the
    append counts its records (the offsets it was given) and bytes, once per partition."""
    lg = ctx.services.topics.log(topic, partition)
    part = replicas.get(topic, partition) if replicas is not None else None
    if records is None:
        raise errors.InvalidRecordError("null records")
    magic = magic_of(records) if len(records) else 2
    if magic != 2:
        if ctx.version >= 3 or magic not in (0, 1):
            if magic in (0, 1):
                return _UNSUPPORTED_FORMAT, -1, -1, -1, None
            raise errors.CorruptMessageError(f"unknown magic {magic}")
        from fastkafka import legacy  # noqa: PLC0415  (only old clients pay for the import)
        records = legacy.to_v2(records)
    if part is None:
        info = lg.append(records, leader_epoch=EMBEDDED_LEADER_EPOCH)
        if ctx.metrics is not None:
            ctx.metrics.produced(topic, info.last_offset - info.base_offset + 1, len(records))
        return 0, info.base_offset, info.log_append_time, info.log_start_offset, None
    info, replication = append_as_leader(lg, part, records, acks)
    if ctx.metrics is not None:
        ctx.metrics.produced(topic, info.last_offset - info.base_offset + 1, len(records))
    waiting = replication if acks == ACKS_ALL and lg.high_watermark <= info.last_offset else None
    return 0, info.base_offset, info.log_append_time, info.log_start_offset, waiting


def _response(ctx: RequestContext, results, not_led):
    """``not_led``: the ``(topic, fields)`` refused as not led here, hinted at from v10."""
    cls = ctx.codec.api.response
    nodes = (hint_leaders(ctx, [(t, kw["index"], kw) for t, kw in not_led],
                          cls.Responses.PartitionResponses.CurrentLeader, cls.NodeEndpoints)
             if not_led and ctx.version >= _LEADER_HINTS else [])
    return cls(throttle_time_ms=0, node_endpoints=nodes, responses=[
        cls.Responses(name=t, partition_responses=[cls.Responses.PartitionResponses(**kw) for kw in parts])
        for t, parts in results])


def _respond_after_acks(ctx: RequestContext, results, not_led, waiting):
    """The answer once the acks=all wait is over: it may have seen leadership move, too."""
    moved = [(w.key[0], kw) for kw, w in waiting if kw["error_code"] == _NOT_LEADER]
    ctx.send(_response(ctx, results, not_led + moved))


def handle_produce(ctx: RequestContext, req):
    acks = req.acks
    replicas = ctx.services.replicas
    results = []
    waiting = []
    not_led = []    # (topic, fields) of partitions refused as not led here (the rare path)
    txn_id = req.transactional_id
    refused = None if acks in (0, 1, ACKS_ALL) else _INVALID_ACKS
    if refused is None and txn_id is not None and not ctx.authorize(AclOperation.WRITE, TRANSACTIONAL_ID, txn_id):
        refused = _TXN_DENIED
    for t in req.topic_data:
        parts: list[dict] = []
        results.append((t.name, parts))
        topic_refused = refused
        if topic_refused is None and not ctx.authorize(AclOperation.WRITE, TOPIC, t.name):
            topic_refused = _TOPIC_DENIED
        for p in t.partition_data:
            wait = message = None
            if topic_refused is not None:
                code, base, lat, lso = topic_refused, -1, -1, -1
            else:
                try:
                    code, base, lat, lso, wait = _append(ctx, replicas, t.name, p.index, p.records, acks)
                except Exception as e:
                    (code, message), base, lat, lso = failure(e, "append to %s-%d", t.name, p.index), -1, -1, -1
            kw = dict(index=p.index, error_code=code, base_offset=base, log_append_time_ms=lat,
                      log_start_offset=lso, record_errors=_NO_RECORD_ERRORS, error_message=message)
            parts.append(kw)
            if code == _NOT_LEADER:
                not_led.append((t.name, kw))
            if wait is not None:
                waiting.append((kw, wait))
        if ctx.metrics is not None:
            ctx.metrics.produce_requested(t.name, sum(1 for kw in parts if kw["error_code"]))
    if acks == 0:
        return None
    if waiting:
        assert replicas is not None, "only replicated writes wait for acks=all"
        wait_for_acks_all(req.timeout_ms, waiting, lambda: _respond_after_acks(ctx, results, not_led, waiting),
                          replicas.produce_purgatory)
        return DELAYED
    return _response(ctx, results, not_led)
