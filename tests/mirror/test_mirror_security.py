"""A mirror between two secured clusters (issue 20: "security included once the security issue
lands"): the source speaks SASL_SSL with SCRAM-SHA-512, the target SSL with client certificates
(real certificates, tests/support/certs.py). ``fastkafka mirror`` is given each side's properties
(--source-config-file, --target-config), copies records with their headers, and offset
translation works against the secured target; a wrong source password makes the mirror exit 1
with the broker's message instead of retrying for ever."""
from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from fastkafka.client import AdminClient, Producer, ProducerData
from fastkafka.config import KafkaConfig
from fastkafka.server.broker import Broker

from support.brokers import ROOT
from support.certs import make_certs
from mirror_support import contents, high_watermark, read_topic, wait_for


from confluent_kafka.admin import (AdminClient as CkAdmin, ScramCredentialInfo, ScramMechanism,  # noqa: E402
                                   UserScramCredentialUpsertion)

pytestmark = [pytest.mark.clients, pytest.mark.timeout(180)]

SCRAM = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
         'password="{}";')
T0 = 1_650_000_000_000


@contextlib.contextmanager
def secured(log_dir, certs, listener: str, **props):
    """A broker with a PLAINTEXT listener (the test's own reads) and ``listener`` (SASL_SSL, SSL)."""
    config = {"listeners": f"PLAINTEXT://127.0.0.1:0,{listener}://127.0.0.1:0", "log.dirs": str(log_dir),
              "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{listener}:{listener}",
              "ssl.keystore.location": str(certs.broker), "ssl.truststore.location": str(certs.ca),
              "group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500, **props}
    b = Broker(KafkaConfig(config))
    b.startup()
    b.bootstrap = f"127.0.0.1:{b.socket_server.bound['PLAINTEXT'][1]}"
    b.secure = f"127.0.0.1:{b.socket_server.bound[listener][1]}"
    try:
        yield b
    finally:
        b.shutdown(10)


@pytest.fixture
def clusters(tmp_path):
    """``(source, target, certs)``: SASL_SSL/SCRAM-SHA-512 (user alice) and SSL with client certificates."""
    certs = make_certs(tmp_path / "certs")
    with secured(tmp_path / "a", certs, "SASL_SSL", **{"sasl.enabled.mechanisms": "SCRAM-SHA-512"}) as a, \
            secured(tmp_path / "b", certs, "SSL", **{"ssl.client.auth": "required"}) as b:
        admin = CkAdmin({"bootstrap.servers": a.bootstrap})
        upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                              b"alice-secret")
        for f in admin.alter_user_scram_credentials([upsert]).values():
            f.result(10)
        yield a, b, certs


def source_props(tmp_path, certs, password: str = "alice-secret"):
    path = tmp_path / f"source-{password}.properties"
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                    f"sasl.jaas.config={SCRAM.format(password)}\nssl.truststore.location={certs.ca}\n")
    return path


def target_conf(certs) -> list[str]:
    return ["--target-config", "security.protocol=SSL", "--target-config", f"ssl.truststore.location={certs.ca}",
            "--target-config", f"ssl.keystore.location={certs.client}"]


def test_mirror_between_sasl_ssl_and_mtls_clusters(clusters, mirror, tmp_path):
    a, b, certs = clusters
    a.topics.create("orders", 2)
    producer_conf = {"bootstrap.servers": a.secure, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                     "sasl.jaas.config": SCRAM.format("alice-secret"), "ssl.truststore.location": str(certs.ca)}
    with Producer(producer_conf) as p:     # written over SASL_SSL too
        for i in range(100):
            p.send(ProducerData("orders", b"k%d" % (i % 7), [b"order-%d" % i], partition=i % 2,
                                headers=[("origin", b"dc1"), ("seq", str(i).encode())], timestamp=T0 + i))
    with AdminClient({"bootstrap.servers": a.bootstrap}) as admin:     # billing has read everything
        admin.commit_offsets("billing", {("orders", 0): 50, ("orders", 1): 50})
    source = SimpleNamespace(bootstrap=a.secure)
    target = SimpleNamespace(bootstrap=b.secure)
    m = mirror(source, target, "--topics", "orders", "--source-alias", "dc1", "--emit-checkpoints-interval", "0.3",
               "--source-config-file", str(source_props(tmp_path, certs)), *target_conf(certs))

    def copied():
        return sum(high_watermark(b, "orders", p) for p in range(2)) == 100
    wait_for(copied, 60, "the records on the target", m.output)
    assert contents(read_topic(b.bootstrap, "orders")) == contents(read_topic(a.bootstrap, "orders"))
    assert read_topic(b.bootstrap, "orders")[1][0][3] == [("origin", b"dc1"), ("seq", b"1")]

    # offset translation through the SSL target: the checkpoints, then committed there
    translate = [sys.executable, "-m", "fastkafka", "mirror", "translate-offsets", "--target", b.secure,
                 "--source-alias", "dc1", "--group", "billing", *target_conf(certs)]
    out = None

    def checkpointed():
        nonlocal out
        out = subprocess.run(translate, cwd=ROOT, capture_output=True, text=True, timeout=60)
        return out.returncode == 0 and "billing\torders\t1\t50\t50" in out.stdout
    wait_for(checkpointed, 30, "billing's checkpoints", lambda: f"{out}\n{m.output()}")
    assert m.stop() == 0, m.output()
    out = subprocess.run(translate + ["--execute"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out
    assert "billing\torders\t0\t50\t50" in out.stdout
    with AdminClient({"bootstrap.servers": b.bootstrap}) as admin:
        assert admin.committed_offsets("billing") == {("orders", 0): 50, ("orders", 1): 50}


def test_wrong_source_password_exits_1_with_the_reason(clusters, mirror, tmp_path):
    a, b, certs = clusters
    a.topics.create("orders", 1)
    m = mirror(SimpleNamespace(bootstrap=a.secure), SimpleNamespace(bootstrap=b.secure), "--topics", "orders",
               "--source-config-file", str(source_props(tmp_path, certs, "not-alice's")), *target_conf(certs))
    began = time.monotonic()
    try:
        code = m.proc.wait(60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the mirror kept running with a wrong password:\n{m.output()}") from None
    assert code == 1, m.output()
    assert time.monotonic() - began < 30
    assert f"fastkafka mirror: error: the source cluster ({a.secure}) refused the mirror: Authentication failed" \
        in m.output(), m.output()
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in m.output()
