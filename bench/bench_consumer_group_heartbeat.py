"""What persisting KIP-848 consumer groups costs a heartbeat: the coordinator's
``consumer_group_heartbeat`` (in-process, a MemoryOffsetsStore) for a steady member of a group of
N members, and for a member that joins and leaves (every heartbeat writes), with

- ``off``: no records written (the first slice's behaviour: the limit);
- ``incremental``: what is on main: only the records of the members that changed are encoded,
  and a heartbeat that changed nothing encodes nothing;
- ``full``: the whole group encoded and diffed against what was written, on every heartbeat
  (the simple way, kept here to show what the incremental way buys).

Variants alternate round by round; figures are medians, as ratios to ``off`` in the same run.

    .venv/bin/python bench/bench_consumer_group_heartbeat.py --rounds 5 --members 10 1000
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fastkafka.coordinator import GroupCoordinator, MemoryOffsetsStore  # noqa: E402
from fastkafka.coordinator.consumer_group_records import changes, group_records  # noqa: E402
from fastkafka.coordinator.consumer_groups import ConsumerGroupHeartbeats  # noqa: E402

TOPIC = uuid.UUID(int=1)
INCREMENTAL = ConsumerGroupHeartbeats._store_consumer_group


def _off(self, group, done):
    done(0)


def _full(self, group, done):
    after = group_records(group)
    records = changes(group.records, after)
    group.records = after
    group.changed = set()
    if not records:
        return done(0)
    self.manager.store_records(group.group_id, records, done)


VARIANTS = {"off": _off, "incremental": INCREMENTAL, "full": _full}


def coordinator(members: int) -> GroupCoordinator:
    gc = GroupCoordinator.create(MemoryOffsetsStore(4), clock=lambda: 0)
    gc.topic_metadata = lambda name: (TOPIC, 2 * members) if name == "t" else None
    for i in range(members):
        gc.consumer_group_heartbeat("g", f"m{i}", 0, rebalance_timeout_ms=30000, subscribed_topic_names=["t"],
                                    owned=[])
    return gc


def steady(gc: GroupCoordinator, n: int) -> float:
    """Seconds per heartbeat of a member whose state does not change."""
    m = gc.consumer_groups["g"].members["m0"]
    owned = [(t, sorted(ps)) for t, ps in m.assigned.items()]
    sink = [].append
    t0 = time.perf_counter()
    for _ in range(n):
        gc.consumer_group_heartbeat("g", "m0", m.member_epoch, owned=owned, callback=sink)
    return (time.perf_counter() - t0) / n


def churn(gc: GroupCoordinator, n: int) -> float:
    """Seconds per heartbeat of a member joining then leaving (each one writes records)."""
    sink = [].append
    t0 = time.perf_counter()
    for i in range(n):
        gc.consumer_group_heartbeat("g", "x", 0, rebalance_timeout_ms=30000, subscribed_topic_names=["t"],
                                    owned=[], callback=sink)
        gc.consumer_group_heartbeat("g", "x", -1, callback=sink)
    return (time.perf_counter() - t0) / (2 * n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--members", type=int, nargs="+", default=[10, 1000])
    ap.add_argument("--beats", type=int, default=300)
    args = ap.parse_args()
    for members in args.members:
        gcs = {name: coordinator(members) for name in VARIANTS}
        times = {(name, kind): [] for name in VARIANTS for kind in ("steady", "churn")}
        for _ in range(args.rounds):
            for name, store in VARIANTS.items():
                ConsumerGroupHeartbeats._store_consumer_group = store
                times[name, "steady"].append(steady(gcs[name], args.beats))
                times[name, "churn"].append(churn(gcs[name], max(args.beats // 10, 5)))
        ConsumerGroupHeartbeats._store_consumer_group = INCREMENTAL
        for kind in ("steady", "churn"):
            base = statistics.median(times["off", kind])
            row = ", ".join(f"{name} {statistics.median(times[name, kind]) / base:.2f}x" for name in VARIANTS)
            print(f"{members} members, {kind}: off {base * 1e6:.0f} us/heartbeat; {row}")


if __name__ == "__main__":
    main()
