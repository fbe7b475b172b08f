"""Consumer offset translation between two real clusters (issue 20 item 3): a consumer group halfway
through a topic on the source moves to the target with ``fastkafka mirror translate-offsets
--execute`` and a real client (confluent-kafka) in that group reads the remainder there -- no record
skipped, and exactly the duplicates MirrorMaker 2's rule allows.

The offsets differ on purpose: the source's partition 0 starts at 12 (records deleted), the
target topic held records of its own before the mirror started, and the source has a committed
and an aborted transaction (markers and aborted records take source offsets, not target ones).
The expected translation is worked out here from the offset syncs the mirror wrote, decoded and
applied with MM2's rule independently of the mirror's code."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import time

import pytest

from support.brokers import ROOT
from mirror_support import read_to_end, read_topic, wait_for

import confluent_kafka
from confluent_kafka.admin import AdminClient  # noqa: E402
pytestmark = [pytest.mark.clients, pytest.mark.timeout(180)]

SYNCS, CHECKPOINTS = "mm2-offset-syncs.dc1.internal", "dc1.checkpoints.internal"
MIRROR_ARGS = ["--whitelist", "orders", "--source-alias", "dc1", "--prefix-topics",
               "--emit-checkpoints-interval", "0.5", "--commit-interval-ms", "300"]


def produce(bootstrap, topic, counts: dict[int, int], tag: str) -> None:
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for part, n in counts.items():
        for i in range(n):
            p.produce(topic, key=b"k%d" % i, value=f"{tag}-{part}-{i}".encode(), partition=part)
    assert p.flush(30) == 0


def transactions(bootstrap, topic) -> None:
    """A committed transaction, then an aborted one, on both partitions."""
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": "shop", "linger.ms": 5})
    p.init_transactions(20)
    for tag, commit in (("txn", True), ("aborted", False)):
        p.begin_transaction()
        for part in (0, 1):
            for i in range(5):
                p.produce(topic, value=f"{tag}-{part}-{i}".encode(), partition=part)
        assert p.flush(20) == 0
        (p.commit_transaction if commit else p.abort_transaction)(20)


def offset_syncs(bootstrap) -> list[tuple[str, int, int, int]]:
    """The offset-syncs topic decoded with MM2's layout: ``[(topic, partition, upstream, downstream)]``."""
    out = []
    for _offset, key, value, _headers, _ts in read_topic(bootstrap, SYNCS, "read_uncommitted")[0]:
        n = struct.unpack_from(">h", key)[0]
        out.append((key[2:2 + n].decode(), struct.unpack_from(">i", key, 2 + n)[0], *struct.unpack(">qq", value)))
    return out


def mm2_translate(syncs, tp, committed) -> tuple[int, int]:
    """``(upstream of the sync used, translated offset)``: the latest sync at or below
    ``committed`` since the partition's last upstream rewind; its downstream offset, plus one
    unless the offsets are equal (OffsetSyncStore.translateDownstream)."""
    kept: list[tuple[int, int]] = []
    for t, p, u, d in syncs:
        if (t, p) == tp:
            kept = [(u, d)] if kept and u < kept[-1][0] else kept + [(u, d)]
    u, d = [s for s in kept if s[0] <= committed][-1]
    return u, d + (committed != u)


def translate_cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "fastkafka", "mirror", "translate-offsets", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def table(stdout: str) -> dict[tuple[str, int], tuple[int, int]]:
    lines = stdout.strip().splitlines()
    assert lines[0].split("\t") == ["GROUP", "TOPIC", "PARTITION", "SOURCE-OFFSET", "NEW-OFFSET"]
    rows = [line.split("\t") for line in lines[1:]]
    return {(t, int(p)): (int(src), int(new)) for _g, t, p, src, new in rows}


def commit_on_source(bootstrap, group, offsets: dict[int, int]) -> None:
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[confluent_kafka.TopicPartition("orders", p, off) for p, off in offsets.items()],
                 asynchronous=False)
    finally:
        c.close()


