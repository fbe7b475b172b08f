"""KIP-848 consumer groups on three real brokers and real ZooKeeper, ``__consumer_offsets``
replicated three ways: two confluent-kafka consumers (``group.protocol=consumer``) share a
topic, the broker coordinating their group is killed (SIGKILL), the group moves with its offsets
partition's leadership, and the members go on with the new coordinator (which replayed the group:
same member ids and epochs); across the move no record is lost or read twice."""
import signal
import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from fastkafka.protocol import ApiKey

from support.harness import Cluster, create_replicated, raw_call, wait_for
from test_cluster import find_coordinator
from test_offsets_replication import coordinator_of, produce_all


pytestmark = [pytest.mark.crash, pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(300)]

TOPIC, PARTITIONS, PER_PARTITION = "work", 3, 100     # as test_offsets_replication's produce_all


class Member:
    """A consumer-protocol member that commits what it read of partitions it gives up, and notes
    every change of assignment."""

    def __init__(self, bootstrap: str, group: str):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                           "enable.auto.commit": False, "auto.offset.reset": "earliest",
                           "fetch.wait.max.ms": 100})
        self.seen: list[tuple[int, int]] = []
        self.positions: dict[int, int] = {}
        self.owned: set[int] = set()
        self.events: list[tuple[str, list[int]]] = []
        self.c.subscribe([TOPIC], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost)

    def _assigned(self, consumer, tps):
        self.events.append(("assign", sorted(t.partition for t in tps)))
        self.owned |= {t.partition for t in tps}

    def _revoked(self, consumer, tps):
        self.events.append(("revoke", sorted(t.partition for t in tps)))
        done = [TopicPartition(TOPIC, t.partition, self.positions[t.partition]) for t in tps
                if t.partition in self.positions]
        if done:
            consumer.commit(offsets=done, asynchronous=False)
        self.owned -= {t.partition for t in tps}

    def _lost(self, consumer, tps):
        self.events.append(("lost", sorted(t.partition for t in tps)))
        self.owned -= {t.partition for t in tps}

    def poll(self):
        m = self.c.poll(0.05)
        if m is not None and not m.error():
            assert m.partition() in self.owned, (m.partition(), self.events)
            self.seen.append((m.partition(), m.offset()))
            self.positions[m.partition()] = m.offset() + 1

    def commit(self, timeout: float = 60.0) -> None:
        """Commit what was read, again while the coordinator moves."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.c.commit(asynchronous=False)
                return
            except KafkaException as e:
                if e.args[0].code() == -166 or time.monotonic() > deadline:    # _NO_OFFSET: nothing read
                    if e.args[0].code() == -166:
                        return
                    raise
                time.sleep(0.2)  # retry backoff


def poll_until(members, done, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, [(sorted(m.owned), len(m.seen), m.events) for m in members]
        for m in members:
            m.poll()


def describe(port: int, group: str):
    r = raw_call(port, ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [group],
                                                           "include_authorized_operations": False})
    return r.groups[0]


def test_members_go_on_when_their_coordinator_dies(ensemble, tmp_path, request):
    props = {"group.consumer.heartbeat.interval.ms": 300}
    with Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3, **props) as cluster:
        group = "kip848-moves"
        create_replicated(cluster, TOPIC, PARTITIONS)
        produce_all(cluster.bootstrap)
        a, b = Member(cluster.bootstrap, group), Member(cluster.bootstrap, group)
        members = [a, b]
        # both in, the partitions split, about half of the records read and committed
        poll_until(members, lambda: a.owned and b.owned and len(a.owned) + len(b.owned) == PARTITIONS
                   and len(a.seen) + len(b.seen) >= 100)
        for m in members:
            m.commit()
        victim = coordinator_of(cluster, group)
        assert victim in cluster.brokers and find_coordinator(cluster.brokers[victim].port, group) == victim
        before = describe(cluster.brokers[victim].port, group)
        assert before.error_code == 0 and before.group_state == "Stable" and len(before.members) == 2
        epochs = {m.member_id: m.member_epoch for m in before.members}
        poll_until(members, lambda: len(a.seen) + len(b.seen) >= 150)      # read on, not committed
        assignments = [list(m.events) for m in members]

        cluster.brokers[victim].signal(signal.SIGKILL)
        cluster.brokers[victim].wait_exit(30)
        new = wait_for(lambda: (c := coordinator_of(cluster, group)) not in (victim, -1) and c, 60,
                       what="the offsets partition's new leader")
        # the members go on through the new coordinator: everything read, then committed there
        poll_until(members, lambda: len(a.seen) + len(b.seen) >= PARTITIONS * PER_PARTITION)
        for m in members:
            m.commit()
        after = wait_for(lambda: (d := describe(cluster.brokers[new].port, group)).error_code == 0 and d, 30,
                         what="the new coordinator describing the group")
        # the group was replayed from the replicated log: the same members at the same epochs
        assert {m.member_id: m.member_epoch for m in after.members} == epochs, (after, a.events, b.events)
        assert after.group_epoch == before.group_epoch
        # every record read once, by one member: nothing lost, nothing read twice
        everything = sorted(a.seen + b.seen)
        assert everything == [(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)]
        # and no rebalance: a member that had to rejoin would have lost its partitions (and got
        # them again), and read on from the commits, a second time
        assert [m.events for m in members] == assignments
        committed = a.c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)
        assert {tp.partition: tp.offset for tp in committed} == {p: PER_PARTITION for p in range(PARTITIONS)}
        for m in members:
            m.c.close()
        gone = wait_for(lambda: not (d := describe(cluster.brokers[new].port, group)).members and d, 30,
                        what="both members gone")
        assert gone.group_state == "Empty"
        print(f"coordinator {victim} -> {new}; group epoch {after.group_epoch}, member epochs {epochs}")

