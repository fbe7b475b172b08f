"""The replication metrics a Prometheus scrape shows, on two real brokers and a real ZooKeeper:
under-replicated partitions and ISR shrinks/expands on the leader as a follower stalls and comes
back, offline partitions on the active controller once a partition's only replica dies."""
import re
import signal
import urllib.request

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from support.brokers import free_port
from support.harness import Cluster, wait_for
from test_cluster import settle

import prometheus_client  # noqa: F401 (a declared dependency: missing, it fails here by name)
pytestmark = [pytest.mark.crash, pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(300)]

LONG_SESSION_MS = 4000     # the most the tests' ensemble allows (tickTime 200)


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\S+) (\S+)$", text, re.M)}


def test_isr_and_offline_partition_metrics(ensemble, tmp_path, request):
    cluster = Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 2,
                      **{"replica.lag.time.max.ms": 1000, "zookeeper.session.timeout.ms": LONG_SESSION_MS})
    metrics = {i: free_port() for i in cluster.brokers}
    for i, b in cluster.brokers.items():
        b.props["metrics.port"] = metrics[i]
    with cluster:
        controller = cluster.controller()
        other = next(i for i in cluster.brokers if i != controller)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        settle(admin.create_topics([NewTopic("watched", 1, 2), NewTopic("lonely", 1, replica_assignment=[[other]])],
                                   operation_timeout=15))
        wait_for(lambda: (s := cluster.state("watched", 0)) and len(s.isr) == 2, what="both replicas in sync")
        wait_for(lambda: (s := cluster.state("lonely", 0)) and s.leader == other, what="lonely has its leader")
        leader = cluster.state("watched", 0).leader
        follower = next(i for i in cluster.brokers if i != leader)
        port = metrics[leader]
        # what the leader appends the follower appends: BytesIn there, ReplicationBytesIn here
        p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(50):
            p.produce("watched", b"v" * 100, key=b"%d" % i)
        assert p.flush(30) == 0
        appended = 'kafka_server_brokertopicmetrics_bytesin_total{topic="watched"}'
        replicated = 'kafka_server_brokertopicmetrics_replicationbytesin_total{topic="watched"}'
        wait_for(lambda: scrape(metrics[follower]).get(replicated) == scrape(port)[appended] > 0, 10,
                 what="the follower's replication bytes in equal to the leader's bytes in")
        assert scrape(port).get(replicated, 0) == 0       # the leader fetched nothing
        before = scrape(port)
        assert before["kafka_server_replicamanager_underreplicatedpartitions"] == 0
        assert before["kafka_controller_kafkacontroller_offlinepartitionscount"] == 0

        cluster.brokers[follower].signal(signal.SIGSTOP)     # lags; its ZooKeeper session lives on
        try:
            wait_for(lambda: cluster.state("watched", 0).isr == (leader,), 5, what="the ISR shrinks")
            wait_for(lambda: scrape(port)["kafka_server_replicamanager_underreplicatedpartitions"] == 1, 5,
                     what="the leader reports the partition under-replicated")
            shrunk = scrape(port)
            assert shrunk["kafka_server_replicamanager_isrshrinks_total"] \
                == before["kafka_server_replicamanager_isrshrinks_total"] + 1
        finally:
            cluster.brokers[follower].signal(signal.SIGCONT)
        wait_for(lambda: len(cluster.state("watched", 0).isr) == 2, 20, what="the follower rejoins")
        wait_for(lambda: scrape(port)["kafka_server_replicamanager_underreplicatedpartitions"] == 0, 5,
                 what="no partition under-replicated")
        assert scrape(port)["kafka_server_replicamanager_isrexpands_total"] \
            == before["kafka_server_replicamanager_isrexpands_total"] + 1

        cluster.brokers[other].kill()             # lonely's only replica: the controller finds no leader
        wait_for(lambda: cluster.state("lonely", 0).leader == -1, 20, what="lonely offline")
        wait_for(lambda: scrape(metrics[controller])["kafka_controller_kafkacontroller_offlinepartitionscount"]
                 == 1, 10, what="the controller reports one offline partition")
