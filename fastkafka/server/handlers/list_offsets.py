"""ListOffsets: v0 is the seeds' ``getOffsetsBefore`` (segment base offsets, newest first, up to
``max_num_offsets``); v1+ answer one (timestamp, offset, leader epoch) per partition.

Special timestamps: -1 latest, -2 earliest (the log start offset), -3 (v7+, KIP-734) the largest
timestamp and the offset of the *batch* holding it (Kafka 3.x before 3.7, which later answers
that record's own offset), -4 (v8+, KIP-405) the local log start offset: the log start offset,
as in Kafka without tiered storage, -5 (v9+, KIP-1005) the last tiered offset: none (offset -1,
leader epoch -1, as Kafka answers without tiered storage); any other value finds the first record
with a timestamp at or after it (offset -1 and timestamp -1 when there is none, as Kafka answers).
Each topic needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED).

Who asks (``replica_id``) decides, as in Kafka's ``ReplicaManager.fetchOffset``, where and up to
where it is answered:

* a consumer (-1) asks the leader (NOT_LEADER_OR_FOLLOWER elsewhere) and sees what it may
  consume: latest is the high watermark (with READ_COMMITTED, v2+, the last stable offset), and
  a record found by timestamp at or past that is no answer (offset -1), v0's offsets are capped
  there too;
* a follower (>= 0) asks the leader and sees its whole log: latest is the log end offset, what
  the replica fetcher compares its own end with after OFFSET_OUT_OF_RANGE;
* a debugging request (-2) may ask any replica, leader or follower, and sees its whole log.

``current_leader_epoch`` (v4+) is fenced as Fetch fences it (leader.py): FENCED_LEADER_EPOCH
when older than this broker's epoch of the partition, UNKNOWN_LEADER_EPOCH when newer, -1 no
check. ``leader_epoch`` (v4+) of the answer: for latest the partition's current leader epoch
(Kafka's ``Partition.fetchOffsetForTimestamp``), for earliest and a timestamp the epoch that
wrote the offset (the leader-epoch cache; -1 when it does not say). While a new leader's high
watermark is still below the start of its epoch (it does not yet know what its predecessor
committed), a consumer's latest, and a timestamp found at or past the high watermark, answer
OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before), as Kafka does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors

from ..partition import LEADER
from .authorization import AclOperation, require_topic
from .failure import failure
from .leader import leader_log, partition_epoch

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_list_offsets"]

LATEST = -1
EARLIEST = -2
EARLIEST_LOCAL = -4    # no tiered storage: the local log is the whole log
LATEST_TIERED = -5     # no tiered storage: nothing is tiered
READ_COMMITTED = 1
CONSUMER = -1          # Kafka's ListOffsetsRequest.CONSUMER_REPLICA_ID
DEBUGGING = -2         # DEBUGGING_REPLICA_ID: any replica answers


def _lagging_leader(ctx: RequestContext, topic: str, partition: int, lg) -> bool:
    """A leader whose high watermark has not reached the start of its epoch yet."""
    replicas = ctx.services.replicas
    part = None if replicas is None else replicas.get(topic, partition)
    return part is not None and part.role == LEADER and part.epoch_start_offset > lg.high_watermark


def _not_available(version: int, topic: str, partition: int) -> errors.KafkaError:
    msg = f"{topic}-{partition}: the new leader's high watermark is behind the start of its epoch"
    return errors.OffsetNotAvailableError(msg) if version >= 5 else errors.LeaderNotAvailableError(msg)


def _offsets_before(lg, p, client: bool) -> list[int]:
    """v0: segment base offsets (a consumer's capped at the high watermark, as Kafka's
    legacyFetchOffsetsForTimestamp does)."""
    if p.timestamp < EARLIEST:
        raise errors.UnsupportedVersionError("ListOffsets v0 knows only timestamps -1 and -2")
    if p.max_num_offsets < 0:
        raise errors.InvalidRequestError("max_num_offsets is negative")
    offsets = lg.offsets_before(p.timestamp, p.max_num_offsets)
    if client:
        hw = lg.high_watermark
        if any(o > hw for o in offsets):
            offsets = [hw] + [o for o in offsets if o <= hw]
    return offsets


def _offset(ctx: RequestContext, lg, topic: str, p, client: bool, committed: bool) -> tuple[int, int, int]:
    """``(offset, timestamp, leader_epoch)`` for one v1+ partition."""
    if client:
        last = lg.last_stable_offset if committed else lg.high_watermark
    else:
        last = lg.log_end_offset
    lagging = client and _lagging_leader(ctx, topic, p.partition_index, lg)
    if p.timestamp == LATEST_TIERED:
        return -1, -1, -1
    timestamp = EARLIEST if p.timestamp == EARLIEST_LOCAL else p.timestamp
    if timestamp == LATEST:
        if lagging:
            raise _not_available(ctx.version, topic, p.partition_index)
        return last, -1, partition_epoch(ctx, topic, p.partition_index)
    found = lg.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1, -1
    offset, found_timestamp = found
    if timestamp != EARLIEST and offset >= last:
        if lagging:
            raise _not_available(ctx.version, topic, p.partition_index)
        return -1, -1, -1       # not readable yet: no answer, as if no record were that recent
    return offset, found_timestamp, lg.leader_epochs.epoch_for_offset(offset)


def handle_list_offsets(ctx: RequestContext, req):
    version = ctx.version
    client = req.replica_id == CONSUMER
    committed = client and version >= 2 and req.isolation_level == READ_COMMITTED
    cls = ctx.codec.api.response
    out = []
    for t in req.topics:
        parts = []
        seen = set()
        for p in t.partitions:
            kw = dict(partition_index=p.partition_index, error_code=0, old_style_offsets=[],
                      timestamp=-1, offset=-1, leader_epoch=-1)
            try:
                if version >= 1 and p.partition_index in seen:
                    raise errors.InvalidRequestError("partition listed twice")
                seen.add(p.partition_index)
                require_topic(ctx, AclOperation.DESCRIBE, t.name)
                lg = leader_log(ctx, t.name, p.partition_index, p.current_leader_epoch,
                                require_leader=req.replica_id != DEBUGGING)
                if version == 0:
                    kw["old_style_offsets"] = _offsets_before(lg, p, client)
                else:
                    kw["offset"], kw["timestamp"], kw["leader_epoch"] = _offset(ctx, lg, t.name, p, client,
                                                                                committed)
            except Exception as e:
                kw["error_code"] = failure(e, "list offsets of %s-%d", t.name, p.partition_index)[0]
            parts.append(cls.Topics.Partitions(**kw))
        out.append(cls.Topics(name=t.name, partitions=parts))
    return cls(throttle_time_ms=0, topics=out)
