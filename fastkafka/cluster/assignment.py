"""Replica assignment of new partitions, by Kafka's rules (its ``assignReplicasToBrokers``).

Brokers are sorted by id. Partition ``p``'s first replica — its preferred leader — is broker
``(start + p) % n``, so leaders spread evenly. Its followers sit at a *shifted* distance from it
(``1 + (shift + j) % (n - 1)``), and the shift grows by one each time the partitions wrap
around the brokers: a broker's followers are then not always the same neighbours, so when it
dies its partitions' leadership spreads over the others rather than landing on one broker.
``start`` and the initial shift are random for a new topic (several small topics do not all
pile their first partition onto the lowest id); a topic that grows continues from its first
partition's leader.

When every broker has a ``broker.rack``, the brokers are first interleaved by rack (rack A's
first, rack B's first, ..., rack A's second, ...) and a follower is placed on a rack that holds
no replica of the partition yet while there is one, so losing a rack loses at most one copy
when the replication factor does not exceed the racks. If only some brokers have a rack, the
racks are ignored (Kafka refuses the creation instead unless told to ignore racks; a warning
is logged here).

Example::

    >>> assign_replicas([1, 2, 3], 4, 1, start=0)
    {0: (1,), 1: (2,), 2: (3,), 3: (1,)}
    >>> assign_replicas([1, 2, 3, 4], 4, 3, start=0, shift=0)
    {0: (1, 2, 3), 1: (2, 3, 4), 2: (3, 4, 1), 3: (4, 1, 2)}
    >>> assign_replicas({1: "a", 2: "a", 3: "b", 4: "b"}, 2, 2, start=0, shift=0)
    {0: (1, 3), 1: (3, 2)}
"""
from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping

from fastkafka import errors

__all__ = ["assign_replicas"]

log = logging.getLogger("fastkafka.cluster.assignment")


def assign_replicas(brokers: Mapping[int, str | None] | Iterable[int], partitions: int, replication_factor: int,
                    *, start: int | None = None, shift: int | None = None,
                    first_partition: int = 0) -> dict[int, tuple[int, ...]]:
    """``{partition: replicas}`` for ``partitions`` new partitions numbered from ``first_partition``.

    ``brokers`` maps each live broker id to its rack (or None), or lists the ids. ``start`` is
    the index (in id order) of partition 0's first replica; ``shift`` the initial follower
    shift (defaults: random for a new topic; ``shift`` defaults to ``start`` when that is
    given, as in Kafka). Raises INVALID_REPLICATION_FACTOR when there are fewer live brokers
    than replicas, and INVALID_PARTITIONS for a non-positive count.
    """
    racks = dict(brokers) if isinstance(brokers, Mapping) else dict.fromkeys(brokers)
    ids = sorted(racks)
    if partitions <= 0:
        raise errors.InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise errors.InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(ids):
        raise errors.InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(ids)}.")
    n = len(ids)
    if start is None:
        start = random.randrange(n)
    if shift is None:
        shift = start
    with_rack = [b for b in ids if racks[b]]
    if with_rack and len(with_rack) < n:
        log.warning("only brokers %s have a broker.rack: assigning replicas without racks", with_rack)
    if len(with_rack) == n:
        return _rack_aware(ids, racks, partitions, replication_factor, start, shift, first_partition)
    out = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        out[p] = (ids[first],) + tuple(ids[_follower(first, shift, j, n)] for j in range(replication_factor - 1))
    return out


def _follower(first: int, shift: int, j: int, n: int) -> int:
    """Index of follower ``j`` of the replica at ``first``: never ``first`` itself."""
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_alternated(ids: list[int], racks: Mapping[int, str]) -> list[int]:
    """The brokers taking one from each rack in turn (racks by name, brokers by id)."""
    by_rack: dict[str, list[int]] = {}
    for b in ids:
        by_rack.setdefault(racks[b], []).append(b)
    columns = [by_rack[r] for r in sorted(by_rack)]
    return [col[i] for i in range(max(map(len, columns))) for col in columns if i < len(col)]


def _rack_aware(ids, racks, partitions, rf, start, shift, first_partition):
    arranged = _rack_alternated(ids, racks)
    n, n_racks = len(arranged), len(set(racks.values()))
    out = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [arranged[first]]
        used_racks, used = {racks[arranged[first]]}, {arranged[first]}
        k = 0
        while len(replicas) < rf:
            b = arranged[_follower(first, shift * n_racks, k, n)]
            k += 1
            # a new rack while some rack has none of this partition; a new broker always
            if (racks[b] not in used_racks or len(used_racks) == n_racks) and b not in used:
                replicas.append(b)
                used_racks.add(racks[b])
                used.add(b)
        out[p] = tuple(replicas)
    return out