def consume_rest(bootstrap, group, topic, partitions=(0, 1), timeout=30) -> dict[int, list[bytes]]:
    """What a consumer of ``group`` on the target reads from its committed offsets to the end."""
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "auto.offset.reset": "latest", "isolation.level": "read_committed",
                                  "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    try:
        c.subscribe([topic])
        return read_to_end(c, partitions, timeout, lambda m: m.value())
    finally:
        c.close()


@pytest.mark.parametrize("mode", ["at-least-once", "exactly-once"])
def test_a_group_moves_to_the_target_and_reads_the_rest_exactly(clusters, mirror, mode):
    a, b = clusters
    a.topics.create("orders", 2)
    b.topics.create("dc1.orders", 2)
    produce(b.bootstrap, "dc1.orders", {0: 7, 1: 3}, "target's own")
    produce(a.bootstrap, "orders", {0: 40, 1: 40}, "r1")
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    for f in admin.delete_records([confluent_kafka.TopicPartition("orders", 0, 12)]).values():
        f.result(20)
    m = mirror(a, b, *MIRROR_ARGS, *(["--exactly-once"] if mode == "exactly-once" else []), name=mode)

    def synced_to(ends):
        syncs = offset_syncs(b.bootstrap)
        return all(any((t, p, u) == ("orders", part, end - 1) for t, p, u, _d in syncs) for part, end in ends.items())
    # round 1 copied, the sync of its last records written (the last of a copy waits for a commit)
    wait_for(lambda: b.topics.get(SYNCS) is not None and synced_to({0: 40, 1: 40}), 30,
             "round 1 mirrored and synced", m.output)

    # round 2 while the mirror runs: transactions (markers, aborted records), then plain records
    transactions(a.bootstrap, "orders")
    produce(a.bootstrap, "orders", {0: 30, 1: 30}, "r2")
    source = read_topic(a.bootstrap, "orders")
    assert source[0][0][0] == 12 and [r[2] for r in source[1]][40:45] == [b"txn-1-%d" % i for i in range(5)]
    ends = {p: rows[-1][0] + 1 for p, rows in source.items()}
    wait_for(lambda: synced_to(ends), 30, "round 2 mirrored and synced", m.output)
    target = read_topic(b.bootstrap, "dc1.orders")
    assert {p: [r[2] for r in rows] for p, rows in target.items()} == {
        p: [b"target's own-%d-%d" % (p, i) for i in range((7, 3)[p])] + [r[2] for r in source[p]] for p in (0, 1)}

    # billing has read all of round 1 on partition 0 and half of round 2's plain records on 1;
    # audit has read everything
    plain = [r[0] for r in source[1] if r[2].startswith(b"r2-")]
    billing = {0: 40, 1: plain[12]}
    commit_on_source(a.bootstrap, "billing", billing)
    commit_on_source(a.bootstrap, "audit", ends)
    syncs = offset_syncs(b.bootstrap)
    expected = {p: mm2_translate(syncs, ("orders", p), billing[p]) for p in (0, 1)}

    def checkpointed():
        out = translate_cli("--target", b.bootstrap, "--source-alias", "dc1", "--group", "billing")
        return out.returncode == 0 and table(out.stdout) == {
            ("dc1.orders", p): (billing[p], expected[p][1]) for p in (0, 1)}
    wait_for(checkpointed, 30, "billing's checkpoints", m.output)
    assert m.stop() == 0, m.output()

    # an active member of billing on the target: --execute is refused
    c = confluent_kafka.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "billing",
                                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    c.subscribe(["dc1.orders"])
    wait_for(lambda: c.poll(0.2) is not None or bool(c.assignment()), 30, "a member on the target")
    refused = translate_cli("--target", b.bootstrap, "--source-alias", "dc1", "--group", "billing", "--execute")
    c.close()
    assert refused.returncode == 1 and "active members" in refused.stderr, refused.stderr

    # from the checkpoints alone (as when the source is gone): printed, then committed on the target
    moved = translate_cli("--target", b.bootstrap, "--source-alias", "dc1", "--group", "billing", "--execute")
    assert moved.returncode == 0, moved.stderr
    assert table(moved.stdout) == {("dc1.orders", p): (billing[p], expected[p][1]) for p in (0, 1)}
    got = consume_rest(b.bootstrap, "billing", "dc1.orders")
    for p in (0, 1):
        synced, new_offset = expected[p]
        assert got[p] == [r[2] for r in target[p] if r[0] >= new_offset], p       # where it started
        rest = [r[2] for r in source[p] if r[0] >= billing[p]]
        assert got[p][len(got[p]) - len(rest):] == rest, p                          # nothing skipped
        again = [r[2] for r in source[p] if synced < r[0] < billing[p]]
        assert got[p][:len(got[p]) - len(rest)] == again, p                         # MM2's duplicates
    # partition 0 was synced at the end of round 1 (39, or 40 after a fresh start): no duplicates
    assert expected[0][0] in (39, 40) and got[0] == [r[2] for r in source[0] if r[0] >= 40]
    assert len(got[1]) - len(rest) <= 30

    # caught up: translated now from the source's offsets, to the end of the target exactly
    now = translate_cli("--target", b.bootstrap, "--source", a.bootstrap, "--source-alias", "dc1",
                        "--prefix-topics", "--group", "audit", "--execute")
    assert now.returncode == 0, now.stderr
    assert table(now.stdout) == {("dc1.orders", p): (ends[p], target[p][-1][0] + 1) for p in (0, 1)}
    assert consume_rest(b.bootstrap, "audit", "dc1.orders") == {0: [], 1: []}


