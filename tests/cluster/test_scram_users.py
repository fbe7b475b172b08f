"""SCRAM users in cluster mode: stored where Kafka stores them (``/config/users/<user>`` in
ZooKeeper, Kafka's credential format), changed through any broker, honoured by every broker."""
import json

import pytest
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

from fastkafka.cluster import znodes

from support.brokers import free_port
from support.harness import BrokerProc, wait_for, zk_client


pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(120)]


def _settle(futures):
    for f in futures.values():
        f.result(15)


def _can_log_in(port: int, password: str) -> bool:
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": password}
    try:
        return bool(AdminClient(conf).list_topics(timeout=3).brokers)
    except Exception:  # noqa: BLE001  (librdkafka: authentication failed, metadata timed out)
        return False


def test_scram_users_live_in_zookeeper(ensemble, tmp_path, request):
    connect = f"{ensemble.connect}/{request.node.name}"
    sasl = {1: free_port(), 2: free_port()}
    procs = {}
    for i in (1, 2):
        port = free_port()
        procs[i] = BrokerProc(str(tmp_path), connect, i, port=port, **{
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl[i]}",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256"}).start()
    zk = zk_client(connect)
    try:
        wait_for(lambda: len(zk.get_children(znodes.BROKER_IDS)) == 2 if zk.exists(znodes.BROKER_IDS) else False,
                 timeout=30, what="both brokers registered")
        registered = json.loads(zk.get(znodes.broker_path(1))[0])["listener_security_protocol_map"]
        assert registered == {"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"}
        via_1 = AdminClient({"bootstrap.servers": procs[1].bootstrap})
        _settle(via_1.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"alice-secret")]))
        doc = json.loads(zk.get(znodes.config_user_path("alice"))[0])
        assert doc["version"] == 1 and set(doc["config"]) == {"SCRAM-SHA-256"}
        fields = dict(kv.split("=", 1) for kv in doc["config"]["SCRAM-SHA-256"].split(","))
        assert set(fields) == {"salt", "stored_key", "server_key", "iterations"} and fields["iterations"] == "8192"
        # the other broker learns it through its watch
        wait_for(lambda: _can_log_in(sasl[2], "alice-secret"), timeout=20, what="alice accepted by broker 2")
        assert not _can_log_in(sasl[2], "wrong")
        via_2 = AdminClient({"bootstrap.servers": procs[2].bootstrap})
        described = via_2.describe_user_scram_credentials(["alice"])
        infos = (described.result(10) if hasattr(described, "result") else
                 {u: f.result(10) for u, f in described.items()})["alice"].scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
        _settle(via_2.alter_user_scram_credentials([UserScramCredentialDeletion(
            "alice", ScramMechanism.SCRAM_SHA_256)]))
        assert not zk.exists(znodes.config_user_path("alice"))
        wait_for(lambda: not _can_log_in(sasl[1], "alice-secret"), timeout=20, what="alice refused by broker 1")
    finally:
        zk.stop()
        for p in procs.values():
            p.stop()
