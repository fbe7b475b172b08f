"""ACLs in cluster mode: stored where and as Kafka stores them (``/kafka-acl/<Type>/<name>`` and
``/kafka-acl-extended/prefixed/...``, Kafka's JSON), changed through any broker, enforced by every
broker, and ACLs written straight into ZooKeeper (as ``kafka-acls.sh --authorizer-properties``
does) honoured too."""
import json

import pytest
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)


pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(120)]

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret" user_bob="bob-secret";')
EVERY = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                         AclPermissionType.ANY)

from support.brokers import free_port
from support.harness import BrokerProc, wait_for, zk_client


def _sasl(port: int, user: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"})


def _topics_seen(port: int, user: str) -> set:
    try:
        return set(_sasl(port, user).list_topics(timeout=5).topics)
    except Exception:  # noqa: BLE001  (metadata timed out while the broker starts)
        return set()


def test_acls_live_in_zookeeper(ensemble, tmp_path, request):
    connect = f"{ensemble.connect}/{request.node.name}"
    sasl = {1: free_port(), 2: free_port()}
    procs = {}
    for i in (1, 2):
        port = free_port()
        procs[i] = BrokerProc(str(tmp_path), connect, i, port=port, **{
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl[i]}",
            "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            # the brokers talk PLAINTEXT to each other: their principal must be a super user
            "super.users": "User:ANONYMOUS"}).start()
    zk = zk_client(connect)
    try:
        wait_for(lambda: all(procs[i].sees({1, 2}) for i in (1, 2)), timeout=30,
                 what="both brokers registered, seen by each with a controller")
        via_1 = AdminClient({"bootstrap.servers": procs[1].bootstrap})
        for f in via_1.create_topics([NewTopic(t, 2, 1) for t in ("orders", "pay-eu", "secret")]).values():
            f.result(20)
        alice_reads = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                                 AclOperation.READ, AclPermissionType.ALLOW)
        prefixed = AclBinding(ResourceType.TOPIC, "pay", ResourcePatternType.PREFIXED, "User:*", "*",
                              AclOperation.DESCRIBE, AclPermissionType.ALLOW)
        for f in via_1.create_acls([alice_reads, prefixed]).values():
            f.result(15)
        doc = json.loads(zk.get("/kafka-acl/Topic/orders")[0])
        assert doc == {"version": 1, "acls": [{"principal": "User:alice", "host": "*", "operation": "Read",
                                                "permissionType": "Allow"}]}
        assert json.loads(zk.get("/kafka-acl-extended/prefixed/Topic/pay")[0])["acls"][0]["operation"] == "Describe"
        # broker 2 learns them through its watches
        wait_for(lambda: _topics_seen(sasl[2], "alice") == {"orders", "pay-eu"}, timeout=20,
                 what="alice sees her topics through broker 2")
        assert _topics_seen(sasl[2], "bob") == {"pay-eu"}
        # an ACL written straight into ZooKeeper in Kafka's format is honoured
        zk.create("/kafka-acl/Topic/secret", json.dumps({"version": 1, "acls": [
            {"principal": "User:bob", "host": "*", "operation": "All", "permissionType": "Allow"}]}).encode(),
            makepath=True)
        wait_for(lambda: "secret" in _topics_seen(sasl[1], "bob"), timeout=20, what="bob sees secret")
        via_2 = AdminClient({"bootstrap.servers": procs[2].bootstrap})
        assert len(via_2.describe_acls(EVERY).result(10)) == 3
        # deleted through broker 2: gone from ZooKeeper and from broker 1's decisions
        for f in via_2.delete_acls([AclBindingFilter(
                ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, None, None, AclOperation.ANY,
                AclPermissionType.ANY)]).values():
            assert f.result(10) == [alice_reads]
        assert not zk.exists("/kafka-acl/Topic/orders")
        wait_for(lambda: _topics_seen(sasl[1], "alice") == {"pay-eu"}, timeout=20,
                 what="alice lost orders on broker 1")
    finally:
        zk.stop()
        for p in procs.values():
            p.stop()
