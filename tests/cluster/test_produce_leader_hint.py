"""Produce v10's and Fetch v16's leader hint (KIP-951): a broker that refuses a partition as not
led there names its leader, and that leader's address on the listener the request came in on. Real ZooKeeper,
three real broker processes, each with two listeners; fastkafka's own codecs for the raw
requests and confluent-kafka's producer across leadership moves."""
import pytest
from confluent_kafka import ElectionType
from confluent_kafka.admin import AdminClient

from fastkafka import records
from fastkafka.protocol import ApiKey

from support.harness import Cluster, create_replicated, raw_call, wait_for
from support.zk import free_port
from test_leadership import Streaming, elect, leaders, restart_preferred_leader
from test_replication import read_all

pytestmark = [pytest.mark.clients, pytest.mark.zk, pytest.mark.timeout(300)]

NOT_LEADER_OR_FOLLOWER = 6


@pytest.fixture
def two_listeners(ensemble, tmp_path, request):
    """Brokers 1-3 on PLAINTEXT (127.0.0.1, what brokers and the harness use) and on EXTERNAL,
    advertised as ``localhost`` on its own port: a hint must give the asker's listener."""
    cluster = Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3)
    external = {}
    for i, b in cluster.brokers.items():
        external[i] = free_port()
        b.props.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{b.port},EXTERNAL://127.0.0.1:{external[i]}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{b.port},EXTERNAL://localhost:{external[i]}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT"})
    with cluster:
        yield cluster, external


def produce(topic, value):
    batch = records.build_batch([(None, value, [], 1_700_000_000_000)])
    return {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def answer(port, version, topic):
    """(the single partition's answer, the response) of a Produce sent to 127.0.0.1:port."""
    r = raw_call(port, ApiKey.PRODUCE, version, produce(topic, b"v%d" % version))
    return r.responses[0].partition_responses[0], r


def fetch_answer(port, version, topic_id):
    """(the single partition's answer, the response) of a Fetch by topic id sent to 127.0.0.1:port."""
    r = raw_call(port, ApiKey.FETCH, version, {
        "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
        "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic_id": topic_id, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    return r.responses[0].partitions[0], r


def test_refused_produce_and_fetch_name_the_leader_on_the_askers_listener(two_listeners):
    cluster, external = two_listeners
    # replication factor 2 of 3: one refusing broker follows (its replica knows the leader),
    # the other holds no replica at all (its metadata cache does)
    create_replicated(cluster, "hint", 1, rf=2)
    state = cluster.state("hint", 0)
    leader, epoch = state.leader, state.leader_epoch
    follower = next(r for r in cluster.assignment("hint")[0] if r != leader)
    outsider = next(i for i in cluster.brokers if i not in cluster.assignment("hint")[0])

    for asked in (follower, outsider):
        for port, where in ((cluster.brokers[asked].port, ("127.0.0.1", cluster.brokers[leader].port)),
                            (external[asked], ("localhost", external[leader]))):
            # (the asked broker applies the controller's election in its own time)
            p, r = wait_for(lambda port=port: (a := answer(port, 10, "hint"))[0].current_leader is not None
                            and a[0].current_leader.leader_id >= 0 and a, what=f"broker {asked} knows the leader")
            assert p.error_code == NOT_LEADER_OR_FOLLOWER
            assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, epoch)
            assert [(n.node_id, n.host, n.port, n.rack) for n in r.node_endpoints] == [(leader, *where, None)]

        # v9 has no hint: the same refusal, and nothing on the wire to decode into the fields
        p, r = answer(cluster.brokers[asked].port, 9, "hint")
        assert p.error_code == NOT_LEADER_OR_FOLLOWER
        assert p.current_leader is None and r.node_endpoints == []

    # the leader takes the write: a success carries no hint
    p, r = answer(external[leader], 10, "hint")
    assert p.error_code == 0 and p.current_leader is None and r.node_endpoints == []

    # Fetch v16 (by topic id) is refused by the others the same way; v15 without the hint
    (t,) = raw_call(cluster.brokers[leader].port, ApiKey.METADATA, 12, {"topics": [{"name": "hint"}]}).topics
    for asked in (follower, outsider):
        p, r = fetch_answer(external[asked], 16, t.topic_id)
        assert p.error_code == NOT_LEADER_OR_FOLLOWER
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, epoch)
        assert [(n.node_id, n.host, n.port) for n in r.node_endpoints] == [(leader, "localhost", external[leader])]
        p, r = fetch_answer(cluster.brokers[asked].port, 15, t.topic_id)
        assert p.error_code == NOT_LEADER_OR_FOLLOWER and p.current_leader is None and r.node_endpoints == []
    p, r = fetch_answer(external[leader], 16, t.topic_id)
    assert p.error_code == 0 and p.current_leader is None and r.node_endpoints == []


def test_librdkafka_produces_across_leadership_moves(cluster):
    """An idempotent acks=all confluent-kafka producer (Produce v10) streams while a preferred
    election moves every partition's leadership back to a restarted broker: the old leaders,
    still up, refuse with the hint; every acknowledged record is there once, none failed."""
    create_replicated(cluster, "moving", 3, min_insync_replicas=2)
    preferred, away = restart_preferred_leader(cluster, "moving", 3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    with Streaming(cluster, "moving", 3) as load:
        load.more(300, "records acknowledged before the election")
        assert all(e is None for p, e in elect(admin, ElectionType.PREFERRED, "moving", away).items())
        assert leaders(cluster, "moving", 3) == preferred
        load.more(300, "records acknowledged after the election")
    assert not load.failed, load.failed[:5]
    got = read_all(cluster, "moving", 3)
    values = [v for p in range(3) for _, v in got[p]]
    assert sorted(values) == sorted(load.acked) and len(set(values)) == len(values)
