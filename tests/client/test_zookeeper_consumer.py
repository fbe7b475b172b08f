"""The seeds' ZooKeeper consumer: ConsumerConnectors grouped through a real ZooKeeper, reading a
real broker registered in it (issue 8 item 5)."""
import threading

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from fastkafka.cli import consume
from fastkafka.cli.zookeeper_consumer import ZkMembership, create_consumer
from fastkafka.client import Producer, ProducerData
from fastkafka.client.consumer_connector import ConsumerTimeout
from fastkafka.client.consumer_connector import create_consumer as broker_group_consumer
from fastkafka.cluster import znodes
from fastkafka.config import ConfigException

from support.harness import Cluster, wait_for
from support.zk import Ensemble, require_java


pytestmark = [pytest.mark.zk, pytest.mark.clients, pytest.mark.timeout(180)]
TOPIC, PARTS = "zkstreams", 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    require_java()
    with Ensemble(tmp_path_factory.mktemp("zk"), size=1) as zk, \
            Cluster(tmp_path_factory.mktemp("brokers"), f"{zk.connect}/zkconsumer", 1,
                    **{"offsets.topic.replication.factor": 1}) as c:   # one broker: one replica
        admin = AdminClient({"bootstrap.servers": c.bootstrap})   # kept alive until answered
        for f in admin.create_topics([NewTopic(TOPIC, PARTS, 1)], operation_timeout=15).values():
            f.result()
        yield c


def _produce(bootstrap, values):
    with Producer({"bootstrap.servers": bootstrap}) as p:   # sync: round-robin by hand
        for i, v in enumerate(values):
            p.send(ProducerData(TOPIC, None, v, partition=i % PARTS))


