"""KIP-447 fencing of an exactly-once mirror stream: its transactional id is the stream's, not
a partition's, so a stream that lost its partitions in a rebalance it missed (a zombie: paused,
cut off) is not fenced by its successor's ``init_transactions``. The group coordinator on the
target fences it instead: the zombie's transaction carries its stale member id and generation,
its offsets are refused, its commit fails, and none of its copies become visible."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from fastkafka import errors
from fastkafka._core.records_build import encode_records
from fastkafka.client import AdminClient
from fastkafka.client.group_member import GroupMember
from fastkafka.client.metadata import Cluster
from fastkafka.client.sender import EncodedRecords
from fastkafka.mirror.convert import Converted
from fastkafka.mirror.delivery import ExactlyOnce
from mirror_support import read_topic, wait_for

pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]

GROUP = "mirror-zombie"
MEMBERSHIP = {"session.timeout.ms": 6000, "rebalance.timeout.ms": 3000, "heartbeat.interval.ms": 300}


def copy(tp: tuple[str, int], first: int, values: list[bytes]) -> Converted:
    """A converted poll of ``tp`` from ``first``: ``values`` to the same topic and partition."""
    enc = EncodedRecords(*encode_records([(None, v, [], 1000) for v in values], 0, reserve=61))
    return Converted(tp, first + len(values), [(tp, enc)], len(values), 0, [(first, first + len(values) - 1)])


def stream(a, b) -> tuple[ExactlyOnce, list]:
    """An exactly-once delivery whose member joins the group on the target (as a stream's)."""
    clusters = [Cluster({"bootstrap.servers": b.bootstrap, **MEMBERSHIP}), Cluster({"bootstrap.servers": a.bootstrap})]
    member = GroupMember(clusters[0], GROUP, metadata=clusters[1], slots=True)
    delivery = ExactlyOnce(member, {"bootstrap.servers": b.bootstrap}, GROUP, lambda t: t,
                           AdminClient({"bootstrap.servers": a.bootstrap}))
    return delivery, clusters


def test_a_stale_member_cannot_commit_its_transaction(clusters):
    a, b = clusters
    a.topics.create("orders", 2)
    b.topics.create("orders", 2)
    zombie, zc = stream(a, b)
    other, oc = stream(a, b)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    try:
        assert zombie.member.join(["orders"]) == {("orders", 0), ("orders", 1)}
        with ThreadPoolExecutor(1) as pool:      # the other joins: one partition each
            other_joined = pool.submit(other.member.join, ["orders"])
            wait_for(lambda: not zombie.member.heartbeat(), 20, "the rebalance the other's join starts")
            joined = [zombie.member.join(["orders"]), other_joined.result()]
        assert sorted(joined, key=sorted) == [{("orders", 0)}, {("orders", 1)}]
        assert {zombie.member.slot, other.member.slot} == {0, 1}    # two transactional ids
        (tp,) = joined[0]
        assert zombie.start({tp}) == {}
        zombie.send([copy(tp, 0, [b"a0", b"a1"])])
        zombie.commit()                       # its generation is current: committed
        assert admin.committed_offsets(GROUP) == {tp: 2}
        zombie.send([copy(tp, 2, [b"z2", b"z3"])])     # then it stalls, its transaction open

        # the other stream rejoins; the zombie neither heartbeats nor rejoins: expelled, the
        # other alone in the next generation, keeping its id (nobody fences the zombie's
        # producer) and starting the zombie's partition where its last commit ended
        slot, generation = other.member.slot, zombie.member.generation
        assert other.member.join(["orders"]) == {("orders", 0), ("orders", 1)}
        assert (other.member.slot, other.member.generation > generation) == (slot, True)
        assert other.start({tp})[tp] == 2
        other.send([copy(tp, 2, [b"s2", b"s3"])])

        with pytest.raises((errors.UnknownMemberIdError, errors.IllegalGenerationError)):
            zombie.commit()                   # the coordinator refuses the stale member's offsets
        zombie.abandon()                      # as the stream does: its copies are aborted
        other.commit()
        assert admin.committed_offsets(GROUP)[tp] == 4

        def visible():      # (the markers are written after EndTxn is answered)
            return [v for _o, _k, v, _h, _t in read_topic(b.bootstrap, "orders", "read_committed")[tp[1]]]
        wait_for(lambda: len(visible()) >= 4, 20, "the other stream's copies visible", visible)
        assert visible() == [b"a0", b"a1", b"s2", b"s3"]
    finally:
        for d, cs in ((zombie, zc), (other, oc)):
            d.close()
            d.member.leave()
            for c in cs:
                c.close()
        admin.close()
