"""Cluster mode end to end: real ZooKeeper, three real ``fastkafka serve`` processes, real clients."""
import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from fastkafka import errors
from fastkafka import records
from fastkafka.cluster import znodes
from fastkafka.cluster.producer_ids import ZkBlockStore
from fastkafka.protocol import ApiKey

from support.harness import SESSION_MS, BrokerProc, Cluster, raw_call, wait_for, zk_client
from support.zk import Ensemble, require_java


pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(120)]

NOT_LEADER = 6
LOAD_IN_PROGRESS, NOT_COORDINATOR = 14, 16


def admin(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def settle(futures) -> None:
    for f in futures.values():
        f.result()


def create(cluster, topic: str, partitions: int, bootstrap: str | None = None) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap or cluster.bootstrap})  # must outlive its futures
    settle(a.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=15))


def produce(bootstrap: str, topic: str, partitions, per_partition: int = 5) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 20000})
    for part in partitions:
        for i in range(per_partition):
            p.produce(topic, key=b"k%d" % part, value=b"%d-%d" % (part, i), partition=part)
    assert p.flush(30) == 0


def consume(bootstrap: str, topic: str, partitions, expect: int, timeout: float = 30.0) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{time.monotonic_ns()}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    got, deadline = [], time.monotonic() + timeout
    while len(got) < expect and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.partition(), m.value()))
    c.close()
    return got


def leaders(cluster, topic: str, n: int) -> dict[int, int]:
    return {p: cluster.state(topic, p).leader for p in range(n)}


SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def live_files(cluster, prefix: str) -> list[str]:
    """Segment files of ``prefix*`` partitions not yet marked ``.deleted`` (removal itself is delayed)."""
    return [f for b in cluster.brokers.values() for d in os.listdir(b.log_dir) if d.startswith(prefix)
            for f in os.listdir(os.path.join(b.log_dir, d)) if f.endswith(SEGMENT_SUFFIXES)]


def owner(cluster, broker_id: int) -> int:
    return cluster.zk.exists(znodes.broker_path(broker_id)).ephemeralOwner


# --- the happy path: registry, spread, routing, admin ---

def test_registry_spread_routing_and_admin(cluster):
    for b in cluster.brokers.values():
        data, stat = cluster.zk.get(znodes.broker_path(b.broker_id))
        doc = json.loads(data)
        assert stat.ephemeralOwner != 0
        assert (doc["version"], doc["host"], doc["port"], doc["jmx_port"]) == (4, "127.0.0.1", b.port, -1)
        assert doc["endpoints"] == [f"PLAINTEXT://127.0.0.1:{b.port}"] and doc["timestamp"].isdigit()
    cid = znodes.ClusterId.decode(cluster.zk.get(znodes.CLUSTER_ID)[0]).id
    assert len(cid) == 22 and set(cid) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    create(cluster, "spread", 6)
    assert set(leaders(cluster, "spread", 6).values()) == {1, 2, 3}
    assert {r for rs in cluster.assignment("spread").values() for r in rs} == {1, 2, 3}
    for b in cluster.brokers.values():  # every broker tells the same story
        md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
        assert md.cluster_id == cid and set(md.brokers) == {1, 2, 3}
        assert md.controller_id == cluster.controller()
        assert {p: m.leader for p, m in md.topics["spread"].partitions.items()} == leaders(cluster, "spread", 6)

    produce(cluster.bootstrap, "spread", range(6))
    got = consume(cluster.bootstrap, "spread", range(6), 30)
    assert sorted(got) == sorted((p, b"%d-%d" % (p, i)) for p in range(6) for i in range(5))

    # a non-leader refuses with NOT_LEADER_OR_FOLLOWER, the leader serves
    lead = leaders(cluster, "spread", 6)[0]
    other = next(b for b in cluster.brokers.values() if b.broker_id != lead)
    batch = records.build_batch([(None, b"x", [], 1_700_000_000_000)])
    body = {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": "spread", "partition_data": [{"index": 0, "records": batch}]}]}
    resp = raw_call(other.port, ApiKey.PRODUCE, 7, body)
    assert resp.responses[0].partition_responses[0].error_code == NOT_LEADER
    fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
             "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "topics": [
                 {"topic": "spread", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                     "partition_max_bytes": 1 << 20}]}]}
    assert raw_call(other.port, ApiKey.FETCH, 11, fetch).responses[0].partitions[0].error_code == NOT_LEADER
    resp = raw_call(cluster.brokers[lead].port, ApiKey.FETCH, 11, fetch)
    assert resp.responses[0].partitions[0].error_code == 0 and resp.responses[0].partitions[0].high_watermark == 5

    # partition additions and deletion go through ZooKeeper and the controller
    a = admin(cluster)
    settle(a.create_partitions([NewPartitions("spread", 9)], operation_timeout=15))
    wait_for(lambda: all(cluster.state("spread", p) for p in range(9)), what="states of new partitions")
    assert len(cluster.assignment("spread")) == 9
    settle(a.delete_topics(["spread"], operation_timeout=15))
    wait_for(lambda: not cluster.zk.exists(znodes.topic_path("spread")), what="topic znodes deleted")
    assert not cluster.zk.exists(znodes.delete_topic_path("spread"))
    wait_for(lambda: not live_files(cluster, "spread-"), what="logs deleted on every broker")