def test_translate_offsets_says_when_there_is_nothing(clusters):
    _a, b = clusters
    out = translate_cli("--target", b.bootstrap, "--source-alias", "dc1", "--group", "nobody")
    assert out.returncode == 1
    assert "nothing to translate for group 'nobody'" in out.stderr and CHECKPOINTS in out.stderr


def committed_on(bootstrap, group) -> dict[tuple[str, int], int]:
    from fastkafka.client import AdminClient as Admin
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        return admin.committed_offsets(group)


def test_sync_group_offsets_moves_idle_groups_forward_only(clusters, mirror):
    """--sync-group-offsets (MM2's sync.group.offsets.enabled): a group unknown to the target gets
    its translated offsets committed there; one that committed further on the target itself is not
    moved back; one with a member on the target is left alone; an offset below the target's log
    start (records deleted there) is raised to it."""
    a, b = clusters
    a.topics.create("orders", 2)
    b.topics.create("orders", 2)
    produce(b.bootstrap, "orders", {0: 10, 1: 10}, "target's own")
    produce(a.bootstrap, "orders", {0: 20, 1: 20}, "r1")
    from fastkafka.client import AdminClient as Admin
    with Admin({"bootstrap.servers": b.bootstrap}) as admin:
        admin.commit_offsets("ahead", {("orders", 0): 28})  # already read further on the target
    busy = confluent_kafka.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "busy",
                                     "enable.auto.commit": False, "session.timeout.ms": 6000})
    busy.subscribe(["orders"])
    wait_for(lambda: busy.poll(0.2) is not None or bool(busy.assignment()), 30, "a member of busy on the target")
    m = mirror(a, b, "--topics", "orders", "--source-alias", "dc1", "--emit-checkpoints-interval", "0.3",
               "--offset-lag-max", "0", "--sync-group-offsets", "--sync-group-offsets-interval", "0.3",
               "--commit-interval-ms", "200", name="sync")
    wait_for(lambda: read_topic(b.bootstrap, "orders", timeout=5) and all(
        rows and rows[-1][0] == 29 for rows in read_topic(b.bootstrap, "orders", timeout=5).values()), 30,
        "the records mirrored", m.output)
    target_admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in target_admin.delete_records([confluent_kafka.TopicPartition("orders", 1, 25)]).values():
        f.result(20)                 # the target's partition 1 now starts inside the mirrored records
    commit_on_source(a.bootstrap, "fresh", {0: 20, 1: 5})    # 5 -> 15 on the target: below its start
    commit_on_source(a.bootstrap, "ahead", {0: 4, 1: 20})
    commit_on_source(a.bootstrap, "busy", {0: 20, 1: 20})
    # the offset syncs of every record (offset.lag.max 0): source n is target 10 + n exactly
    wait_for(lambda: committed_on(b.bootstrap, "fresh") == {("orders", 0): 30, ("orders", 1): 25}, 30,
             "fresh's offsets synced to the target", m.output)
    wait_for(lambda: committed_on(b.bootstrap, "ahead").get(("orders", 1)) == 30, 30,
             "ahead's partition 1 synced", m.output)
    assert committed_on(b.bootstrap, "ahead")[("orders", 0)] == 28       # not moved back to 14
    busy.poll(0.5)
    assert committed_on(b.bootstrap, "busy") == {}, "a group with a member on the target was synced"
    busy.close()                # now idle: the next round syncs it
    wait_for(lambda: committed_on(b.bootstrap, "busy") == {("orders", 0): 30, ("orders", 1): 30}, 30,
             "busy's offsets synced once it left", m.output)
    assert m.stop() == 0, m.output()


