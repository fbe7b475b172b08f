"""The leader's log of a partition, as Fetch and OffsetForLeaderEpoch resolve it."""
from __future__ import annotations

from fastkafka import errors

__all__ = ["leader_log"]


def leader_log(ctx, replicas, topic: str, partition: int, current_epoch: int):
    """The partition's log at its leader, fenced by the fetcher's idea of the epoch."""
    lg = ctx.broker.topics.log(topic, partition)
    if replicas is not None and current_epoch >= 0:
        part = replicas.get(topic, partition)
        if part is not None and current_epoch != part.leader_epoch:
            if current_epoch < part.leader_epoch:
                raise errors.FencedLeaderEpochError(
                    f"{topic}-{partition}: epoch {current_epoch} is older than {part.leader_epoch}")
            raise errors.UnknownLeaderEpochError(
                f"{topic}-{partition}: epoch {current_epoch} is newer than {part.leader_epoch}")
    return lg
