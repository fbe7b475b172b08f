"""Client quotas in cluster mode: stored where Kafka stores them (``/config/users|clients/...``,
sanitized names, Kafka's JSON), set through one broker and applied by every broker, also when
written straight into ZooKeeper (as ``kafka-configs.sh --zookeeper`` did)."""
import json
import socket
import struct

import pytest

from fastkafka import protocol as P
from fastkafka import records
from fastkafka.cluster import znodes
from fastkafka.protocol import ApiKey

from support.harness import BrokerProc, wait_for, zk_client


pytestmark = [pytest.mark.zk, pytest.mark.timeout(120)]


def call(port, client_id, key, version, body):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(P.encode_request(key, version, 1, body, client_id))
        head = _exact(s, 4)
        _, resp = P.decode_response(key, version, _exact(s, struct.unpack(">i", head)[0]))
        return resp


def _exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "closed by the broker"
        buf += chunk
    return buf


def alter(port, parts, ops):
    resp = call(port, "admin", ApiKey.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [{
        "entity": [{"entity_type": t, "entity_name": n} for t, n in parts],
        "ops": [{"key": k, "value": float(v or 0), "remove": v is None} for k, v in ops.items()]}]})
    assert [e.error_code for e in resp.entries] == [0], resp


def describe(port):
    resp = call(port, "admin", ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": [], "strict": False})
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in resp.entries}


def produce_throttle(port, client_id) -> int:
    recs = bytes(records.build_batch([(None, b"v" * 30_000, [], 1_600_000_000_000)]))
    resp = call(port, client_id, ApiKey.PRODUCE, 7, {"acks": 1, "timeout_ms": 5000, "transactional_id": None,
                                                     "topic_data": [{"name": "nowhere", "partition_data": [
                                                         {"index": 0, "records": recs}]}]})
    return resp.throttle_time_ms     # charged whatever the partition's answer (here: not found)


def metadata_throttle(port, client_id) -> int:
    return call(port, client_id, ApiKey.METADATA, 8, {"topics": [], "allow_auto_topic_creation": False}
                ).throttle_time_ms


def test_a_quota_set_through_one_broker_applies_on_another(ensemble, tmp_path, request):
    connect = f"{ensemble.connect}/{request.node.name}"
    procs = {i: BrokerProc(str(tmp_path), connect, i, **{"quota.window.num": 2}).start() for i in (1, 2)}
    zk = zk_client(connect)
    try:
        wait_for(lambda: zk.exists(znodes.BROKER_IDS) and len(zk.get_children(znodes.BROKER_IDS)) == 2,
                 timeout=30, what="both brokers registered")
        one, two = procs[1].port, procs[2].port
        assert produce_throttle(two, "metered") == 0
        # through broker 1: the default user's quota for client id "metered" (Kafka's <default>)
        alter(one, [("user", None), ("client-id", "metered")], {"producer_byte_rate": 20_000})
        doc = json.loads(zk.get("/config/users/<default>/clients/metered")[0])
        assert doc == {"version": 1, "config": {"producer_byte_rate": "20000"}}
        # broker 2 learns it through its watches and throttles the client
        assert wait_for(lambda: produce_throttle(two, "metered"), timeout=15, what="throttled on broker 2") > 0
        assert describe(two) == {(("user", None), ("client-id", "metered")): {"producer_byte_rate": 20_000.0}}
        # a user's quota shares its znode (sanitized name) with SCRAM credentials
        alter(two, [("user", "app@example.com")], {"consumer_byte_rate": 4096})
        assert json.loads(zk.get("/config/users/app%40example.com")[0])["config"] == {"consumer_byte_rate": "4096"}
        wait_for(lambda: (("user", "app@example.com"),) in describe(one), timeout=15, what="broker 1 sees it")
        # removed through broker 2: broker 1 stops throttling (once the burst has left its windows)
        alter(two, [("user", None), ("client-id", "metered")], {"producer_byte_rate": None})
        assert not zk.exists("/config/users/<default>/clients/metered")
        wait_for(lambda: produce_throttle(one, "metered") == 0, timeout=15, what="unthrottled on broker 1")
        # written straight into ZooKeeper, as Kafka's own tools could: every broker applies it
        zk.create("/config/clients/batch%20job", json.dumps(
            {"version": 1, "config": {"request_percentage": "0.001"}}).encode(), makepath=True)
        for port in (one, two):
            assert wait_for(lambda p=port: metadata_throttle(p, "batch job"), timeout=15, what="request quota") == 1000
        assert metadata_throttle(one, "another job") == 0
    finally:
        zk.stop()
        for p in procs.values():
            p.stop()
