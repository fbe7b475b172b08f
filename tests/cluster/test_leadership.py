"""Leadership moves an operator makes or allows: controlled shutdown, preferred and unclean
elections (ElectLeaders and auto.leader.rebalance.enable), rack-aware assignment. Real
ZooKeeper, three real broker processes, confluent-kafka's producer and AdminClient."""
import os
import signal
import threading
import time

import pytest
from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from fastkafka.protocol import ApiKey

from support.harness import LONG_SESSION_MS, Cluster, create_replicated, wait_for
from test_cluster import raw_call
from test_replication import read_all

pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(300)]

ELECTION_NOT_NEEDED = 84
NOT_CONTROLLER = 41


def leaders(cluster, topic, partitions):
    return {p: (s.leader if (s := cluster.state(topic, p)) else None) for p in range(partitions)}


class Streaming:
    """An idempotent acks=all confluent-kafka producer writing ``topic``'s partitions in turn on
    its own thread until stopped; ``acked`` values and delivery errors (``failed``) pile up."""

    def __init__(self, cluster, topic: str, partitions: int):
        self.acked, self.failed = [], []
        self.stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                                   "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000})
        self._thread = threading.Thread(target=self._run, args=(topic, partitions))

    def _delivered(self, err, msg):
        (self.failed if err else self.acked).append(err or msg.value())

    def _run(self, topic, partitions):
        n = 0
        while not self.stop.is_set():
            self._producer.produce(topic, str(n).encode(), partition=n % partitions, on_delivery=self._delivered)
            self._producer.poll(0)
            n += 1
            time.sleep(0.0005)  # pace the load
        self._producer.flush(60)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self._thread.join(90)

    def more(self, n: int, what: str) -> None:
        have = len(self.acked)
        wait_for(lambda: len(self.acked) > have + n, 30, what=what)


def elect(admin, kind, topic, partitions):
    """{partition: None or the KafkaError code} of an ElectLeaders call through confluent-kafka."""
    result = admin.elect_leaders(kind, [TopicPartition(topic, p) for p in partitions]).result(30)
    return {tp.partition: None if e is None else e.code() for tp, e in result.items()}


def test_controlled_shutdown_moves_leadership_before_the_broker_stops(cluster):
    """SIGTERM of a broker that leads partitions while an idempotent acks=all producer streams:
    every leadership moves to another in-sync replica while the broker is still registered (no
    partition ever goes offline), the producer sees no error, and nothing acknowledged is lost."""
    create_replicated(cluster, "calm", 4, min_insync_replicas=2)
    victim = leaders(cluster, "calm", 4)[0]
    seen = []
    stop = threading.Event()

    def watch():      # every state the znodes go through, while the victim is still registered
        while not stop.is_set():
            registered = victim in cluster.registered()
            seen.extend((registered, p, s) for p in range(4) if (s := cluster.state("calm", p)))
            time.sleep(0.02)  # sampling interval

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with Streaming(cluster, "calm", 4) as load:
            load.more(200, "records acknowledged before the shutdown")
            cluster.brokers[victim].signal(signal.SIGTERM)
            assert cluster.brokers[victim].wait_exit(60) == 0
            load.more(200, "records acknowledged after the shutdown")
    finally:
        stop.set()
        watcher.join(30)
    acked, failed = load.acked, load.failed

    assert not failed, failed[:5]
    out = cluster.brokers[victim].output()
    assert "controlled shutdown succeeded" in out, out[-3000:]
    assert all(s.leader != -1 for _, _, s in seen), "a partition went offline during a controlled shutdown"
    moved = {p for registered, p, s in seen if registered and s.leader != victim}
    assert moved == set(range(4)), f"leadership not moved while broker {victim} was registered: {moved}"
    assert all(victim not in s.isr for registered, _, s in seen[-8:])
    got = read_all(cluster, "calm", 4)
    values = [v for p in range(4) for _, v in got[p]]
    assert sorted(values) == sorted(acked) and len(set(values)) == len(values)


def restart_preferred_leader(cluster, topic: str, partitions: int):
    """Restart the broker preferred for partition 0 of ``topic``: it comes back a follower.
    ``(preferred leader by partition, the partitions now led by another)``, once every ISR is full."""
    preferred = {p: r[0] for p, r in cluster.assignment(topic).items()}
    moved = preferred[0]
    cluster.brokers[moved].stop()
    wait_for(lambda: leaders(cluster, topic, partitions)[0] not in (moved, -1), what="leadership moved away")
    cluster.brokers[moved].start()
    wait_for(lambda: all(len(cluster.state(topic, p).isr) == 3 for p in range(partitions)), 60, what="full ISRs")
    away = [p for p, leader in leaders(cluster, topic, partitions).items() if leader != preferred[p]]
    assert 0 in away
    return preferred, away