def test_duplicate_broker_id_is_refused_and_clean_shutdown_deregisters(cluster):
    before = owner(cluster, 2)
    dup = BrokerProc(cluster.directory, cluster.connect, 2).start()
    assert dup.wait_exit(30) == 1
    assert "broker.id 2 is already registered" in dup.output()
    assert owner(cluster, 2) == before  # the live broker's registration is untouched

    t0 = time.monotonic()
    assert cluster.brokers[3].stop() == 0
    assert not cluster.zk.exists(znodes.broker_path(3))
    assert time.monotonic() - t0 < 15


# --- group coordination: one broker per group ---

def find_coordinator(port: int, group: str) -> int | None:
    r = raw_call(port, ApiKey.FIND_COORDINATOR, 1, {"key": group, "key_type": 0})
    return r.node_id if r.error_code == 0 else None


def test_group_requests_to_a_broker_that_is_not_the_coordinator_get_not_coordinator(cluster):
    create(cluster, "gt", 1)
    group = "routed"
    coord = wait_for(lambda: find_coordinator(cluster.brokers[1].port, group), what="a coordinator")
    assert {find_coordinator(b.port, group) for b in cluster.brokers.values()} == {coord}
    right = cluster.brokers[coord].port
    wrong = [b.port for b in cluster.brokers.values() if b.broker_id != coord]
    commit = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
              "retention_time_ms": -1, "topics": [{"name": "gt", "partitions": [
                  {"partition_index": 0, "committed_offset": 7, "committed_metadata": ""}]}]}
    fetch = {"group_id": group, "topics": [{"name": "gt", "partition_indexes": [0]}]}
    join = {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
            "member_id": "", "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}

    def commit_code(port):
        return raw_call(port, ApiKey.OFFSET_COMMIT, 2, commit).topics[0].partitions[0].error_code
    # the coordinator may still be loading its partitions at first: that, and only that, is 14
    codes = []
    wait_for(lambda: codes.append(commit_code(right)) or codes[-1] != LOAD_IN_PROGRESS, what="loaded")
    assert codes[-1] == 0
    r = raw_call(right, ApiKey.OFFSET_FETCH, 3, fetch)
    assert (r.error_code, r.topics[0].partitions[0].committed_offset) == (0, 7)
    assert raw_call(right, ApiKey.DESCRIBE_GROUPS, 0, {"groups": [group]}).groups[0].error_code == 0
    lg = raw_call(right, ApiKey.LIST_GROUPS, 1, {})
    assert lg.error_code == 0 and group in {g.group_id for g in lg.groups}
    for port in wrong:
        assert commit_code(port) == NOT_COORDINATOR
        r = raw_call(port, ApiKey.OFFSET_FETCH, 3, fetch)
        assert r.error_code == NOT_COORDINATOR
        assert raw_call(port, ApiKey.OFFSET_FETCH, 1, fetch).topics[0].partitions[0].error_code == NOT_COORDINATOR
        assert raw_call(port, ApiKey.JOIN_GROUP, 1, join).error_code == NOT_COORDINATOR
        hb = {"group_id": group, "generation_id": 1, "member_id": "m"}
        assert raw_call(port, ApiKey.HEARTBEAT, 1, hb).error_code == NOT_COORDINATOR
        assert raw_call(port, ApiKey.LEAVE_GROUP, 1, {"group_id": group, "member_id": "m"}).error_code == NOT_COORDINATOR
        assert raw_call(port, ApiKey.DESCRIBE_GROUPS, 0, {"groups": [group]}).groups[0].error_code == NOT_COORDINATOR
        lg = raw_call(port, ApiKey.LIST_GROUPS, 1, {})  # each broker lists the groups it coordinates
        assert lg.error_code == 0 and group not in {g.group_id for g in lg.groups}


# --- producer ids: one sequence for the whole cluster ---

def init_producer_id(port: int) -> int:
    r = raw_call(port, ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60000})
    assert r.error_code == 0, r.error_code
    return r.producer_id


