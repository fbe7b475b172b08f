"""TLS and SASL with the real clients (issue 16): confluent-kafka, kafka-python, aiokafka, Debian's
kcat and our own client, over SSL (with and without a client certificate), SASL_PLAINTEXT and
SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 — produce, consume in a group, an admin
call. Then what must fail: wrong password, unknown user, wrong mechanism, a request before
authentication, an expired session, plaintext on a TLS port, garbage on a SASL port — each the
right error and a closed connection, the broker healthy afterwards.

One broker serves every case; its certificates are made by the test (tests/support/certs.py)."""
from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import ssl
import struct
import subprocess
import time
import urllib.request
import uuid

import pytest

from fastkafka import protocol as P
from fastkafka.protocol import ApiKey

from fastkafka.config import KafkaConfig
from fastkafka.server.broker import Broker


pytestmark = [pytest.mark.clients, pytest.mark.timeout(300)]

import confluent_kafka as ck
from confluent_kafka.admin import (AdminClient as CkAdmin, NewTopic as CkNewTopic,  # noqa: E402
                                   ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion)

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
LISTENERS = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "MTLS": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT",
             "SASL_SSL": "SASL_SSL"}

from support.certs import make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def _props(certs, **extra):
    props = {
        "listeners": ",".join(f"{n}://127.0.0.1:0" for n in LISTENERS),
        "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in LISTENERS.items()),
        "ssl.keystore.location": str(certs.broker), "ssl.truststore.location": str(certs.ca),
        "ssl.client.auth": "requested", "listener.name.mtls.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "group.initial.rebalance.delay.ms": 0,
    }
    props.update(extra)
    return props


@contextlib.contextmanager
def secured_broker(log_dir, props):
    """An in-process broker with every listener of LISTENERS; ``addr`` maps listener -> host:port."""
    b = Broker(KafkaConfig(dict(props, **{"log.dirs": str(log_dir)})))
    b.startup()
    b.addr = {name: f"127.0.0.1:{b.socket_server.bound[name][1]}" for name in LISTENERS}
    try:
        yield b
    finally:
        b.shutdown(10)


@pytest.fixture(scope="module")
def secure(tmp_path_factory, certs):
    with secured_broker(tmp_path_factory.mktemp("data"), _props(certs, **{"metrics.port": 0})) as b:
        admin = CkAdmin({"bootstrap.servers": b.addr["PLAINTEXT"]})
        upserts = [UserScramCredentialUpsertion(user, ScramCredentialInfo(m, 4096), pw.encode())
                   for user, pw in PASSWORDS.items()
                   for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)]
        for f in admin.alter_user_scram_credentials(upserts).values():
            f.result(10)
        yield b


# (listener, mechanism or None, client certificate?)
CASES = [("SSL", None, False), ("MTLS", None, True), ("SASL_PLAINTEXT", "PLAIN", False),
         ("SASL_PLAINTEXT", "SCRAM-SHA-256", False), ("SASL_PLAINTEXT", "SCRAM-SHA-512", False),
         ("SASL_SSL", "SCRAM-SHA-512", False), ("SASL_SSL", "PLAIN", False)]
IDS = [f"{lst}-{mech or ('cert' if cert else 'tls')}" for lst, mech, cert in CASES]


def _librdkafka(broker, certs, listener, mechanism, cert, user="alice", password=None):
    conf = {"bootstrap.servers": broker.addr[listener], "security.protocol": LISTENERS[listener]}
    if LISTENERS[listener] in ("SSL", "SASL_SSL"):
        conf["ssl.ca.location"] = str(certs.ca)
        if cert:
            conf.update({"ssl.certificate.location": str(certs.client_cert),
                         "ssl.key.location": str(certs.client_key)})
    if mechanism:
        conf.update({"sasl.mechanisms": mechanism, "sasl.username": user,
                     "sasl.password": password or PASSWORDS.get(user, "x")})
    return conf


