"""Topic ids (KIP-516) in cluster mode: kept in ZooKeeper as Kafka 2.8+ keeps them, the same on
every broker, recorded in each replica's ``partition.metadata``, given by the controller to a
topic written without one, and telling a stray log of a deleted topic from the topic created
again under its name."""
import json
import os
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from fastkafka.cluster import znodes
from fastkafka.log.partition_metadata import read_topic_id
from fastkafka.protocol import ApiKey
from fastkafka.uuids import UUID_ZERO, parse_uuid

from support.harness import raw_call, wait_for
from test_cluster import settle

pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(300)]


def znode_topic_id(cluster, topic: str):
    data, _ = cluster.zk.get(znodes.topic_path(topic))
    doc = json.loads(data)
    return doc["version"], parse_uuid(doc["topic_id"]) if "topic_id" in doc else None


def metadata_ids(cluster, topic: str) -> set:
    """The id each broker's Metadata v12 answers for ``topic``."""
    return {next(t.topic_id for t in raw_call(b.port, ApiKey.METADATA, 12, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False}).topics)
        for b in cluster.brokers.values()}


def produce(cluster, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for v in values:
        p.produce(topic, v, partition=0)
    assert p.flush(30) == 0


def consume_all(cluster, topic: str, expect: int) -> list[bytes]:
    """Partition 0 from offset 0 until ``expect`` records came (librdkafka fetches by topic id)."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"ids-{time.monotonic_ns()}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 60
    while len(got) < expect and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    extra = c.poll(1.0)         # nothing beyond what the topic holds
    c.close()
    assert extra is None or extra.error(), f"an unexpected record: {extra.value()!r}"
    return got


def test_topic_ids_in_zookeeper_metadata_and_partition_dirs(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    settle(admin.create_topics([NewTopic("ided", 3, 2)], operation_timeout=15))
    version, tid = znode_topic_id(cluster, "ided")
    assert version == 3 and tid not in (None, UUID_ZERO)
    wait_for(lambda: metadata_ids(cluster, "ided") == {tid}, what="every broker answering the znode's id")
    for p, replicas in cluster.assignment("ided").items():
        for b in replicas:
            d = os.path.join(cluster.brokers[b].log_dir, f"ided-{p}")
            wait_for(lambda d=d: os.path.exists(os.path.join(d, "partition.metadata")), what=f"{d}'s metadata")
            assert read_topic_id(d) == tid
    # Metadata v12 by id, through any broker
    r = raw_call(cluster.brokers[3].port, ApiKey.METADATA, 12, {"topics": [{"topic_id": tid, "name": None}]})
    assert [(t.error_code, t.name, len(t.partitions)) for t in r.topics] == [(0, "ided", 3)]
    # a topic written the way tools from before ids write it gets one from the controller
    cluster.zk.create(znodes.topic_path("legacy"), b'{"version":1,"partitions":{"0":[1,2]}}', makepath=True)
    wait_for(lambda: znode_topic_id(cluster, "legacy")[1] is not None, what="the controller giving legacy an id")
    legacy = znode_topic_id(cluster, "legacy")[1]
    wait_for(lambda: metadata_ids(cluster, "legacy") == {legacy}, what="every broker answering legacy's id")


def test_a_stray_log_of_a_deleted_topic_is_not_served_as_the_new_one(cluster):
    """Broker 3 is away while its topic is deleted and created again under the same name (Kafka's
    stray-log case). Back, and given a replica of the new topic, it drops its old copy, follows
    the new topic, and when it leads it serves only the new topic's records."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTP

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    settle(admin.create_topics([NewTopic("again", 1, replica_assignment=[[3, 1]])], operation_timeout=15))
    old_id = znode_topic_id(cluster, "again")[1]
    wait_for(lambda: (s := cluster.state("again", 0)) and set(s.isr) == {1, 3}, what="both replicas in sync")
    produce(cluster, "again", [b"old-%d" % i for i in range(10)])
    stray = os.path.join(cluster.brokers[3].log_dir, "again-0")
    assert read_topic_id(stray) == old_id
    cluster.brokers[3].stop()
    cluster.wait_registered({1, 2})
    settle(admin.delete_topics(["again"], operation_timeout=15))
    wait_for(lambda: not cluster.zk.exists(znodes.topic_path("again")), what="the topic deleted")
    settle(admin.create_topics([NewTopic("again", 1, replica_assignment=[[1, 2]])], operation_timeout=15))
    new_id = znode_topic_id(cluster, "again")[1]
    assert new_id not in (old_id, None)
    produce(cluster, "again", [b"new-0", b"new-1"])
    cluster.brokers[3].start()
    cluster.wait_registered({1, 2, 3})
    assert read_topic_id(stray) == old_id           # not a replica of the new topic: left alone
    moves = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    assert moves.alter_partition_reassignments({KTP("again", 0): [3, 1]}) == {KTP("again", 0): None}
    wait_for(lambda: cluster.assignment("again")[0] == (3, 1), 60, what="broker 3 a replica of the new topic")
    moves.close()
    assert read_topic_id(stray) == new_id
    cluster.brokers[1].stop()                       # broker 3 leads now
    wait_for(lambda: (s := cluster.state("again", 0)) and s.leader == 3, what="broker 3 leading")
    assert consume_all(cluster, "again", 2) == [b"new-0", b"new-1"]
