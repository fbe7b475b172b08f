"""Prometheus metrics on metrics.port: scraped over HTTP from a real broker driven by
confluent-kafka, the counters move by exactly what was produced and consumed; off by default;
a busy port or a missing prometheus_client is a clear start-up error."""
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from fastkafka.config import KafkaConfig
from fastkafka.protocol import ApiKey
from fastkafka.server.broker import Broker, BrokerStartupError

from support.brokers import free_port, running_broker
from support.raw_client import RawClient

import confluent_kafka
import confluent_kafka.admin  # noqa: F401 (used as confluent_kafka.admin below)
import prometheus_client  # noqa: F401 (a declared dependency: missing, it fails here by name)

pytestmark = pytest.mark.clients

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def scrape(broker) -> dict[str, float]:
    """``{'name{labels}': value}`` of one GET /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10).read().decode()
    samples = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m:
            samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return samples


def disk_bytes(log_dir, topic: str, partition: int) -> int:
    d = os.path.join(log_dir, f"{topic}-{partition}")
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))


def test_counters_move_by_exactly_what_was_sent(tmp_path):
    log_dir = str(tmp_path / "data")
    topic, n, size = "metered", 500, 100
    with running_broker(log_dir, metrics_port=0) as b:
        producer = confluent_kafka.Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
        producer.produce(topic, b"w")   # creates the topic; the scrape below starts after it
        assert producer.flush(20) == 0
        before = scrape(b)
        disk_before = disk_bytes(log_dir, topic, 0)
        for i in range(n):
            producer.produce(topic, os.urandom(size), key=b"k%04d" % i)
        assert producer.flush(20) == 0
        after_produce = scrape(b)
        grown = disk_bytes(log_dir, topic, 0) - disk_before

        consumer = confluent_kafka.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "metered-readers",
                                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([topic])
        got = 0
        while got < n + 1:
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None
            got += 1
        consumer.commit(asynchronous=False)
        after = scrape(b)
        consumer.close()
        admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": b.bootstrap})
        admin.delete_topics([topic])[topic].result(20)
        deadline = time.monotonic() + 10
        while f'kafka_log_log_size{{partition="0",topic="{topic}"}}' in (gone := scrape(b)):
            assert time.monotonic() < deadline, "the deleted topic's log is still reported"
            time.sleep(0.1)  # poll interval

    t = f'{{topic="{topic}"}}'
    delta = lambda s, name: s[name] - before.get(name, 0.0)   # noqa: E731
    assert delta(after_produce, f"kafka_server_brokertopicmetrics_messagesin_total{t}") == n
    assert grown > n * size
    assert delta(after_produce, f"kafka_server_brokertopicmetrics_bytesin_total{t}") == grown
    # the per-partition size gauge is the segment files' size on disk
    size_key = f'kafka_log_log_size{{partition="0",topic="{topic}"}}'
    assert after_produce[size_key] == disk_before + grown
    assert after_produce[f'kafka_log_log_numlogsegments{{partition="0",topic="{topic}"}}'] == 1
    assert after_produce[f'kafka_log_log_logendoffset{{partition="0",topic="{topic}"}}'] == n + 1
    # each Produce request carried this one topic: the histogram counted each of them once
    produces = delta(after_produce, f"kafka_server_brokertopicmetrics_totalproducerequests_total{t}")
    assert produces >= 1
    assert delta(after_produce, 'kafka_network_requestmetrics_totaltime_seconds_count{request="Produce"}') \
        == produces
    assert delta(after_produce, f"kafka_server_brokertopicmetrics_failedproducerequests_total{t}") == 0
    # the consumer read the whole log once (it fits one fetch): bytes out is its size
    assert after[f"kafka_server_brokertopicmetrics_bytesout_total{t}"] == after_produce[size_key]
    fetches = delta(after, 'kafka_network_requestmetrics_totaltime_seconds_count{request="Fetch"}')
    assert fetches >= 1
    # every part of a request's time is observed once per request; the parts add up to the total
    parts = ("requestqueuetime", "localtime", "remotetime", "responsesendtime")
    for part in parts:
        assert delta(after, f'kafka_network_requestmetrics_{part}_seconds_count{{request="Fetch"}}') == fetches
    total = after['kafka_network_requestmetrics_totaltime_seconds_sum{request="Fetch"}']
    assert sum(after[f'kafka_network_requestmetrics_{p}_seconds_sum{{request="Fetch"}}'] for p in parts) \
        == pytest.approx(total, rel=1e-6)
    assert after['kafka_consumergroup_lag{group="metered-readers",partition="0",topic="metered"}'] == 0
    assert after["kafka_server_socketservermetrics_connection_count"] >= 1
    assert not [k for k in gone if f'topic="{topic}"' in k]     # a deleted topic's series go
    assert after['kafka_server_delayedoperationpurgatory_purgatorysize{delayedoperation="Fetch"}'] >= 0
    assert after['kafka_network_processor_idle_seconds_total{networkprocessor="0"}'] > 0


def test_failed_authentications_are_counted(tmp_path):
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
    props = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "sasl"), "metrics.port": 0,
             "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas}
    b = Broker(KafkaConfig(props))
    b.startup()
    try:
        name = 'kafka_server_socketservermetrics_failed_authentication_total{listener="SASL_PLAINTEXT"}'
        assert scrape(b)[name] == 0
        raw = RawClient(b.port)
        assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        assert raw.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0wrong"}).error_code == 58
        assert scrape(b)[name] == 1
        good = RawClient(b.port)
        assert good.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        assert good.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0alice\0alice-secret"}).error_code == 0
        # a real client with a wrong password fails too, and is counted (it may try more than once)
        admin = confluent_kafka.admin.AdminClient({
            "bootstrap.servers": f"127.0.0.1:{b.port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "nope"})
        with pytest.raises(confluent_kafka.KafkaException):
            admin.list_topics(timeout=3)
        assert scrape(b)[name] >= 2
    finally:
        b.shutdown(10)


def test_authentications_and_re_authentications_are_counted(tmp_path):
    """Kafka's socket-server-metrics per listener: fastkafka's producer re-authenticating (SCRAM,
    connections.max.reauth.ms=1000) moves successful-reauthentication and the latency; a wrong
    password moves failed-authentication; a wrong password on re-authentication
    failed-reauthentication; SaslAuthenticate v0 counts as a client that cannot re-authenticate,
    as does every PLAINTEXT connection."""
    from fastkafka.client import AdminClient, Producer, ProducerData
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";'
    props = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "d"),
             "metrics.port": 0, "sasl.enabled.mechanisms": "SCRAM-SHA-256,PLAIN", "connections.max.reauth.ms": 1000,
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas}
    b = Broker(KafkaConfig(props))
    b.startup()
    try:
        plain, sasl = (b.socket_server.bound[n][1] for n in ("PLAINTEXT", "SASL_PLAINTEXT"))
        with AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"}) as admin:
            admin.alter_user_scram_credentials({("alice", "SCRAM-SHA-256"): ("alice-secret", 4096)})
        b.topics.create("reauth", 1)
        before = scrape(b)
        S, P = '{listener="SASL_PLAINTEXT"}', '{listener="PLAINTEXT"}'
        assert before[f"kafka_server_socketservermetrics_successful_authentication_total{P}"] >= 1
        assert before[f"kafka_server_socketservermetrics_successful_authentication_no_reauth_total{P}"] == \
            before[f"kafka_server_socketservermetrics_successful_authentication_total{P}"]
        conf = {"bootstrap.servers": f"127.0.0.1:{sasl}", "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": "alice-secret"}
        with Producer(conf) as p:
            end = time.monotonic() + 2.5
            while time.monotonic() < end:
                p.send(ProducerData("reauth", None, [b"x"]))
                time.sleep(0.2)     # (the pace of the client's requests)
            reauths = p.cluster.connection(b.broker_id).reauthentications
        assert reauths >= 1
        # the wrong password, first on a new connection, then on re-authenticating one
        raw = RawClient(sasl)
        assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        assert raw.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0bob\0wrong"}).error_code == 58
        raw = RawClient(sasl)
        assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        assert raw.call(ApiKey.SASL_AUTHENTICATE, 0, {"auth_bytes": b"\0bob\0bob-secret"}).error_code == 0
        assert raw.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        assert raw.call(ApiKey.SASL_AUTHENTICATE, 0, {"auth_bytes": b"\0bob\0wrong"}).error_code == 58
        after = scrape(b)
    finally:
        b.shutdown(10)
    delta = lambda name: after[f"kafka_server_socketservermetrics_{name}{S}"] - before[  # noqa: E731
        f"kafka_server_socketservermetrics_{name}{S}"]
    assert delta("successful_reauthentication_total") >= reauths
    assert delta("reauthentication_latency_seconds_count") == delta("successful_reauthentication_total")
    assert 0 < after[f"kafka_server_socketservermetrics_reauthentication_latency_max_seconds{S}"] < 1
    assert delta("successful_authentication_total") >= 2          # the producer's connection(s) and bob's
    assert delta("successful_authentication_no_reauth_total") == 1   # bob, with SaslAuthenticate v0
    assert delta("failed_authentication_total") == 1
    assert delta("failed_reauthentication_total") == 1


def test_metrics_are_off_by_default(tmp_path):
    port = free_port()
    with running_broker(tmp_path / "data") as b:
        assert b.metrics is None and b.metrics_port is None
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_busy_metrics_port_is_a_clear_start_up_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(BrokerStartupError, match=rf"cannot serve metrics on 127\.0\.0\.1:{port} \(metrics\.port\)"):
            with running_broker(tmp_path / "data", metrics_port=port):
                pass


def test_metrics_without_prometheus_client_names_the_extra(tmp_path):
    # a clean interpreter where prometheus_client cannot be imported (as after a plain pip install)
    code = ("import sys; sys.modules['prometheus_client'] = None\n"
            "from fastkafka.config import KafkaConfig\n"
            "from fastkafka.server.broker import Broker, BrokerStartupError\n"
            f"b = Broker(KafkaConfig({{'listeners': 'PLAINTEXT://127.0.0.1:0', 'log.dirs': {str(tmp_path)!r}, "
            "'metrics.port': 0}))\n"
            "try:\n    b.startup()\nexcept BrokerStartupError as e:\n    print('ERROR:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "ERROR: metrics.port is set but prometheus_client is not installed: " \
           "pip install 'fastkafka[metrics]'" in out.stdout, out.stderr


def test_grafana_dashboard_uses_only_exported_names(tmp_path):
    """Every metric the dashboard queries is one the broker serves (a renamed metric breaks this)."""
    import json
    import pathlib
    dash = json.loads((pathlib.Path(__file__).resolve().parents[2] / "tools" / "grafana-fastkafka.json").read_text())
    queried = {name for p in dash["panels"] for t in p["targets"] for name in re.findall(r"\bkafka_[a-z_]+", t["expr"])}
    with running_broker(tmp_path / "data", metrics_port=0) as b:
        text = urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics", timeout=10).read().decode()
    served = set(re.findall(r"^# TYPE (\S+) ", text, re.M))   # counters' lines carry their _total
    # a histogram's or summary's samples add _bucket, _count, _sum to its family's name
    missing = [n for n in queried if n not in served and re.sub(r"_(bucket|count|sum)$", "", n) not in served]
    assert len(queried) >= 15
    assert not missing