def latest_block(zk) -> znodes.ProducerIdBlock:
    return znodes.ProducerIdBlock.decode(zk.get(znodes.LATEST_PRODUCER_ID_BLOCK)[0])


def test_producer_id_blocks_never_overlap_under_contention(ensemble, request):
    zk = zk_client(f"{ensemble.connect}/{request.node.name}")
    try:
        stores = [ZkBlockStore(zk, b) for b in (1, 2, 3)]
        starts, lock = [], threading.Lock()

        def reserve(store):
            for _ in range(15):
                start = store.reserve(5)
                with lock:
                    starts.append(start)
        threads = [threading.Thread(target=reserve, args=(s,)) for s in stores * 2]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(starts) == list(range(0, 90 * 5, 5))   # 90 blocks of 5, none shared, none lost
        assert (latest_block(zk).block_start, latest_block(zk).block_end) == (445, 449)
        zk.set(znodes.LATEST_PRODUCER_ID_BLOCK, b"garbage")  # never guessed past
        with pytest.raises(errors.KafkaStorageError):
            stores[0].reserve(5)
    finally:
        zk.stop()
        zk.close()


def test_init_producer_id_is_unique_across_brokers_and_restarts(ensemble, tmp_path, request):
    with Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3,
                 **{"producer.id.block.size": 2}) as cluster:
        ports = {i: b.port for i, b in cluster.brokers.items()}
        with ThreadPoolExecutor(12) as pool:   # every broker reserves blocks at once
            ids = list(pool.map(init_producer_id, list(ports.values()) * 10))
        assert len(set(ids)) == len(ids) == 30
        first = latest_block(cluster.zk)
        assert first.block_end >= max(ids) and first.block_end - first.block_start == 1
        assert first.broker in ports
        for b in cluster.brokers.values():     # cluster mode keeps no per-broker file
            assert not os.path.exists(os.path.join(b.log_dir, "producer_id_block"))

        cluster.brokers[2].stop()
        cluster.brokers[2].start()
        cluster.wait_registered({1, 2, 3})
        after = [init_producer_id(ports[2])]
        block = latest_block(cluster.zk)
        assert (block.broker, block.block_start) == (2, first.block_end + 1)   # the znode advanced
        assert after[0] == block.block_start
        after += [init_producer_id(p) for p in ports.values() for _ in range(3)]
        assert len(set(ids + after)) == len(ids) + len(after)
        assert latest_block(cluster.zk).block_end > block.block_end


