"""A partition's log as Fetch, ListOffsets and OffsetForLeaderEpoch resolve it: fenced by the
requester's idea of the leader epoch, then (for most requests) only at the leader.

The check is Kafka's ``Partition.getLocalLog``: a ``current_leader_epoch`` older than this
broker's epoch of the partition is FENCED_LEADER_EPOCH (the requester's metadata is stale), a
newer one UNKNOWN_LEADER_EPOCH (this broker's is), -1 skips the check; only then does a broker
that does not lead the partition answer NOT_LEADER_OR_FOLLOWER. A single broker leads every
partition in epoch 0 (``EMBEDDED_LEADER_EPOCH``), the epoch Metadata reports there.

A partition refused as not led here can carry a hint of where it is led (KIP-951: Produce v10,
Fetch v16): ``current_leaders`` answers the leader and epoch and that leader's address on the
requester's listener, so a client redirects without a Metadata round trip.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors

from ..partition import NONE
from ..topics import EMBEDDED_LEADER_EPOCH
from .metadata import live_brokers

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["current_leaders", "hint_leaders", "leader_log", "partition_epoch"]


def partition_epoch(ctx: RequestContext, topic: str, partition: int) -> int:
    """This broker's leader epoch of the partition: the one it leads or follows in (cluster
    mode; -1 before it knows), ``EMBEDDED_LEADER_EPOCH`` on a single broker."""
    replicas = ctx.services.replicas
    if replicas is None:
        return EMBEDDED_LEADER_EPOCH
    part = replicas.get(topic, partition)
    return -1 if part is None else part.leader_epoch


def leader_log(ctx: RequestContext, topic: str, partition: int, current_epoch: int, *, require_leader: bool = True):
    """The partition's log, fenced by the requester's ``current_epoch`` (-1: no check); at the
    leader only unless ``require_leader`` is off (ListOffsets for debugging: any replica)."""
    if current_epoch >= 0:
        epoch = partition_epoch(ctx, topic, partition)
        if epoch >= 0 and current_epoch != epoch:
            if current_epoch < epoch:
                raise errors.FencedLeaderEpochError(
                    f"{topic}-{partition}: epoch {current_epoch} is older than {epoch}")
            raise errors.UnknownLeaderEpochError(f"{topic}-{partition}: epoch {current_epoch} is newer than {epoch}")
    topics = ctx.services.topics
    if require_leader or ctx.services.replicas is None:
        return topics.log(topic, partition)
    lg = topics.local_log(topic, partition)
    if lg is None:
        topics.log(topic, partition)    # raises UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER
        raise errors.NotLeaderOrFollowerError(f"{topic}-{partition} has no replica on this broker")
    return lg


def _current_leader(ctx: RequestContext, topic: str, partition: int) -> tuple[int, int]:
    """(leader id, leader epoch) as this broker knows them, (-1, -1) when it knows nothing."""
    svc = ctx.services
    replicas = svc.replicas
    if replicas is None:
        return svc.broker_id, EMBEDDED_LEADER_EPOCH
    # Our replica's view follows the controller's LeaderAndIsr as this broker applied it, so
    # it agrees with what this broker just refused; an offline replica or none at all knows
    # nothing, and the metadata cache (the state znodes) answers instead, as in Kafka.
    part = replicas.get(topic, partition)
    if part is not None and part.role != NONE:
        return part.leader, part.leader_epoch
    view = svc.zk_metadata().partition(topic, partition)
    return (-1, -1) if view is None else (view.leader, view.leader_epoch)


def current_leaders(ctx: RequestContext, partitions) -> tuple[dict, list[tuple[int, str, int, str | None]]]:
    """For the ``(topic, partition)`` pairs a request was refused as not led here: each one's
    ``(leader id, leader epoch)`` (-1 for what this broker does not know) and the
    ``(node id, host, port, rack)`` of those leaders that are alive, on the request's listener
    (the addresses Metadata would give this client). Only refused partitions pay for it.

    Example (a single broker, which leads everything in epoch 0)::

        >>> from types import SimpleNamespace as NS
        >>> services = NS(broker_id=1, replicas=None, cluster=None, endpoint=lambda name: ("h1", 9092))
        >>> current_leaders(NS(services=services, listener="PLAINTEXT"), [("t", 0)])
        ({('t', 0): (1, 0)}, [(1, 'h1', 9092, None)])
    """
    leaders = {tp: _current_leader(ctx, *tp) for tp in partitions}
    wanted = {leader for leader, _ in leaders.values() if leader >= 0}
    if not wanted:
        return leaders, []
    nodes, _controller = live_brokers(ctx)
    return leaders, [n for n in nodes if n[0] in wanted]


def hint_leaders(ctx: RequestContext, refused, hint, endpoint) -> list:
    """KIP-951 (Produce v10, Fetch v16): set ``current_leader`` -- ``hint(leader_id=, leader_epoch=)``
    -- in the response fields of each ``(topic, partition, fields)`` refused as not led here, and
    return the response's ``node_endpoints`` (each ``endpoint(node_id=, host=, port=, rack=)``)."""
    leaders, nodes = current_leaders(ctx, [(t, p) for t, p, _ in refused])
    for t, p, fields in refused:
        leader_id, epoch = leaders[(t, p)]
        fields["current_leader"] = hint(leader_id=leader_id, leader_epoch=epoch)
    return [endpoint(node_id=i, host=h, port=port, rack=r) for i, h, port, r in nodes]
