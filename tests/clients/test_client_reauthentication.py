"""fastkafka's own client re-authenticates (KIP-368): against a broker with
connections.max.reauth.ms=2000 and SCRAM, a producer sending every 200 ms for 6 s keeps one
connection, without a single error, while the broker logs its re-authentications. Without
re-authentication the broker closes that connection at the first request past 2 s (retries=0
makes that a delivery error, and the connection would be a new one)."""
import contextlib
import logging
import time
import uuid

import pytest

from fastkafka.client import AdminClient, Producer, ProducerData
from fastkafka.config import KafkaConfig
from fastkafka.server.broker import Broker

pytestmark = [pytest.mark.clients, pytest.mark.timeout(60)]

REAUTH_MS = 2000


@contextlib.contextmanager
def scram_broker(log_dir):
    b = Broker(KafkaConfig({
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256", "connections.max.reauth.ms": REAUTH_MS,
        "log.dirs": str(log_dir)}))
    b.startup()
    try:
        plain, sasl = (f"127.0.0.1:{b.socket_server.bound[n][1]}" for n in ("PLAINTEXT", "SASL_PLAINTEXT"))
        with AdminClient({"bootstrap.servers": plain}) as admin:
            admin.alter_user_scram_credentials({("alice", "SCRAM-SHA-256"): ("alice-secret", 4096)})
        yield b, sasl
    finally:
        b.shutdown(10)


def test_a_long_lived_producer_re_authenticates_on_its_connection(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="fastkafka.server")
    topic = f"reauth-{uuid.uuid4().hex[:6]}"
    with scram_broker(tmp_path / "data") as (broker, sasl):
        broker.topics.create(topic, 1)
        conf = {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": "alice", "sasl.password": "alice-secret", "retries": 0}
        with Producer(conf) as p:
            p.send(ProducerData(topic, None, [b"first"]))
            leader = p.cluster.connection(broker.broker_id)
            first_deadline = leader.reauthenticate_at
            # Kafka's client's window: 85%-95% of the session lifetime
            assert 0.85 * REAUTH_MS / 1000 - 0.5 < first_deadline - time.monotonic() < 0.95 * REAUTH_MS / 1000
            end = time.monotonic() + 6.0
            sent = 1
            while time.monotonic() < end:
                time.sleep(0.2)         # the pace under test
                p.send(ProducerData(topic, None, [b"%d" % sent]))
                sent += 1
            assert p.cluster.connection(broker.broker_id) is leader and leader.connected
            assert leader.reauthentications >= 2
        assert broker.topics.log(topic, 0).log_end_offset == sent
    reauths = [r for r in caplog.records if "re-authenticated" in r.getMessage() and "User:alice" in r.getMessage()]
    assert len(reauths) >= 2
    assert not [r for r in caplog.records if "expired without re-authentication" in r.getMessage()]


def test_re_authentication_waits_for_the_requests_in_flight(tmp_path):
    """Pipelined requests: their answers are read before the exchange and handed out in order."""
    from fastkafka.client.connection import BrokerConnection
    from fastkafka.client.security import ClientSecurity
    from fastkafka.protocol import ApiKey
    with scram_broker(tmp_path / "data") as (broker, sasl):
        host, port = sasl.split(":")
        conn = BrokerConnection(host, int(port), security=ClientSecurity(
            "SASL_PLAINTEXT", mechanism="SCRAM-SHA-256", username="alice", password="alice-secret")).connect()
        try:
            corrs = [conn.send(ApiKey.API_VERSIONS, {}) for _ in range(3)]
            conn.reauthenticate_at = time.monotonic()         # due now, with three in flight
            corrs.append(conn.send(ApiKey.METADATA, {"topics": None}))
            assert conn.reauthentications == 1 and conn.in_flight == 4
            answers = [conn.receive() for _ in corrs]
            assert [type(a).__name__ for a in answers] == ["ApiVersionsResponse"] * 3 + ["MetadataResponse"]
            assert conn.in_flight == 0 and 0 < conn.reauthenticate_at - time.monotonic() < REAUTH_MS / 1000
        finally:
            conn.close()