# --- failures ---

@pytest.mark.crash
def test_kill_9_broker_goes_offline_and_comes_back(cluster):
    create(cluster, "k9", 6)
    lead = leaders(cluster, "k9", 6)
    victim = cluster.controller() % 3 + 1  # not the controller: that is the next test
    mine = [p for p, b in lead.items() if b == victim]
    produce(cluster.bootstrap, "k9", range(6))
    cluster.brokers[victim].kill()
    wait_for(lambda: victim not in cluster.registered(), SESSION_MS / 1000 + 10, what="ephemeral node gone")
    wait_for(lambda: all(cluster.state("k9", p).leader == -1 for p in mine), what="controller marks them offline")
    for p in mine:
        st = cluster.state("k9", p)
        assert (st.leader_epoch, st.isr) == (1, (victim,))  # offline, kept for its only replica
    live = [p for p in range(6) if p not in mine]
    md = admin(cluster).list_topics("k9", timeout=10).topics["k9"].partitions
    assert all(md[p].leader == -1 for p in mine) and all(md[p].leader == lead[p] for p in live)
    produce(cluster.bootstrap, "k9", live, per_partition=1)  # the rest of the cluster carries on

    cluster.brokers[victim].start()
    wait_for(lambda: all(cluster.state("k9", p).leader == victim for p in mine), 30, what="leadership back")
    assert all(cluster.state("k9", p).leader_epoch == 2 for p in mine)
    got = consume(cluster.bootstrap, "k9", mine, 5 * len(mine))
    assert len(got) == 5 * len(mine)  # its data survived kill -9


@pytest.mark.crash
def test_controller_killed_another_is_elected(cluster):
    old = cluster.controller()
    epoch = int(cluster.zk.get(znodes.CONTROLLER_EPOCH)[0])
    cluster.brokers[old].kill()
    new = wait_for(lambda: (c := cluster.controller()) not in (-1, old) and c, SESSION_MS / 1000 + 15,
                   what="a new controller")
    assert new in cluster.brokers and cluster.brokers[new].alive()
    wait_for(lambda: int(cluster.zk.get(znodes.CONTROLLER_EPOCH)[0]) > epoch, what="epoch bumped")
    create(cluster, "after", 4, bootstrap=cluster.brokers[new].bootstrap)
    states = [cluster.state("after", p) for p in range(4)]
    assert {s.leader for s in states} == set(cluster.brokers) - {old}
    assert all(s.controller_epoch > epoch for s in states)


def test_broker_paused_past_its_session_re_registers(cluster):
    create(cluster, "pause", 3)
    victim = cluster.controller() % 3 + 1
    before = owner(cluster, victim)
    mine = [p for p, b in leaders(cluster, "pause", 3).items() if b == victim]
    cluster.brokers[victim].signal(signal.SIGSTOP)
    try:
        wait_for(lambda: victim not in cluster.registered(), SESSION_MS / 1000 + 10, what="session expired")
        wait_for(lambda: all(cluster.state("pause", p).leader == -1 for p in mine), what="offline")
    finally:
        cluster.brokers[victim].signal(signal.SIGCONT)
    wait_for(lambda: victim in cluster.registered(), 30, what="re-registered")
    assert owner(cluster, victim) != before  # a new session
    wait_for(lambda: all(cluster.state("pause", p).leader == victim for p in mine), 30, what="leader again")
    produce(cluster.bootstrap, "pause", range(3), per_partition=2)
    assert len(consume(cluster.bootstrap, "pause", range(3), 6)) == 6


