"""Which versions real clients now speak to us: each negotiates, through ApiVersions, the highest
version both sides know, so raising our ranges (KIP-482's flexible versions) moves them up.
Recorded on the broker through its request log (``fastkafka.server.requests`` at DEBUG)."""
import logging
import uuid

import pytest

from fastkafka.protocol import API_NAMES

from support.brokers import running_broker

pytestmark = pytest.mark.clients     # kafka-python and confluent-kafka against a broker


class Recorder(logging.Handler):
    """(api name, version) of every request the broker decoded."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.seen: dict[str, set[int]] = {}

    def emit(self, record):
        if record.msg.startswith("%s v%d corr=%d from"):
            name, version = record.args[0], record.args[1]
            self.seen.setdefault(name, set()).add(version)


@pytest.fixture
def recorded(tmp_path):
    rec = Recorder()
    log = logging.getLogger("fastkafka.server.requests")
    old = log.level
    log.addHandler(rec)
    log.setLevel(logging.DEBUG)
    try:
        with running_broker(tmp_path / "data", group_initial_rebalance_delay_ms=0) as b:
            yield b, rec.seen
    finally:
        log.removeHandler(rec)
        log.setLevel(old)


def test_kafka_python_uses_the_flexible_group_and_metadata_versions(recorded):
    import kafka
    broker, seen = recorded
    broker.topics.create("nv", 1)
    group = f"nv-{uuid.uuid4().hex[:6]}"
    prod = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap)
    prod.send("nv", b"x").get(timeout=10)
    prod.close()
    cons = kafka.KafkaConsumer("nv", bootstrap_servers=broker.bootstrap, group_id=group,
                               auto_offset_reset="earliest", enable_auto_commit=False,
                               consumer_timeout_ms=8000)
    assert [m.value for m in cons] == [b"x"]
    cons.commit()
    cons.close()
    got = {name: max(vs) for name, vs in seen.items()}
    print("kafka-python", kafka.__version__, sorted(got.items()))
    assert (got["Metadata"], got["FindCoordinator"], got["JoinGroup"], got["OffsetCommit"]) == (12, 5, 7, 8)


def test_kafka_python_admin_creates_and_deletes_topics_at_the_newest_versions(recorded):
    from kafka import admin as kafka_admin
    broker, seen = recorded
    admin = kafka_admin.KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([kafka_admin.NewTopic("kp", 2, 1, topic_configs={"retention.ms": "120000"})])
        assert (broker.topics.get("kp").partitions, dict(broker.topics.get("kp").configs)) == (
            2, {"retention.ms": "120000"})
        admin.delete_topics(["kp"])
        assert broker.topics.get("kp") is None
    finally:
        admin.close()
    got = {name: max(vs) for name, vs in seen.items()}
    assert (got["CreateTopics"], got["DeleteTopics"]) == (7, 6)     # v6: topics by name or id


def test_librdkafka_versions(recorded):
    import confluent_kafka as ck
    broker, seen = recorded
    broker.topics.create("nv", 1)
    group = f"nv-{uuid.uuid4().hex[:6]}"
    p = ck.Producer({"bootstrap.servers": broker.bootstrap})
    p.produce("nv", b"x")
    assert p.flush(10) == 0
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe(["nv"])
    msg = None
    for _ in range(40):
        msg = c.poll(0.5)
        if msg is not None and not msg.error():
            break
    assert msg is not None and msg.value() == b"x"
    c.commit(asynchronous=False)
    c.close()
    got = {name: max(vs) for name, vs in seen.items()}
    print("librdkafka", ck.libversion()[0], sorted(got.items()))
    # librdkafka 2.x's own ceilings (rdkafka_request.c): Metadata 12, FindCoordinator 2,
    # JoinGroup 5, SyncGroup 3, Heartbeat 3, OffsetCommit 9, OffsetFetch 9 (KIP-848's member epochs)
    assert got["Metadata"] == 12
    assert got["FindCoordinator"] == 2
    assert got["JoinGroup"] == 5
    assert got["OffsetCommit"] == 9 and got["OffsetFetch"] == 9
    # Fetch 16: v13+ name topics by id (KIP-516), taken from Metadata; v16 hears of a new leader
    # with a refusal (KIP-951)
    assert got["Fetch"] == 16
    assert got["Produce"] == 10     # KIP-951's leader hints (librdkafka 2.4+)
    assert set(got) <= set(API_NAMES.values())