class Reader:
    """A connector with one stream, read by a thread into ``got``."""

    def __init__(self, cluster, group):
        self.connector = create_consumer({
            "zookeeper.connect": cluster.connect, "bootstrap.servers": cluster.bootstrap,
            "group.id": group, "auto.offset.reset": "smallest", "consumer.timeout.ms": 200,
            "zookeeper.session.timeout.ms": 4000, "rebalance.backoff.ms": 200,
            "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        self.got = []
        self.stop = threading.Event()
        [self.stream] = self.connector.create_message_streams({TOPIC: 1})[TOPIC]
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while not self.stop.is_set():
            try:
                for m in self.stream:
                    self.got.append((m.partition, m.offset, m.message))
                    self.connector.commit_offsets()
            except ConsumerTimeout:
                continue
            return   # StopIteration: shut down

    def owned(self):
        return sorted(p for _, p in self.connector.owned)

    def close(self):
        self.connector.shutdown()
        self.stop.set()
        self.thread.join(10)


def test_zookeeper_connectors_share_rebalance_and_commit_to_znodes(cluster):
    group = "zkg"
    readers = [Reader(cluster, group) for _ in range(3)]
    try:
        # registration and the seeds' ranges: 3 consumers x 1 stream on 6 partitions
        wait_for(lambda: sorted(sum((r.owned() for r in readers), [])) == list(range(PARTS))
                 and all(len(r.owned()) == 2 for r in readers), 30, what="2 partitions each")
        ids = cluster.zk.get_children(znodes.consumer_ids_path(group))
        assert sorted(ids) == sorted(r.connector.member.member_id for r in readers)
        for r in readers:
            for p in r.owned():
                owner = cluster.zk.get(znodes.owner_path(group, TOPIC, p))[0].decode()
                assert owner == f"{r.connector.member.member_id}-0"

        first = [b"first-%d" % i for i in range(600)]
        _produce(cluster.bootstrap, first)
        wait_for(lambda: sum(len(r.got) for r in readers) >= 600, 30, what="600 records")
        got = [g for r in readers for g in r.got]
        assert sorted(v for *_, v in got) == sorted(first)          # every record exactly once
        for r in readers:                                           # from the partitions it owns
            assert {p for p, *_ in r.got} == set(r.owned())

        # committed offsets are the znodes' text: next offset to read, 100 per partition
        wait_for(lambda: all(cluster.zk.exists(znodes.offset_path(group, TOPIC, p))
                             for p in range(PARTS)), 10, what="offset znodes")
        assert {p: int(cluster.zk.get(znodes.offset_path(group, TOPIC, p))[0])
                for p in range(PARTS)} == {p: 100 for p in range(PARTS)}
        assert readers[0].connector.member.committed([(TOPIC, 0), (TOPIC, 5)]) == {
            (TOPIC, 0): 100, (TOPIC, 5): 100}

        # one connector shuts down: its partitions go to the other two, which carry on from
        # the committed offsets (nothing read twice, nothing skipped)
        leaving = readers.pop(1)
        gone = leaving.owned()
        leaving.close()
        assert not cluster.zk.exists(znodes.consumer_id_path(group, leaving.connector.member.member_id))
        wait_for(lambda: sorted(sum((r.owned() for r in readers), [])) == list(range(PARTS))
                 and all(len(r.owned()) == 3 for r in readers), 30, what="3 partitions each")
        assert [r.owned() for r in readers] in ([[0, 1, 2], [3, 4, 5]], [[3, 4, 5], [0, 1, 2]])
        before = [len(r.got) for r in readers]
        second = [b"second-%d" % i for i in range(600)]
        _produce(cluster.bootstrap, second)
        wait_for(lambda: sum(len(r.got) for r in readers) - sum(before) >= 600, 30,
                 what="600 more records")
        new = [g for r, n in zip(readers, before) for g in r.got[n:]]
        assert sorted(v for *_, v in new) == sorted(second)
        assert {p for p, *_ in new} >= set(gone)
        assert all(o >= 100 for _, o, _ in new)                    # resumed, not restarted
    finally:
        for r in readers:
            r.close()
    assert cluster.zk.get_children(znodes.consumer_ids_path(group)) == []


def test_factories_pick_the_group_kind(cluster):
    zk_conf = {"zookeeper.connect": cluster.connect, "bootstrap.servers": cluster.bootstrap,
               "group.id": "kinds"}
    c = create_consumer(zk_conf)
    try:
        assert isinstance(c.member, ZkMembership) and c.member.group is None   # no session yet
    finally:
        c.shutdown()
    with pytest.raises(ConfigException, match="zookeeper.connect"):
        broker_group_consumer(zk_conf)
    c = create_consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "kinds"})
    try:
        assert not isinstance(c.member, ZkMembership)
    finally:
        c.shutdown()


def test_console_consumer_with_zookeeper_group(cluster, capsys):
    """``fastkafka consume --group g --zookeeper ...`` reads as a ZooKeeper-group member and
    leaves its offsets in the group's znodes; a second run resumes there."""
    _produce(cluster.bootstrap, [b"cli-%d" % i for i in range(12)])
    args = ["-b", cluster.bootstrap, TOPIC, "--group", "cli-zk", "--zookeeper", cluster.connect,
            "--timeout-ms", "1500"]
    assert consume.main(args + ["--from-beginning"]) == 0
    values = capsys.readouterr().out.split()
    assert {"cli-%d" % i for i in range(12)} <= set(values) and len(set(values)) == len(values)
    offsets = {p: int(cluster.zk.get(znodes.offset_path("cli-zk", TOPIC, p))[0]) for p in range(PARTS)}
    assert sum(offsets.values()) == len(values)        # everything read, committed per partition
    _produce(cluster.bootstrap, [b"late-%d" % i for i in range(6)])
    assert consume.main(args) == 0
    assert sorted(capsys.readouterr().out.split()) == sorted("late-%d" % i for i in range(6))
    assert consume.main(["-b", cluster.bootstrap, TOPIC, "--zookeeper", cluster.connect]) == 1
    assert "--zookeeper needs --group" in capsys.readouterr().err