def test_zookeeper_ensemble_of_three_loses_its_leader(tmp_path):
    require_java()
    with Ensemble(tmp_path / "zk", size=3) as zk, Cluster(tmp_path, zk.connect, 3) as cluster:
        create(cluster, "quorum", 3)
        sessions = {b: owner(cluster, b) for b in cluster.brokers}
        zk.kill(zk.leader())
        zk.wait_serving(30)
        produce(cluster.bootstrap, "quorum", range(3))
        create(cluster, "quorum2", 3)  # the controller still works
        assert {owner(cluster, b) for b in cluster.brokers} == set(sessions.values())  # sessions survived
        assert cluster.registered() == {1, 2, 3}
        assert len(consume(cluster.bootstrap, "quorum", range(3), 15)) == 15


def alter_config(port: int, resource_type: int, name: str, key: str, value: str | None) -> int:
    """IncrementalAlterConfigs SET ``key`` (DELETE when ``value`` is None) through the broker on
    ``port``; the error code."""
    op = {"name": key, "config_operation": 0, "value": value} if value is not None else \
        {"name": key, "config_operation": 1}
    resp = raw_call(port, ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"resources": [{
        "resource_type": resource_type, "resource_name": name, "configs": [op]}]})
    return resp.responses[0].error_code


def stored_config(cluster, path: str) -> dict:
    data, _ = cluster.zk.get(path)
    return dict(znodes.EntityConfig.decode(path, data).config)


def test_cluster_wide_broker_config_altered_through_one_broker_applies_on_every_broker(cluster):
    """/config/brokers/<default> in Kafka's layout; each broker's topics without an override
    follow it through the watch; a broker's own resource is altered only at that broker."""
    create(cluster, "bcfg", 3)
    first = cluster.brokers[1]
    assert alter_config(first.port, 4, "", "message.max.bytes", "300") == 0
    assert stored_config(cluster, znodes.config_broker_path("<default>")) == {"message.max.bytes": "300"}

    def everyone_says():
        for b in cluster.brokers.values():
            r = raw_call(b.port, ApiKey.DESCRIBE_CONFIGS, 1, {"resources": [
                {"resource_type": 2, "resource_name": "bcfg", "configuration_keys": ["max.message.bytes"]}]})
            if (r.results[0].configs[0].value, r.results[0].configs[0].config_source) != ("300", 3):
                return False
        return True
    wait_for(everyone_says, what="every broker to report the cluster-wide message.max.bytes")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "message.timeout.ms": 10000})
    errs = []
    for part in range(3):       # one partition led by each broker, as assigned
        p.produce("bcfg", value=b"x" * 1000, partition=part, on_delivery=lambda err, m: errs.append(err))
    p.flush(15)
    assert len(errs) == 3 and all(e is not None and e.name() == "MSG_SIZE_TOO_LARGE" for e in errs), errs
    assert alter_config(first.port, 4, "2", "message.max.bytes", "400") == errors.InvalidRequestError.code
    assert alter_config(first.port, 4, "", "message.max.bytes", None) == 0
    assert not cluster.zk.exists(znodes.config_broker_path("<default>"))


def test_topic_config_altered_through_one_broker_applies_on_the_leader(cluster):
    create(cluster, "cfg", 1)
    leader = cluster.state("cfg", 0).leader
    other = next(b for i, b in cluster.brokers.items() if i != leader)
    assert alter_config(other.port, 2, "cfg", "max.message.bytes", "300") == 0
    assert stored_config(cluster, znodes.config_topic_path("cfg")) == {"max.message.bytes": "300"}

    def leader_says():
        r = raw_call(cluster.brokers[leader].port, ApiKey.DESCRIBE_CONFIGS, 1, {"resources": [
            {"resource_type": 2, "resource_name": "cfg", "configuration_keys": ["max.message.bytes"]}]})
        c = r.results[0].configs[0]
        return (c.value, c.config_source) == ("300", 1)
    wait_for(leader_says, what="the leader to report the new max.message.bytes")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "message.timeout.ms": 10000})
    errs = []
    p.produce("cfg", value=b"x" * 1000, on_delivery=lambda err, m: errs.append(err))
    p.flush(15)
    assert errs and errs[0] is not None and errs[0].name() == "MSG_SIZE_TOO_LARGE", errs
