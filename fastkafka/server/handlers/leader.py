"""A partition's log as Fetch, ListOffsets and OffsetForLeaderEpoch resolve it: fenced by the
requester's idea of the leader epoch, then (for most requests) only at the leader.

The check is Kafka's ``Partition.getLocalLog``: a ``current_leader_epoch`` older than this
broker's epoch of the partition is FENCED_LEADER_EPOCH (the requester's metadata is stale), a
newer one UNKNOWN_LEADER_EPOCH (this broker's is), -1 skips the check; only then does a broker
that does not lead the partition answer NOT_LEADER_OR_FOLLOWER. A single broker leads every
partition in epoch 0 (``EMBEDDED_LEADER_EPOCH``), the epoch Metadata reports there.
"""
from __future__ import annotations

from fastkafka import errors

from ..topics import EMBEDDED_LEADER_EPOCH

__all__ = ["leader_log", "partition_epoch"]


def partition_epoch(ctx, topic: str, partition: int) -> int:
    """This broker's leader epoch of the partition: the one it leads or follows in (cluster
    mode; -1 before it knows), ``EMBEDDED_LEADER_EPOCH`` on a single broker."""
    replicas = ctx.broker.replicas
    if replicas is None:
        return EMBEDDED_LEADER_EPOCH
    part = replicas.get(topic, partition)
    return -1 if part is None else part.leader_epoch


def leader_log(ctx, topic: str, partition: int, current_epoch: int, *, require_leader: bool = True):
    """The partition's log, fenced by the requester's ``current_epoch`` (-1: no check); at the
    leader only unless ``require_leader`` is off (ListOffsets for debugging: any replica)."""
    if current_epoch >= 0:
        epoch = partition_epoch(ctx, topic, partition)
        if epoch >= 0 and current_epoch != epoch:
            if current_epoch < epoch:
                raise errors.FencedLeaderEpochError(
                    f"{topic}-{partition}: epoch {current_epoch} is older than {epoch}")
            raise errors.UnknownLeaderEpochError(f"{topic}-{partition}: epoch {current_epoch} is newer than {epoch}")
    topics = ctx.broker.topics
    if require_leader or ctx.broker.replicas is None:
        return topics.log(topic, partition)
    lg = topics.local_log(topic, partition)
    if lg is None:
        topics.log(topic, partition)    # raises UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER
        raise errors.NotLeaderOrFollowerError(f"{topic}-{partition} has no replica on this broker")
    return lg