def _check_records(got, n):
    assert sorted(got) == sorted((b"k%d" % i, b"v%d" % i) for i in range(n))


@pytest.mark.parametrize("listener,mechanism,cert", CASES, ids=IDS)
def test_confluent(secure, certs, listener, mechanism, cert):
    conf = _librdkafka(secure, certs, listener, mechanism, cert)
    topic = f"ck-{uuid.uuid4().hex[:8]}"
    admin = CkAdmin(conf)
    admin.create_topics([CkNewTopic(topic, 2, 1)])[topic].result(20)
    assert topic in admin.list_topics(timeout=10).topics
    p = ck.Producer(conf)
    for i in range(50):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert p.flush(20) == 0
    c = ck.Consumer(dict(conf, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + 30
    while len(got) < 50 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append((m.key(), m.value()))
    c.commit(asynchronous=False)
    c.close()
    _check_records(got, 50)


def _kafka_python_conf(broker, certs, listener, mechanism, cert):
    conf = {"bootstrap_servers": broker.addr[listener], "security_protocol": LISTENERS[listener]}
    if LISTENERS[listener] in ("SSL", "SASL_SSL"):
        conf.update(ssl_cafile=str(certs.ca), ssl_check_hostname=True)
        if cert:
            conf.update(ssl_certfile=str(certs.client_cert), ssl_keyfile=str(certs.client_key))
    if mechanism:
        conf.update(sasl_mechanism=mechanism, sasl_plain_username="bob", sasl_plain_password=PASSWORDS["bob"])
    return conf


@pytest.mark.parametrize("listener,mechanism,cert", CASES, ids=IDS)
def test_kafka_python(secure, certs, listener, mechanism, cert):
    import kafka
    from kafka.admin import KafkaAdminClient, NewTopic
    conf = _kafka_python_conf(secure, certs, listener, mechanism, cert)
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(**conf)
    admin.create_topics([NewTopic(topic, 2, 1)])
    assert topic in admin.list_topics()
    admin.close()
    p = kafka.KafkaProducer(**conf)
    for i in range(50):
        p.send(topic, key=b"k%d" % i, value=b"v%d" % i)
    p.flush(20)
    p.close()
    c = kafka.KafkaConsumer(topic, group_id="g-" + topic, auto_offset_reset="earliest",
                            consumer_timeout_ms=15000, **conf)
    got = []
    for m in c:
        got.append((m.key, m.value))
        if len(got) == 50:
            break
    c.commit()
    c.close()
    _check_records(got, 50)


@pytest.mark.parametrize("listener,mechanism,cert", CASES, ids=IDS)
def test_aiokafka(secure, certs, listener, mechanism, cert):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.helpers import create_ssl_context

    conf = {"bootstrap_servers": secure.addr[listener], "security_protocol": LISTENERS[listener]}
    if LISTENERS[listener] in ("SSL", "SASL_SSL"):
        conf["ssl_context"] = create_ssl_context(
            cafile=str(certs.ca), certfile=str(certs.client_cert) if cert else None,
            keyfile=str(certs.client_key) if cert else None)
    if mechanism:
        conf.update(sasl_mechanism=mechanism, sasl_plain_username="alice",
                    sasl_plain_password=PASSWORDS["alice"])
    topic = f"ai-{uuid.uuid4().hex[:8]}"

    async def go():
        admin = AIOKafkaAdminClient(**conf)
        await admin.start()
        await admin.create_topics([NewTopic(topic, 2, 1)])
        assert topic in await admin.list_topics()
        await admin.close()
        p = AIOKafkaProducer(**conf)
        await p.start()
        for i in range(50):
            await p.send(topic, key=b"k%d" % i, value=b"v%d" % i)
        await p.stop()
        c = AIOKafkaConsumer(topic, group_id="g-" + topic, auto_offset_reset="earliest", **conf)
        await c.start()
        got = []
        try:
            async with asyncio.timeout(30):
                async for m in c:
                    got.append((m.key, m.value))
                    if len(got) == 50:
                        break
            await c.commit()
        finally:
            await c.stop()
        return got

    _check_records(asyncio.run(go()), 50)


@pytest.mark.parametrize("listener,mechanism,cert", CASES, ids=IDS)
def test_kcat(secure, certs, listener, mechanism, cert):
    args = [f"{k}={v}" for k, v in _librdkafka(secure, certs, listener, mechanism, cert).items()
            if k != "bootstrap.servers"]
    xs = [a for kv in args for a in ("-X", kv)]
    topic = f"kc-{uuid.uuid4().hex[:8]}"
    lines = b"".join(b"k%d:v%d\n" % (i, i) for i in range(50))
    base = ["kcat", "-b", secure.addr[listener], *xs]
    r = subprocess.run([*base, "-P", "-t", topic, "-K:"], input=lines, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    r = subprocess.run([*base, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n"],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    got = [tuple(line.split(b":")) for line in r.stdout.splitlines()]
    _check_records(got, 50)
    r = subprocess.run([*base, "-L", "-t", topic], capture_output=True, timeout=60)
    assert f'topic "{topic}" with' in r.stdout.decode(), r.stderr.decode()


@pytest.mark.parametrize("listener,mechanism,cert", CASES, ids=IDS)
def test_fastkafka_client(secure, certs, listener, mechanism, cert):
    from fastkafka.client import AdminClient, Producer, create_consumer
    conf = {"bootstrap.servers": secure.addr[listener], "security.protocol": LISTENERS[listener]}
    if LISTENERS[listener] in ("SSL", "SASL_SSL"):
        conf["ssl.truststore.location"] = str(certs.ca)
        if cert:
            conf["ssl.keystore.location"] = str(certs.client)
    if mechanism:
        conf.update({"sasl.mechanism": mechanism, "sasl.jaas.config":
                     'org.apache.kafka.common.security.scram.ScramLoginModule required '
                     'username="alice" password="alice-secret";'})
    topic = f"fk-{uuid.uuid4().hex[:8]}"
    with AdminClient(conf) as admin:
        admin.create_topic(topic, 2)
        assert topic in admin.list_topics()
    with Producer(conf) as p:
        from fastkafka.client import ProducerData
        for i in range(50):
            p.send(ProducerData(topic, b"k%d" % i, [b"v%d" % i]))
    consumer = create_consumer(dict(conf, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest",
                                             "consumer.timeout.ms": 15000}))
    got = []
    try:
        for m in consumer.create_message_streams({topic: 1})[topic][0]:
            got.append((m.key, m.message))
            if len(got) == 50:
                break
        consumer.commit_offsets()
    finally:
        consumer.shutdown()
    _check_records(got, 50)


# --- what must fail, and leave the broker serving ------------------------------------------

class Raw:
    """A bare protocol connection: our codecs over a socket, to see exact answers and closes."""

    def __init__(self, addr, tls_ca=None):
        host, port = addr.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        if tls_ca is not None:
            self.sock = ssl.create_default_context(cafile=str(tls_ca)).wrap_socket(self.sock, server_hostname=host)
        self.corr = 0

    def request(self, key, version, body):
        self.corr += 1
        self.sock.sendall(P.encode_request(key, version, self.corr, body, "raw"))
        corr, resp = P.decode_response(key, version, self.read_frame())
        assert corr == self.corr
        return resp

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self.recv_exact(4))[0]
        return self.recv_exact(size)

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return buf

    def closed_by_broker(self, timeout=5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, ssl.SSLError):
            return True


def _refused(conf) -> list:
    """The errors a librdkafka producer with ``conf`` reports within 10 s; it delivers nothing."""
    errors = []
    p = ck.Producer(dict(conf, error_cb=errors.append))
    p.produce("never", b"x")
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert p.flush(0) == 1   # nothing was delivered
    return errors


def _healthy(broker):
    md = Raw(broker.addr["PLAINTEXT"]).request(ApiKey.METADATA, 1, {"topics": None})
    assert md.brokers


def test_wrong_password_is_answered_late_then_closed(secure):
    raw = Raw(secure.addr["SASL_PLAINTEXT"])
    assert raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    started = time.monotonic()
    resp = raw.request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0wrong"})
    # SASL_AUTHENTICATION_FAILED, after connection.failed.authentication.delay.ms (100): as Kafka,
    # the answer waits too, so a guesser gets one answer per delay whatever it does
    assert time.monotonic() - started >= 0.09
    assert resp.error_code == 58
    assert resp.error_message == "Authentication failed: Invalid username or password"   # Kafka's
    raw.sock.sendall(P.encode_request(ApiKey.API_VERSIONS, 0, 7, {}, "raw"))   # nothing more is read
    assert raw.closed_by_broker()
    _healthy(secure)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_unknown_user_and_wrong_password_fail_real_clients(secure, certs, mechanism):
    for user, password in (("nobody", "x"), ("alice", "not-alice")):
        conf = _librdkafka(secure, certs, "SASL_PLAINTEXT", mechanism, False, user, password)
        errors = _refused(conf)
        assert errors and errors[0].code() == ck.KafkaError._AUTHENTICATION, errors
    _healthy(secure)


def test_kafka_python_wrong_password(secure, certs, caplog):
    import kafka
    import kafka.errors
    conf = _kafka_python_conf(secure, certs, "SASL_PLAINTEXT", "SCRAM-SHA-256", False)
    conf["sasl_plain_password"] = "wrong"
    with pytest.raises(kafka.errors.KafkaTimeoutError):   # it retries until its bootstrap timeout (30 s by default)
        kafka.KafkaProducer(**conf, max_block_ms=5000, bootstrap_timeout_ms=5000)
    assert "SaslAuthenticationFailedError" in caplog.text


def test_unsupported_mechanism_lists_ours_then_closes(secure):
    raw = Raw(secure.addr["SASL_PLAINTEXT"])
    resp = raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    assert resp.error_code == 33   # UNSUPPORTED_SASL_MECHANISM
    assert resp.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert raw.closed_by_broker()


def test_requests_before_authentication_close_the_connection(secure):
    raw = Raw(secure.addr["SASL_PLAINTEXT"])
    versions = raw.request(ApiKey.API_VERSIONS, 0, {})   # allowed before authenticating
    assert versions.error_code == 0
    raw.sock.sendall(P.encode_request(ApiKey.METADATA, 1, 9, {"topics": None}, "raw"))
    assert raw.closed_by_broker()


def test_legacy_unframed_tokens_after_handshake_v0(secure):
    raw = Raw(secure.addr["SASL_PLAINTEXT"])
    assert raw.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
    token = b"\0alice\0alice-secret"
    raw.sock.sendall(struct.pack(">i", len(token)) + token)
    assert raw.read_frame() == b""        # PLAIN's (empty) server token, unframed
    assert raw.request(ApiKey.METADATA, 1, {"topics": None}).brokers
    bad = Raw(secure.addr["SASL_PLAINTEXT"])
    assert bad.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
    bad.sock.sendall(struct.pack(">i", 12) + b"\0alice\0wrong")
    assert bad.closed_by_broker()


def test_plaintext_on_tls_port_and_garbage_on_sasl_port_disconnect(secure, certs):
    for listener in ("SSL", "SASL_SSL", "MTLS"):
        raw = Raw(secure.addr[listener])
        raw.sock.sendall(P.encode_request(ApiKey.API_VERSIONS, 0, 1, {}, "plain"))
        assert raw.closed_by_broker()
    garbage = bytes(range(7, 256)) * 4     # framed, but no request header parses from it
    for junk in (b"\x00\x00\x00\x05hello", struct.pack(">i", len(garbage)) + garbage, b"\xff\xff\xff\xff"):
        raw = Raw(secure.addr["SASL_PLAINTEXT"])
        raw.sock.sendall(junk)
        assert raw.closed_by_broker()
    _healthy(secure)
    tls = Raw(secure.addr["SSL"], tls_ca=certs.ca)
    assert tls.request(ApiKey.METADATA, 1, {"topics": None}).brokers


def failed_authentications(broker) -> float:
    """The broker's Prometheus counter of failed authentications (SASL and TLS handshakes), all listeners."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10).read().decode()
    return sum(float(v) for v in re.findall(
        r"^kafka_server_socketservermetrics_failed_authentication_total\{listener=\"[^\"]*\"\} (\S+)$", text, re.M))


def test_client_certificate_required_and_checked(secure, certs):
    before = failed_authentications(secure)
    for cert_conf in ({}, {"ssl.certificate.location": str(certs.rogue_client),
                           "ssl.key.location": str(certs.rogue_client)}):
        errors = _refused(dict(_librdkafka(secure, certs, "MTLS", None, False), **cert_conf))
        assert errors, "the broker accepted a client without a trusted certificate"
    # each refused handshake counts as a failed authentication, as in Kafka (librdkafka may retry)
    assert failed_authentications(secure) >= before + 2


def test_metadata_answers_the_listener_the_client_came_in_on(secure, certs):
    for listener in ("PLAINTEXT", "SASL_PLAINTEXT"):
        conf = _librdkafka(secure, certs, listener, "PLAIN" if "SASL" in listener else None, False)
        md = CkAdmin(conf).list_topics(timeout=10)
        assert [f"{b.host}:{b.port}" for b in md.brokers.values()] == [secure.addr[listener]]


def test_scram_credentials_described_and_deleted(secure):
    from confluent_kafka.admin import UserScramCredentialDeletion
    admin = CkAdmin({"bootstrap.servers": secure.addr["PLAINTEXT"]})
    described = admin.describe_user_scram_credentials(["alice"]).result(10) \
        if hasattr(admin.describe_user_scram_credentials(["alice"]), "result") else None
    if described is None:
        described = {u: f.result(10) for u, f in admin.describe_user_scram_credentials(["alice"]).items()}
    infos = described["alice"].scram_credential_infos
    assert sorted((i.mechanism, i.iterations) for i in infos) == [
        (ScramMechanism.SCRAM_SHA_256, 4096), (ScramMechanism.SCRAM_SHA_512, 4096)]
    carol = [UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                          b"carol-secret")]
    for f in admin.alter_user_scram_credentials(carol).values():
        f.result(10)
    conf = {"bootstrap.servers": secure.addr["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "carol", "sasl.password": "carol-secret"}
    assert CkAdmin(conf).list_topics(timeout=10).brokers
    gone = [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)]
    for f in admin.alter_user_scram_credentials(gone).values():
        f.result(10)
    errors = _refused(conf)
    assert errors and errors[0].code() == ck.KafkaError._AUTHENTICATION
    with pytest.raises(ck.KafkaException) as e:   # deleting it again: RESOURCE_NOT_FOUND
        for f in admin.alter_user_scram_credentials(gone).values():
            f.result(10)
    assert "not exist" in str(e.value)


def test_session_expiry_and_reauthentication(tmp_path, certs):
    props = _props(certs, **{"connections.max.reauth.ms": 1500})
    with secured_broker(tmp_path / "data", props) as b:
        addr = b.addr["SASL_PLAINTEXT"]
        raw = Raw(addr)
        assert raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        resp = raw.request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0alice-secret"})
        assert resp.error_code == 0 and 0 < resp.session_lifetime_ms <= 1500
        assert raw.request(ApiKey.METADATA, 1, {"topics": None}).brokers
        # re-authenticating in time keeps the connection
        assert raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        resp = raw.request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0alice-secret"})
        assert resp.error_code == 0
        # re-authenticating as someone else is refused
        other = Raw(addr)
        other.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        other.request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0alice-secret"})
        other.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert other.request(ApiKey.SASL_AUTHENTICATE, 1,
                             {"auth_bytes": b"\0bob\0bob-secret"}).error_code == 58
        assert other.closed_by_broker()
        time.sleep(1.7)   # past the session: the next request closes the connection
        raw.sock.sendall(P.encode_request(ApiKey.METADATA, 1, 99, {"topics": None}, "raw"))
        assert raw.closed_by_broker()
        # librdkafka re-authenticates by itself (KIP-368): it keeps producing across sessions
        conf = {"bootstrap.servers": addr, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": "alice-secret"}
        admin = CkAdmin({"bootstrap.servers": b.addr["PLAINTEXT"]})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"alice-secret")]).values():
            f.result(10)
        p = ck.Producer(conf)
        delivered = []
        for i in range(8):
            p.produce("reauth", b"%d" % i, on_delivery=lambda err, m: delivered.append(err))
            p.flush(10)
            time.sleep(0.5)  # pace: 8 sends over 4 s span several 1.5 s sessions
        assert delivered == [None] * 8


def test_configs_tool_manages_scram_users_over_sasl_ssl(secure, certs, tmp_path, capsys):
    """``fastkafka configs --entity-type users`` (kafka-configs.sh's syntax), its client settings
    from ``--command-config`` as Kafka's tools take them."""
    from fastkafka.cli import configs, topics
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=SASL_SSL\nssl.truststore.location={certs.ca}\n"
                     "sasl.mechanism=SCRAM-SHA-256\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                     '    username="alice" password="alice-secret";\n')
    secured = ["-b", secure.addr["SASL_SSL"], "--command-config", str(props)]
    assert configs.main(secured + ["--alter", "--entity-type", "users", "--entity-name", "dave",
                                   "--add-config", "SCRAM-SHA-256=[iterations=8192,password=d,a=v,e],"
                                                   "SCRAM-SHA-512=[password=other]"]) == 0
    assert configs.main(secured + ["--describe", "--entity-type", "users", "--entity-name", "dave"]) == 0
    out = capsys.readouterr().out
    assert "SCRAM credential configs for user-principal 'dave' are SCRAM-SHA-256=iterations=8192, " \
           "SCRAM-SHA-512=iterations=4096" in out
    # dave can log in with the password that holds commas and '='
    dave = tmp_path / "dave.properties"
    dave.write_text(props.read_text().replace('username="alice" password="alice-secret"',
                                              'username="dave" password="d,a=v,e"'))
    assert topics.main(["-b", secure.addr["SASL_SSL"], "--command-config", str(dave), "list"]) == 0
    assert configs.main(secured + ["--alter", "--entity-type", "users", "--entity-name", "dave",
                                   "--delete-config", "SCRAM-SHA-256,SCRAM-SHA-512"]) == 0
    assert topics.main(["-b", secure.addr["SASL_SSL"], "--command-config", str(dave),
                        "-X", "retries=0", "list"]) == 1
    err = capsys.readouterr().err
    assert "SASL_AUTHENTICATION_FAILED" in err or "uthentication failed" in err, err


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_failed_logins_and_stalled_handshakes_cost_only_their_connections(secure, certs):
    """1,000 TLS connections that never send a ClientHello and 1,000 failed SCRAM logins, while
    a legitimate SASL_SSL client keeps producing: it is served throughout, every attacker is
    refused or left waiting on its own connection, and the broker's memory stays bounded.
    (The throughput ratio under this load is bench/bench_security.py's.)"""
    import concurrent.futures

    from fastkafka.client.config import ClientConfig
    from fastkafka.client.connection import BrokerConnection
    from fastkafka.client.security import ClientSecurity

    host, port = secure.addr["SSL"].split(":")
    rss_before = _rss_kib()
    stalled = [socket.create_connection((host, int(port)), timeout=10) for _ in range(1000)]
    sasl_host, sasl_port = secure.addr["SASL_PLAINTEXT"].split(":")
    wrong = ClientSecurity.from_config(ClientConfig({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice", "sasl.password": "guess"}))

    def fail_login(_):
        try:
            BrokerConnection(sasl_host, int(sasl_port), security=wrong).connect()
        except Exception as e:      # the broker's answer: error 58, then the connection closes
            return type(e).__name__
        return "accepted"

    conf = _librdkafka(secure, certs, "SASL_SSL", "SCRAM-SHA-512", False)
    delivered = []
    p = ck.Producer(dict(conf, **{"linger.ms": 1}))
    try:
        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            logins = pool.map(fail_login, range(1000))
            for i in range(200):          # the legitimate client, meanwhile
                p.produce("abuse", b"%d" % i, on_delivery=lambda err, m: delivered.append(err))
                p.poll(0.005)
            outcomes = list(logins)
        assert p.flush(30) == 0
    finally:
        for s in stalled:
            s.close()
    assert outcomes.count("SaslAuthenticationFailedError") == 1000, set(outcomes)
    assert delivered == [None] * 200
    # the stalled handshakes and failed logins are gone without a trace worth speaking of
    assert _rss_kib() - rss_before < 64 * 1024
    _healthy(secure)


def _readme_properties() -> list[dict[str, str]]:
    import pathlib
    import re
    from fastkafka.config import load_properties
    text = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    return [load_properties(block) for block in re.findall(r"```properties\n(.*?)```", text, re.S)]


def test_readme_security_example(tmp_path, certs):
    """README's server.properties and client properties, verbatim but for the certificate paths
    and ports: the broker starts from them and the tools reach it over SASL_SSL."""
    from fastkafka.cli import configs, topics
    server, client = _readme_properties()
    ports = {}
    for spec in server["listeners"].split(","):
        name = spec.split("://")[0]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports[name] = s.getsockname()[1]
    props = dict(server, **{"listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
                            "ssl.keystore.location": str(certs.broker), "log.dirs": str(tmp_path / "data")})
    broker = Broker(KafkaConfig(props, strict=True))
    broker.startup()
    try:
        plain = f"127.0.0.1:{ports['PLAINTEXT']}"
        assert configs.main(["-b", plain, "--alter", "--entity-type", "users", "--entity-name", "alice",
                             "--add-config", "SCRAM-SHA-256=[password=alice-secret]"]) == 0
        conf = tmp_path / "client.properties"
        conf.write_text("".join(f"{k}={v}\n" for k, v in dict(
            client, **{"ssl.truststore.location": str(certs.ca)}).items()))
        assert topics.main(["-b", f"127.0.0.1:{ports['SASL_SSL']}", "--command-config", str(conf),
                            "create", "readme-secured"]) == 0
        assert topics.main(["-b", f"127.0.0.1:{ports['SASL_SSL']}", "--command-config", str(conf), "list"]) == 0
    finally:
        broker.shutdown(10)


def test_fastkafka_client_refused_credentials_fail_fast(secure, certs):
    """Refused credentials and an untrusted broker certificate are not retried (Kafka's clients
    treat both as fatal): the error names them and comes at once."""
    from fastkafka import errors
    from fastkafka.client import AdminClient
    from fastkafka.client.connection import SslAuthenticationError
    cases = [
        ({"bootstrap.servers": secure.addr["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
          "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": "nope"},
         errors.SaslAuthenticationFailedError),
        ({"bootstrap.servers": secure.addr["SSL"], "security.protocol": "SSL",
          "ssl.truststore.location": str(certs.other_ca)}, SslAuthenticationError),
    ]
    for conf, expected in cases:
        started = time.monotonic()
        with pytest.raises(expected):
            with AdminClient(dict(conf, retries=5, **{"retry.backoff.ms": 500})) as admin:
                admin.list_topics()
        assert time.monotonic() - started < 2.0
