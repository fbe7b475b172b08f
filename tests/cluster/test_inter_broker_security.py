"""Brokers as each other's clients over a secure inter-broker listener (issue 16): followers fetch
from leaders on ``inter.broker.listener.name`` over SSL with client certificates, SASL_SSL with
PLAIN, or SASL_PLAINTEXT with SCRAM (the broker's credential put into ZooKeeper before the brokers
start, as ``kafka-configs.sh --zookeeper`` does), with the ACL authorizer on and only the brokers'
principal a super user. acks=all with min.insync.replicas=2 succeeds only if the follower's fetch
got through: authenticated, and authorized for CLUSTER_ACTION."""
import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from fastkafka.cluster import znodes
from fastkafka.security import make_credential

from support.brokers import free_port
from support.certs import make_certs
from support.harness import BrokerProc, wait_for, zk_client


pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(180)]

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
              'password="broker-secret" user_broker="broker-secret";')
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
              'password="broker-secret";')


def _internal(mode: str, certs) -> tuple[str, dict, str]:
    """(protocol, properties, the brokers' principal) of the INTERNAL listener for ``mode``."""
    tls = {"ssl.keystore.location": str(certs.broker), "ssl.truststore.location": str(certs.ca)}
    if mode == "mtls":
        return "SSL", dict(tls, **{"listener.name.internal.ssl.client.auth": "required"}), \
            "User:O=fastkafka tests,CN=localhost"
    if mode == "sasl_ssl-plain":
        return "SASL_SSL", dict(tls, **{"sasl.enabled.mechanisms": "PLAIN",
                                        "sasl.mechanism.inter.broker.protocol": "PLAIN",
                                        "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS}), \
            "User:broker"
    return "SASL_PLAINTEXT", {"sasl.enabled.mechanisms": "SCRAM-SHA-256",
                              "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
                              "listener.name.internal.scram-sha-256.sasl.jaas.config": SCRAM_JAAS}, "User:broker"


@pytest.mark.parametrize("mode", ["mtls", "sasl_ssl-plain", "sasl_plaintext-scram"])
def test_followers_fetch_over_a_secure_inter_broker_listener(ensemble, tmp_path, request, mode):
    connect = f"{ensemble.connect}/{request.node.name.replace('[', '-').replace(']', '')}"
    certs = make_certs(tmp_path / "certs")
    protocol, props, principal = _internal(mode, certs)
    zk = zk_client(connect)
    procs = {}
    try:
        if mode.endswith("scram"):
            zk.create(znodes.config_user_path("broker"), znodes.EntityConfig({
                "SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "broker-secret").to_kafka_string()}).encode(),
                makepath=True)
        for i in (1, 2):
            port, internal = free_port(), free_port()
            procs[i] = BrokerProc(str(tmp_path), connect, i, port=port, **dict(props, **{
                "listeners": f"EXTERNAL://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal}",
                "listener.security.protocol.map": f"EXTERNAL:PLAINTEXT,INTERNAL:{protocol}",
                "inter.broker.listener.name": "INTERNAL",
                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                "super.users": principal, "allow.everyone.if.no.acl.found": "true"})).start()
        wait_for(lambda: zk.exists(znodes.BROKER_IDS) and len(zk.get_children(znodes.BROKER_IDS)) == 2,
                 timeout=30, what="both brokers registered")
        # CreateTopics counts the brokers broker 1 knows of (a ZooKeeper watch, maybe behind)
        wait_for(lambda: procs[1].sees({1, 2}), timeout=30, what="broker 1 seeing both brokers")
        admin = AdminClient({"bootstrap.servers": procs[1].bootstrap})
        admin.create_topics([NewTopic("replicated", 2, 2, config={"min.insync.replicas": "2"})])[
            "replicated"].result(20)
        p = Producer({"bootstrap.servers": procs[1].bootstrap, "acks": "all", "message.timeout.ms": 30000})
        errors = []
        for i in range(100):
            p.produce("replicated", value=b"v%d" % i, on_delivery=lambda err, msg: errors.append(err))
        assert p.flush(40) == 0
        assert errors == [None] * 100, {str(e) for e in errors}
        for part in (0, 1):
            state = json.loads(zk.get(znodes.state_path("replicated", part))[0])
            assert sorted(state["isr"]) == [1, 2]
    finally:
        zk.stop()
        for proc in procs.values():
            proc.stop()
        for proc in procs.values():
            assert "Traceback" not in proc.output(), proc.output()[-3000:]
