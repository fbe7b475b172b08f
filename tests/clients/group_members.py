"""Consumer group members for the client tests of KIP-848 (test_consumer_group_protocol.py) and
of the migration between the protocols (test_group_migration_clients.py): confluent-kafka
consumers that commit what they read when partitions are revoked and check, on every assignment,
that no other member of the test still owns the partition."""
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 4


def create_topic(broker, name):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})    # alive until the future resolves
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(10)


def produce(broker, topic, values, partitions=PARTITIONS):
    """``values`` spread round-robin over the topic's ``partitions``."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % partitions)
    assert p.flush(10) == 0


def values(prefix, n):
    return [f"{prefix}-{i}".encode() for i in range(n)]


class Member:
    """A consumer (``protocol`` consumer, with the server-side ``assignor``, or classic, eager
    ``range`` with 300 ms heartbeats) recording the partitions it owns in ``owners``, shared by
    the members of a test: a partition assigned while another member owns it fails the test."""

    def __init__(self, broker, group, topic, owners, protocol="consumer", assignor="uniform"):
        conf = {"bootstrap.servers": broker.bootstrap, "group.id": group, "group.protocol": protocol,
                "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.wait.max.ms": 100}
        if protocol == "consumer":
            conf["group.remote.assignor"] = assignor
        else:
            conf.update({"partition.assignment.strategy": "range", "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 300})
        self.protocol = protocol
        self.c = Consumer(conf)
        self.owned: set[int] = set()
        self.owners = owners
        self.seen: list[bytes] = []
        self.positions: dict[int, int] = {}
        self.c.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._revoked)

    def _assigned(self, consumer, partitions):
        for tp in partitions:
            holder = self.owners.get(tp.partition)
            assert holder is None or holder is self, f"partition {tp.partition} assigned while {holder} owns it"
            self.owners[tp.partition] = self
            self.owned.add(tp.partition)

    def _revoked(self, consumer, partitions):
        done = [TopicPartition(tp.topic, tp.partition, self.positions[tp.partition])
                for tp in partitions if tp.partition in self.positions]
        if done:
            consumer.commit(offsets=done, asynchronous=False)
        for tp in partitions:
            self.owned.discard(tp.partition)
            if self.owners.get(tp.partition) is self:
                del self.owners[tp.partition]

    def poll(self, timeout=0.05):
        m = self.c.poll(timeout)
        if m is not None:
            assert m.error() is None, m.error()
            assert m.partition() in self.owned, f"a record of partition {m.partition()} it does not own"
            self.seen.append(m.value())
            self.positions[m.partition()] = m.offset() + 1

    def __repr__(self):
        return f"Member({self.protocol}, owns {sorted(self.owned)}, read {len(self.seen)})"


def poll_until(members, done, timeout=60):
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, members
        for m in members:
            m.poll()


def owned_once(members):
    """Every partition owned, by exactly one member."""
    owned = [p for m in members for p in m.owned]
    return sorted(owned) == list(range(PARTITIONS))
