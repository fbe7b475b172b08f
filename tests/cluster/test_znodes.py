"""Znode paths and JSON (no ZooKeeper needed), and the round-robin assignment rule."""
import doctest
import json

import pytest

from fastkafka import errors
from fastkafka.cluster import assignment, znodes
from fastkafka.cluster.assignment import assign_replicas

pytestmark = pytest.mark.timeout(30)


def test_docstring_examples():
    # (session's and zk_consumer's need a ZooKeeper: tests/test_docstrings.py runs them with one)
    for mod in (znodes, assignment):
        assert doctest.testmod(mod).failed == 0


def test_paths_are_the_seeds_layout():
    assert znodes.broker_path(3) == "/brokers/ids/3"
    assert znodes.topic_path("t") == "/brokers/topics/t"
    assert znodes.state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert znodes.config_topic_path("t") == "/config/topics/t"
    assert znodes.delete_topic_path("t") == "/admin/delete_topics/t"
    assert znodes.consumer_id_path("g", "h:1") == "/consumers/g/ids/h:1"
    assert znodes.owner_path("g", "t", 0) == "/consumers/g/owners/t/0"
    assert znodes.offset_path("g", "t", 5) == "/consumers/g/offsets/t/5"


def test_broker_info_json_is_kafkas_and_round_trips():
    b = znodes.BrokerInfo(2, "127.0.0.1", 9093, ("PLAINTEXT://127.0.0.1:9093",), timestamp="1700000000000")
    doc = json.loads(b.encode())
    assert doc == {"version": 4, "host": "127.0.0.1", "port": 9093, "jmx_port": -1,
                   "timestamp": "1700000000000", "endpoints": ["PLAINTEXT://127.0.0.1:9093"],
                   "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}}
    back = znodes.BrokerInfo.decode(2, b.encode())
    assert back == b and back.timestamp == "1700000000000"
    assert back.endpoint("PLAINTEXT") == ("127.0.0.1", 9093) and back.endpoint("SSL") is None


def test_broker_info_carries_each_listeners_security_protocol():
    b = znodes.BrokerInfo(2, "127.0.0.1", 9093, ("PLAINTEXT://127.0.0.1:9093", "SECURE://127.0.0.1:9094"),
                          security_protocols=(("SECURE", "SASL_SSL"),))
    doc = json.loads(b.encode())
    assert doc["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "SECURE": "SASL_SSL"}
    assert dict(znodes.BrokerInfo.decode(2, b.encode()).security_protocols) == {
        "PLAINTEXT": "PLAINTEXT", "SECURE": "SASL_SSL"}


def test_state_assignment_config_and_cluster_id_round_trip():
    st = znodes.PartitionState(leader=-1, leader_epoch=4, isr=(3,), controller_epoch=2)
    assert json.loads(st.encode()) == {"version": 1, "controller_epoch": 2, "leader": -1, "leader_epoch": 4,
                                       "isr": [3]}
    assert znodes.PartitionState.decode(st.encode()) == st
    a = znodes.TopicAssignment({0: (1, 2), 1: (2, 3)})
    assert json.loads(a.encode()) == {"version": 1, "partitions": {"0": [1, 2], "1": [2, 3]}}
    assert znodes.TopicAssignment.decode("t", a.encode()) == a
    c = znodes.EntityConfig({"retention.ms": "1000"})
    assert znodes.EntityConfig.decode("/config/topics/t", c.encode()) == c
    cid = znodes.ClusterId("q1Sh-9_ISia_zwGINzRvyQ")
    assert json.loads(cid.encode()) == {"version": "1", "id": "q1Sh-9_ISia_zwGINzRvyQ"}
    assert znodes.ClusterId.decode(cid.encode()) == cid
    reg = znodes.ConsumerRegistration({"t": 2})
    assert znodes.ConsumerRegistration.decode(reg.encode()).subscription == {"t": 2}
    assert znodes.decode_offset(znodes.encode_offset(42)) == 42
    assert znodes.decode_controller_epoch(znodes.encode_controller_epoch(7)) == 7


def test_producer_id_block_json_is_kafkas():
    assert znodes.LATEST_PRODUCER_ID_BLOCK == "/latest_producer_id_block"
    b = znodes.ProducerIdBlock(broker=3, block_start=2000, block_end=2999)
    assert json.loads(b.encode()) == {"version": 1, "broker": 3, "block_start": "2000", "block_end": "2999"}
    assert znodes.ProducerIdBlock.decode(b.encode()) == b
    for bad in (b'{"version":1,"broker":1}', b'{"version":1,"broker":1,"block_start":"x","block_end":"2"}',
                b'{"version":2,"broker":1,"block_start":"0","block_end":"9"}'):
        with pytest.raises(znodes.ZnodeDataError):
            znodes.ProducerIdBlock.decode(bad)


@pytest.mark.parametrize("data", [None, b"", b"not json", b"[1]", b'{"version": 99, "leader": 1}'])
def test_bad_or_newer_documents_are_a_clear_error(data):
    with pytest.raises(znodes.ZnodeDataError):
        znodes.PartitionState.decode(data, "/brokers/topics/t/partitions/0/state")


def test_controller_id_is_the_first_contender():
    ids = [znodes.ControllerInfo(i).encode().decode() for i in (5, 2)]
    assert znodes.controller_id(ids) == 5
    assert znodes.controller_id(["garbage"]) == -1


def test_round_robin_spreads_partitions_and_preferred_leaders():
    a = assign_replicas([3, 1, 2], 6, 1, start=0)
    assert [r[0] for r in a.values()] == [1, 2, 3, 1, 2, 3]
    a = assign_replicas([1, 2, 3], 3, 3)
    assert sorted(r[0] for r in a.values()) == [1, 2, 3]
    assert all(len(set(r)) == 3 for r in a.values())
    with pytest.raises(errors.InvalidReplicationFactorError):
        assign_replicas([1, 2], 1, 3)
    with pytest.raises(errors.InvalidPartitionsError):
        assign_replicas([1], 0, 1)
