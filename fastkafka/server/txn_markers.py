"""Transaction markers at a partition's leader: what WriteTxnMarkers and the local coordinator do.

A COMMIT or ABORT marker goes through the partition leader's one append path
(``Log.append_marker``) stamped with the leader's epoch. A marker landing on
``__consumer_offsets`` also completes the transaction's offset commits in the group coordinator
(Kafka's ``GroupCoordinator.scheduleHandleTxnCompletion``).

:class:`LocalMarkerWriter` is the transaction coordinator's ``write_markers`` on the embedded
broker, where every partition is local.
"""
from __future__ import annotations

import logging

from fastkafka import errors
from fastkafka.coordinator import OFFSETS_TOPIC

from .partition import Replication
from .topics import EMBEDDED_LEADER_EPOCH

__all__ = ["write_marker", "LocalMarkerWriter"]

log = logging.getLogger("fastkafka.server")


def write_marker(topics, replicas, groups, topic: str, partition: int, producer_id: int,
                 producer_epoch: int, coordinator_epoch: int, commit: bool):
    """Append the marker at this broker, which must lead the partition (raises a KafkaError).
    In cluster mode returns what acks=all waits on (the marker's Replication): the coordinator
    counts a marker written once replicated, as Kafka's leader answers WriteTxnMarkers; None on
    one broker."""
    lg = topics.log(topic, partition)
    part = None
    if replicas is None:
        info = lg.append_marker(producer_id, producer_epoch, coordinator_epoch, commit, EMBEDDED_LEADER_EPOCH)
    else:
        part = replicas.get(topic, partition)
        if part is None:
            raise errors.NotLeaderOrFollowerError(f"{topic}-{partition}: not the leader here")
        with part.leading() as leader_epoch:
            info = lg.append_marker(producer_id, producer_epoch, coordinator_epoch, commit, leader_epoch)
    if topic == OFFSETS_TOPIC and groups is not None:
        groups.complete_txn(producer_id, partition, commit)
    return None if part is None else Replication(lg, part, info.last_offset + 1, leader_epoch)


class LocalMarkerWriter:
    """``write_markers`` of the embedded broker's transaction coordinator: every partition is
    local. Answers the error code of each partition whose marker was not written."""

    def __init__(self, topics, groups):
        self.topics, self.groups = topics, groups

    def __call__(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                 partitions) -> dict[tuple[str, int], int]:
        failed = {}
        for topic, partition in sorted(partitions):
            try:
                write_marker(self.topics, None, self.groups, topic, partition, producer_id,
                             producer_epoch, coordinator_epoch, commit)
            except errors.KafkaError as e:
                log.warning("marker of producer %d to %s-%d failed: %s", producer_id, topic, partition, e)
                failed[(topic, partition)] = e.code
        return failed
