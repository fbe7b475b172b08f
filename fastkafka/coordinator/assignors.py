"""The server-side assignors of KIP-848's consumer groups: ``uniform`` and ``range``.

The group coordinator runs one when a consumer group's epoch moves past its assignment epoch;
its answer is the *target* assignment, which members then reach one heartbeat at a time
(:mod:`.current_assignment`). An assignor sees only what it needs: each member's subscribed
topic ids, each topic's partition count, and the current target (to stay sticky). Partitions
are named ``(topic_id, partition)``; an assignment is ``{member_id: {topic_id: {partition}}}``.

``uniform`` spreads every subscribed partition so member loads differ by at most one where the
subscriptions allow it, and keeps a member's partitions where it can (fewer revocations);
``range`` gives each member, topic by topic, a contiguous range, the same ranges for topics of
equal size (co-partitioned joins), members in member-id order.

Example::

    >>> t = "topic-id"
    >>> uniform({"a": {t}, "b": {t}}, {t: 4}, {"a": {t: {0, 1, 2, 3}}})
    {'a': {'topic-id': {0, 1}}, 'b': {'topic-id': {2, 3}}}
    >>> range_assign({"a": {t}, "b": {t}}, {t: 3}, {})
    {'a': {'topic-id': {0, 1}}, 'b': {'topic-id': {2}}}
"""
from __future__ import annotations

import math
from typing import Callable

__all__ = ["ASSIGNORS", "DEFAULT_ASSIGNOR", "uniform", "range_assign"]

Assignment = dict[str, dict[object, set[int]]]


def uniform(subscriptions: dict[str, set], partitions: dict[object, int], current: Assignment) -> Assignment:
    """Balanced and sticky (see the module docstring)."""
    members = sorted(subscriptions)
    out: Assignment = {m: {} for m in members}
    load = dict.fromkeys(members, 0)
    # each member's fair share: its part of every topic it shares with others
    share = {m: 0.0 for m in members}
    for tid, n in partitions.items():
        takers = [m for m in members if tid in subscriptions[m]]
        for m in takers:
            share[m] += n / len(takers)
    # 1e-9: 4/3 * 3 is not 4 in floats
    floor = {m: math.floor(share[m] + 1e-9) for m in members}
    quota = {m: math.ceil(share[m] - 1e-9) for m in members}
    # how many members may keep one above their floor: those extra partitions only (else with 4
    # partitions, two members keeping 2 each would leave a third with none)
    spare = sum(n for tid, n in partitions.items() if any(tid in subscriptions[m] for m in members)) \
        - sum(floor.values())
    taken: set[tuple[object, int]] = set()
    for limit in (floor, quota):            # stickiness: keep what it has, up to its share
        for m in members:
            for tid, ps in sorted(current.get(m, {}).items(), key=lambda kv: str(kv[0])):
                if tid not in subscriptions[m]:
                    continue
                for p in sorted(ps):
                    if p < partitions.get(tid, 0) and load[m] < limit[m] and (tid, p) not in taken and \
                            (limit is floor or spare > 0):
                        out[m].setdefault(tid, set()).add(p)
                        taken.add((tid, p))
                        load[m] += 1
                        spare -= limit is quota
    for tid in sorted(partitions, key=str):
        takers = [m for m in members if tid in subscriptions[m]]
        if not takers:
            continue
        for p in range(partitions[tid]):
            if (tid, p) in taken:
                continue
            m = min(takers, key=lambda x: (load[x], x))
            out[m].setdefault(tid, set()).add(p)
            load[m] += 1
    return out


def range_assign(subscriptions: dict[str, set], partitions: dict[object, int], current: Assignment) -> Assignment:
    """Per topic, contiguous ranges to its subscribers in member-id order (``current`` unused:
    the ranges depend only on who subscribes, which is what co-partitioning needs)."""
    out: Assignment = {m: {} for m in sorted(subscriptions)}
    for tid, n in partitions.items():
        takers = sorted(m for m, topics in subscriptions.items() if tid in topics)
        if not takers:
            continue
        base, extra = divmod(n, len(takers))
        start = 0
        for i, m in enumerate(takers):
            size = base + (1 if i < extra else 0)
            if size:
                out[m][tid] = set(range(start, start + size))
            start += size
    return out


#: by the names clients ask for in ``group.remote.assignor`` (Kafka's ``name()``s)
ASSIGNORS: dict[str, Callable[[dict, dict, Assignment], Assignment]] = {
    "uniform": uniform, "range": range_assign}
DEFAULT_ASSIGNOR = "uniform"     # the first of Kafka's group.consumer.assignors
