"""The coordinators' writes in cluster mode: a batch into a partition of their internal topic,
acknowledged once replicated (Kafka's appendRecords with the coordinator's required acks,
answered from the produce purgatory).

The batch goes to the local replica only while this broker leads the partition
(NOT_LEADER_OR_FOLLOWER otherwise), stamped with the leader epoch like a produced batch, and is
refused before the append with NOT_ENOUGH_REPLICAS when all acks are required and the ISR is
smaller than ``min.insync.replicas``. With ``required_acks`` -1 the write's callback then waits
in the replica manager's produce purgatory for the rule acks=all produce requests follow: the
high watermark passes the batch (0), the ISR shrank below ``min.insync.replicas`` meanwhile
(NOT_ENOUGH_REPLICAS_AFTER_APPEND), the leadership is lost (NOT_LEADER_OR_FOLLOWER — also when
it came back in a later epoch, whose log need not hold the batch any more), or ``timeout_ms``
passes (REQUEST_TIMED_OUT). With 0 or 1 it is answered after the append.

Thread-safe. Example (broker 1 leads ``__consumer_offsets-0`` in epoch 3, broker 2 follows)::

    >>> import tempfile
    >>> from types import SimpleNamespace as NS
    >>> from fastkafka.log import Log
    >>> from fastkafka.records import build_batch
    >>> from fastkafka.server.purgatory import Purgatory
    >>> tmpdir = tempfile.TemporaryDirectory(); log = Log(tmpdir.name + "/__consumer_offsets-0")
    >>> part = Partition("__consumer_offsets", 0, 1, log)
    >>> part.become_leader(epoch=3, replicas=(1, 2), isr=(1, 2), version=0, now=0)
    >>> replicas = NS(get=lambda t, p: part, produce_purgatory=Purgatory("produce"))
    >>> write = CoordinatorPartitionWriter(NS(log=lambda t, p: log), replicas, "__consumer_offsets")
    >>> write(0, bytearray(build_batch([(b"k", b"v", [], 0)])), print)   # waits for broker 2
    >>> hw = log.update_high_watermark(1)                                  # broker 2 fetched it
    >>> woken = replicas.produce_purgatory.check(("__consumer_offsets", 0))
    0
    >>> replicas.produce_purgatory.shutdown(); log.close(); tmpdir.cleanup()
"""
from __future__ import annotations

from typing import Callable

from fastkafka import errors

from .delayed_partitions import wait_for_acks_all
from .partition import ACKS_ALL, Partition, append_as_leader  # noqa: F401 (Partition: the example)

__all__ = ["CoordinatorPartitionWriter"]


class CoordinatorPartitionWriter:
    """``writer(partition, batch, on_replicated)`` for a coordinator's
    :class:`~fastkafka.coordinator.LogOffsetsStore` over ``topic``: ``topics`` is the broker's
    cluster topic manager, ``replicas`` its replica manager."""

    def __init__(self, topics, replicas, topic: str, *, required_acks: int = ACKS_ALL,
                 timeout_ms: int = 5000):
        self.topics, self.replicas, self.topic = topics, replicas, topic
        self.required_acks, self.timeout_ms = required_acks, timeout_ms

    def __call__(self, partition: int, batch: bytearray,
                 on_replicated: Callable[[int], None] | None) -> None:
        key = (self.topic, partition)
        lg = self.topics.log(*key)              # NOT_LEADER_OR_FOLLOWER unless the metadata says here
        part = self.replicas.get(*key)
        if part is None:
            raise errors.NotLeaderOrFollowerError(f"{self.topic}-{partition}: this broker does not lead it")
        _, replication = append_as_leader(lg, part, batch, self.required_acks)
        if on_replicated is None:
            return
        if self.required_acks != ACKS_ALL:
            on_replicated(0)
            return
        fields: dict[str, int] = {}
        wait_for_acks_all(self.timeout_ms, [(fields, replication)], lambda: on_replicated(fields["error_code"]),
                          self.replicas.produce_purgatory)
