"""An exactly-once mirror that has caught up with its source commits its transactions at once,
not when ``commit_interval_ms`` runs out: read_committed readers of the target see the copies
while the mirror runs, long before the interval ends."""
from __future__ import annotations

import threading

import pytest

from fastkafka.client import AdminClient, Producer, ProducerData
from fastkafka.mirror import DEFAULT_GROUP, Mirror
from mirror_support import read_topic, wait_for

pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]

INTERVAL_MS = 40_000     # caught-up commits at most every 4 s; each wave is waited for 20 s at most


def produce(bootstrap: str, first: int, n: int) -> None:
    with Producer({"bootstrap.servers": bootstrap}) as p:
        for i in range(first, first + n):
            p.send(ProducerData("orders", f"k{i}".encode(), [f"order-{i}".encode()], partition=i % 2))


def test_a_caught_up_exactly_once_stream_commits_before_the_interval(clusters):
    a, b = clusters
    a.topics.create("orders", 2)
    produce(a.bootstrap, 0, 40)
    m = Mirror(a.bootstrap, b.bootstrap, topics=["orders"], exactly_once=True, commit_interval_ms=INTERVAL_MS,
               emit_checkpoints_interval_s=0, progress_interval_s=0)
    runner = threading.Thread(target=m.run)
    runner.start()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    try:
        def committed() -> int:      # the positions the mirror's transactions committed on the target
            try:
                return sum(admin.committed_offsets(DEFAULT_GROUP).values())
            except Exception:       # noqa: BLE001 - the group is not there yet
                return 0
        for total in (40, 70):      # a second wave after the first commit: caught up again, committed again
            if total == 70:
                produce(a.bootstrap, 40, 30)
            wait_for(lambda: committed() == total, 20, f"{total} source records committed on the target",
                     lambda: f"committed {committed()}")
            assert runner.is_alive()        # not the commit of a stop
            rows = read_topic(b.bootstrap, "orders")
            assert sorted(v for part in rows.values() for _o, _k, v, _h, _t in part) == sorted(
                f"order-{i}".encode() for i in range(total))
        assert m.streams[0].delivery.transactions >= 2
    finally:
        m.stop()
        runner.join(60)
        admin.close()