def test_preferred_election_on_request_and_errors(cluster):
    create_replicated(cluster, "pref", 3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    assert elect(admin, ElectionType.PREFERRED, "pref", [0, 1, 2]) == dict.fromkeys(range(3), ELECTION_NOT_NEEDED)
    preferred, away = restart_preferred_leader(cluster, "pref", 3)
    res = elect(admin, ElectionType.PREFERRED, "pref", [0, 1, 2])
    assert all(res[p] is None for p in away) and all(res[p] == ELECTION_NOT_NEEDED for p in res if p not in away)
    assert leaders(cluster, "pref", 3) == preferred

    # unknown partitions, and a broker that is not the controller
    res = elect(admin, ElectionType.PREFERRED, "pref", [7])
    assert res == {7: 3}     # UNKNOWN_TOPIC_OR_PARTITION
    other = next(b for b in cluster.brokers.values() if b.broker_id != cluster.controller())
    body = {"election_type": 0, "topic_partitions": [{"topic": "pref", "partitions": [0]}], "timeout_ms": 5000}
    r = raw_call(other.port, ApiKey.ELECT_LEADERS, 1, body)
    assert r.replica_election_results[0].partition_result[0].error_code == NOT_CONTROLLER


def test_auto_leader_rebalance_moves_leadership_back(ensemble, tmp_path):
    with Cluster(tmp_path, f"{ensemble.connect}/auto_rebalance", 3,
                 **{"leader.imbalance.check.interval.seconds": 1}) as cluster:
        create_replicated(cluster, "auto", 3)
        preferred = {p: r[0] for p, r in cluster.assignment("auto").items()}
        victim = preferred[1]
        cluster.brokers[victim].stop()
        wait_for(lambda: all(s != victim for s in leaders(cluster, "auto", 3).values()), what="leaders moved")
        cluster.brokers[victim].start()
        wait_for(lambda: leaders(cluster, "auto", 3) == preferred, 60, what="preferred leaders restored")


@pytest.mark.crash
def test_unclean_election_only_where_enabled(ensemble, tmp_path):
    """Leader 1 dies while its only follower 2 is out of the ISR: the partition of a topic with
    unclean.leader.election.enable=true gets 2 as leader, the other stays offline until an
    unclean ElectLeaders request."""
    with Cluster(tmp_path, f"{ensemble.connect}/unclean", 3, **{
            "replica.lag.time.max.ms": 1000, "zookeeper.session.timeout.ms": LONG_SESSION_MS,
            "auto.leader.rebalance.enable": "false"}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        # (confluent-kafka's NewTopic refuses a replica assignment: a raw CreateTopics)
        body = {"timeout_ms": 15000, "topics": [
            {"name": t, "num_partitions": -1, "replication_factor": -1,
             "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
             "configs": [{"name": "unclean.leader.election.enable", "value": v}]}
            for t, v in (("clean", "false"), ("dirty", "true"))]}
        r = raw_call(cluster.brokers[cluster.controller()].port, ApiKey.CREATE_TOPICS, 4, body)
        assert [t.error_code for t in r.topics] == [0, 0]
        for t in ("clean", "dirty"):
            wait_for(lambda t=t: (s := cluster.state(t, 0)) and s.isr == (1, 2), what=f"{t}: 2 in sync")
        cluster.brokers[2].signal(signal.SIGSTOP)
        try:
            for t in ("clean", "dirty"):
                wait_for(lambda t=t: cluster.state(t, 0).isr == (1,), what=f"{t}: ISR shrunk to the leader")
            cluster.brokers[1].kill()
        finally:
            cluster.brokers[2].signal(signal.SIGCONT)
        wait_for(lambda: cluster.state("dirty", 0).leader == 2, 30, what="unclean election of 2")
        assert cluster.state("dirty", 0).isr == (2,)
        # the controller (a new one if broker 1 was it) reaches the other topic in its own time
        wait_for(lambda: cluster.state("clean", 0).leader == -1, 30, what="clean: offline")
        time.sleep(2)  # absence: an election would have happened by now
        assert cluster.state("clean", 0).leader == -1, "a clean topic elected outside its ISR"
        # a new client: librdkafka keeps waiting for a controller it knew (broker 1 may have been it)
        admin = AdminClient({"bootstrap.servers": cluster.brokers[2].bootstrap})
        res = elect(admin, ElectionType.UNCLEAN, "clean", [0])
        assert res == {0: None}
        assert cluster.state("clean", 0).leader == 2
        assert elect(admin, ElectionType.UNCLEAN, "clean", [0]) == {0: ELECTION_NOT_NEEDED}


def test_rack_aware_assignment(ensemble, tmp_path):
    """Brokers 1 and 2 in rack a, 3 in rack b: every partition of an RF=2 topic has one replica
    in each rack."""
    cluster = Cluster(tmp_path, f"{ensemble.connect}/racks", 3)
    for i, rack in ((1, "a"), (2, "a"), (3, "b")):
        cluster.brokers[i].props["broker.rack"] = rack
    with cluster:
        create_replicated(cluster, "spread", 6, rf=2)
        assignment = cluster.assignment("spread")
        rack = {1: "a", 2: "a", 3: "b"}
        assert all({rack[b] for b in replicas} == {"a", "b"} for replicas in assignment.values()), assignment


def test_reassignment_under_load_moves_a_partition_without_loss(ensemble, tmp_path):
    """kafka-python's AdminClient moves partition 0 of an RF=2 topic to other brokers while an
    idempotent acks=all producer streams: the new replica catches up, the assignment becomes the
    target, the removed broker deletes its copy, and no acknowledged record is lost. A
    reassignment towards a stopped broker is listed while under way and can be cancelled."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTP

    with Cluster(tmp_path, f"{ensemble.connect}/reassign", 3,
                 **{"zookeeper.session.timeout.ms": LONG_SESSION_MS}) as cluster:
        create_replicated(cluster, "moving", 2, rf=2)
        original = cluster.assignment("moving")[0]
        target = tuple(b for b in (1, 2, 3) if b != original[0])        # moves the preferred leader away
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        with Streaming(cluster, "moving", 2) as load:
            load.more(500, "records before the move")
            assert admin.alter_partition_reassignments({KTP("moving", 0): list(target)}) == {KTP("moving", 0): None}
            wait_for(lambda: cluster.assignment("moving")[0] == target, 60, what="the reassignment completed")
            load.more(500, "records after the move")
        acked, failed = load.acked, load.failed
        assert not failed, failed[:5]
        assert admin.list_partition_reassignments() == {}
        st = cluster.state("moving", 0)
        assert st.leader in target and set(st.isr) <= set(target)
        removed = cluster.brokers[original[0]]
        wait_for(lambda: not os.path.exists(os.path.join(removed.log_dir, "moving-0")), what="the old copy deleted")
        got = read_all(cluster, "moving", 2)
        values = [v for p in range(2) for _, v in got[p]]
        assert sorted(values) == sorted(acked) and len(set(values)) == len(values)

        # a move towards a stopped broker waits, is listed, and is cancelled
        spare = next(b for b in (1, 2, 3) if b not in cluster.assignment("moving")[1])
        replicas1 = cluster.assignment("moving")[1]
        if cluster.controller() == spare:      # a stopped controller answers nothing: move it first
            cluster.brokers[spare].stop()
            cluster.brokers[spare].start()
            cluster.wait_registered({1, 2, 3})
            wait_for(lambda: cluster.controller() not in (spare, -1), what="another controller")
            admin.close()
            admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        # the admin learns the controller now: looking for it later may pick the stopped broker
        assert admin.list_partition_reassignments() == {}
        cluster.brokers[spare].signal(signal.SIGSTOP)
        try:
            admin.alter_partition_reassignments({KTP("moving", 1): list(replicas1) + [spare]})
            ongoing = admin.list_partition_reassignments()
            assert ongoing[KTP("moving", 1)]["adding_replicas"] == [spare], ongoing
            assert admin.alter_partition_reassignments({KTP("moving", 1): None}) == {KTP("moving", 1): None}
            assert admin.list_partition_reassignments() == {}
            assert cluster.assignment("moving")[1] == replicas1
        finally:
            cluster.brokers[spare].signal(signal.SIGCONT)
        res = admin.alter_partition_reassignments({KTP("moving", 1): None})
        assert res[KTP("moving", 1)].errno == 85          # NO_REASSIGNMENT_IN_PROGRESS
        admin.close()