def test_two_mirror_processes_write_each_checkpoint_once(clusters, mirror):
    """Two mirror processes in one group (scaled out) share the partitions; only the one owning
    partition 0 of the first topic emits checkpoints, so each translation is written once, and
    when that process stops the other takes over."""
    a, b = clusters
    a.topics.create("orders", 4)
    produce(a.bootstrap, "orders", {p: 10 for p in range(4)}, "r")
    args = ["--topics", "orders", "--source-alias", "dc1", "--emit-checkpoints-interval", "0.3",
            "--offset-lag-max", "0", "--commit-interval-ms", "200"]
    first = mirror(a, b, *args, name="first")
    second = mirror(a, b, *args, name="second")
    wait_for(lambda: sum(len(r) for r in read_topic(b.bootstrap, "orders", timeout=5).values()) == 40, 30,
             "the records mirrored", lambda: first.output() + second.output())
    commit_on_source(a.bootstrap, "billing", {p: 4 for p in range(4)})

    def upstreams() -> list[int]:
        """The source offsets of billing's checkpoints, in the order written (MM2's value layout)."""
        rows = read_topic(b.bootstrap, CHECKPOINTS, "read_uncommitted")[0]
        return [struct.unpack_from(">q", v, 2)[0] for _o, k, v, _h, _t in rows if b"billing" in k]
    wait_for(lambda: len(upstreams()) == 4, 30, "billing's checkpoints", lambda: first.output() + second.output())
    time.sleep(1.5)              # five more rounds of both processes: nothing new to write
    assert upstreams() == [4, 4, 4, 4]          # once per partition, not once per process
    # the emitter stops: the survivor owns every partition and emits the next translation
    assert first.stop() == 0, first.output()
    produce(a.bootstrap, "orders", {0: 10}, "r2")            # a new chunk: a new offset sync past billing's
    wait_for(lambda: len(read_topic(b.bootstrap, "orders", timeout=5)[0]) == 20, 30, "the new records mirrored",
             second.output)
    commit_on_source(a.bootstrap, "billing", {0: 20})
    wait_for(lambda: upstreams() == [4, 4, 4, 4, 20], 30, "a checkpoint from the process left",
             lambda: f"{upstreams()}\n{second.output()}")
    assert second.stop() == 0, second.output()
