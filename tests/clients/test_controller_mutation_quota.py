"""The controller mutation quota (KIP-599) with real clients: set and shown by ``fastkafka
configs``; kafka-python (CreateTopics v7, CreatePartitions v3, DeleteTopics v6: strict) has the
topics over the quota refused with THROTTLING_QUOTA_EXCEEDED and gets them through after the
throttle time; librdkafka (CreateTopics v4: permissive) has every topic created and its next
request held back for the throttle time.

The broker keeps quota.window.num=2 windows of 1 s, so a quota of 5 partitions per second has
a burst of 10: two topics of 8 partitions take the bucket to -6 (both admitted: it was not below
zero before either), which is 1.2 s of refill."""
import logging
import os
import subprocess
import sys
import time

import pytest


pytestmark = [pytest.mark.clients, pytest.mark.timeout(90), pytest.mark.broker_config(quota_window_num=2)]

THROTTLED = 89      # THROTTLING_QUOTA_EXCEEDED
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def configs_tool(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "fastkafka", "configs", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


def set_quota(broker, client_id: str, rate: float) -> None:
    configs_tool("--bootstrap-server", broker.bootstrap, "--alter", "--add-config",
                 f"controller_mutation_rate={rate}", "--entity-type", "clients", "--entity-name", client_id)
    shown = configs_tool("--bootstrap-server", broker.bootstrap, "--describe", "--entity-type", "clients",
                         "--entity-name", client_id)
    assert f"controller_mutation_rate={float(rate)}" in shown, shown
    # the broker applies it from its metadata store's listener
    deadline = time.monotonic() + 10
    while not broker.quotas.mutation.enabled:
        assert time.monotonic() < deadline, "the broker never saw the quota"
        time.sleep(0.01)  # poll interval


def kafka_python_admin(broker, client_id):
    from kafka import admin as kafka_admin
    return kafka_admin.KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id=client_id,
                                        request_timeout_ms=15000)


def throttles_seen(caplog) -> list[int]:
    """The throttle times kafka-python logged ("... throttled by broker (N ms)")."""
    return [int(r.args[-1]) for r in caplog.records if "throttled by broker" in r.getMessage()]


def wait_out(throttle_ms: int, since: float) -> None:
    """What an application does with a throttled admin client: wait the time it was told (the
    client refuses to send on the paused connection meanwhile)."""
    time.sleep(max(0.0, since + throttle_ms / 1000.0 + 0.05 - time.monotonic()))


def test_strict_create_topics_refuses_the_topics_over_the_quota(broker, caplog):
    caplog.set_level(logging.WARNING, logger="kafka")
    set_quota(broker, "strict-admin", 5)
    admin = kafka_python_admin(broker, "strict-admin")
    try:
        new = {"sa": {"num_partitions": 8, "replication_factor": 1},
               "sb": {"num_partitions": 8, "replication_factor": 1},
               "sc": {"num_partitions": 1, "replication_factor": 1}}
        got = admin.create_topics(new, raise_errors=False)
        answered = time.monotonic()
        assert [(t["name"], t["error_code"]) for t in got["topics"]] == [("sa", 0), ("sb", 0), ("sc", THROTTLED)]
        assert broker.topics.get("sa").partitions == 8 and broker.topics.get("sc") is None
        # the bucket is at -6 of 5 per second: 1.2 s to wait, said in throttle_time_ms
        assert throttles_seen(caplog) and 1000 <= throttles_seen(caplog)[-1] <= 1200
        # kafka-python pauses the connection that long (KIP-219); after it the topic goes through
        wait_out(throttles_seen(caplog)[-1], answered)
        again = admin.create_topics({"sc": {"num_partitions": 1, "replication_factor": 1}}, raise_errors=False)
        assert [(t["name"], t["error_code"]) for t in again["topics"]] == [("sc", 0)]
        assert broker.topics.get("sc").partitions == 1
    finally:
        admin.close()


def test_strict_create_partitions_and_delete_topics(broker, caplog):
    caplog.set_level(logging.WARNING, logger="kafka")
    for name in ("pa", "pb"):
        broker.topics.create(name, 4)
    set_quota(broker, "strict-deleter", 5)
    admin = kafka_python_admin(broker, "strict-deleter")
    try:
        # +12 partitions from a full bucket of 10: admitted, -2; the second topic is refused
        got = admin.create_partitions({"pa": 16, "pb": 5}, raise_errors=False)
        wait_out(throttles_seen(caplog)[-1], time.monotonic())
        assert [(r.name, r.error_code) for r in got.results] == [("pa", 0), ("pb", THROTTLED)]
        assert (broker.topics.get("pa").partitions, broker.topics.get("pb").partitions) == (16, 4)
        # DeleteTopics charges a topic's partitions: once the bucket is back at zero, deleting
        # "pa" (16) is admitted and "pb" behind it is refused
        deleted = admin.delete_topics(["pa", "pb"], raise_errors=False)
        wait_out(throttles_seen(caplog)[-1], time.monotonic())
        assert [(t["name"], t["error_code"]) for t in deleted["topics"]] == [("pa", 0), ("pb", THROTTLED)]
        assert broker.topics.get("pa") is None and broker.topics.get("pb") is not None
        deleted = admin.delete_topics(["pb"], raise_errors=False)
        assert [(t["name"], t["error_code"]) for t in deleted["topics"]] == [("pb", 0)]
        assert broker.topics.get("pb") is None
    finally:
        admin.close()


def test_an_older_client_is_throttled_not_refused(broker):
    from confluent_kafka import admin as ck_admin
    set_quota(broker, "older-admin", 5)
    throttles = []
    admin = ck_admin.AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "older-admin",
                                  "throttle_cb": lambda e: throttles.append(e.throttle_time)})
    new = [ck_admin.NewTopic(n, p, 1) for n, p in (("oa", 8), ("ob", 8), ("oc", 1))]
    for f in admin.create_topics(new, operation_timeout=10).values():
        f.result(15)                # CreateTopics v4: none refused
    assert [broker.topics.get(n).partitions for n in ("oa", "ob", "oc")] == [8, 8, 1]
    # -7 tokens: 1.4 s of throttle; the broker mutes the connection that long, so the next
    # request on it is answered late
    started = time.monotonic()
    for f in admin.create_topics([ck_admin.NewTopic("od", 1, 1)], operation_timeout=10).values():
        f.result(15)
    assert time.monotonic() - started >= 1.0
    admin.poll(0)
    assert throttles and max(throttles) >= 1.0      # (seconds, in the Python binding)
