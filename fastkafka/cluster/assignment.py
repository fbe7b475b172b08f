"""Replica assignment of new partitions: round-robin over the live brokers (the controller's rule).

Partition ``p`` gets the brokers ``start + p, start + p + 1, ...`` (modulo the sorted live
brokers), so partitions, and therefore leaders, spread evenly and the first replica — the
preferred leader — differs between neighbouring partitions. ``start`` is random for a new topic
(several small topics do not all pile their first partition onto the lowest id) and, when a
topic grows, continues where its existing partitions left off.

Example::

    >>> assign_replicas([1, 2, 3], 4, 1, start=0)
    {0: (1,), 1: (2,), 2: (3,), 3: (1,)}
    >>> assign_replicas([1, 2, 3], 2, 2, start=1, first_partition=5)
    {5: (2, 3), 6: (3, 1)}
"""
from __future__ import annotations

import random

from fastkafka import errors

__all__ = ["assign_replicas"]


def assign_replicas(live_brokers, partitions: int, replication_factor: int, *, start: int | None = None,
                    first_partition: int = 0) -> dict[int, tuple[int, ...]]:
    """``{partition: replicas}`` for ``partitions`` new partitions numbered from ``first_partition``.

    Raises INVALID_REPLICATION_FACTOR when there are fewer live brokers than replicas, and
    INVALID_PARTITIONS for a non-positive count.
    """
    brokers = sorted(set(live_brokers))
    if partitions <= 0:
        raise errors.InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise errors.InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise errors.InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    if start is None:
        start = random.randrange(len(brokers))
    n = len(brokers)
    return {first_partition + i: tuple(brokers[(start + i + j) % n] for j in range(replication_factor))
            for i in range(partitions)}
