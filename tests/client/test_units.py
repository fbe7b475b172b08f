"""Client pieces that need no network: murmur2 parity, partitioners, config, the accumulator."""
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

with warnings.catch_warnings():   # kafka-python's import-time deprecation noise
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import murmur2 as kp_murmur2

from fastkafka.client import HashPartitioner, Murmur2Partitioner, murmur2
from fastkafka.client.accumulator import RecordAccumulator
from fastkafka.client.config import ClientConfig, ConfigException, parse_servers
from fastkafka.client.connection import negotiate
from fastkafka.client.partitioner import get_partitioner

pytestmark = pytest.mark.timeout(60)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200), st.integers(1, 1000))
def test_murmur2_matches_kafka_python(key, n):
    assert murmur2(key) & 0xFFFFFFFF == kp_murmur2(key)
    assert Murmur2Partitioner().partition(key, n) == (kp_murmur2(key) & 0x7FFFFFFF) % n


def test_murmur2_java_vectors():
    # Kafka's UtilsTest.testMurmur2 vectors (Java signed ints)
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(bytearray(b"21")) == murmur2(memoryview(b"21"))


def test_hash_partitioner_is_stable_and_in_range():
    p = HashPartitioner()
    assert p.partition(b"", 5) == 0
    assert p.partition(b"abc", 1000) == (((97 * 31 + 98) * 31 + 99) % 1000)
    assert all(0 <= p.partition(bytes([i]) * 50, 7) < 7 for i in range(256))


def test_get_partitioner_by_name_class_instance():
    assert isinstance(get_partitioner("hash"), HashPartitioner)
    assert isinstance(get_partitioner(HashPartitioner), HashPartitioner)
    assert isinstance(get_partitioner("fastkafka.client.partitioner:Murmur2Partitioner"),
                      Murmur2Partitioner)
    with pytest.raises(TypeError):
        get_partitioner(object())


def test_config_aliases_defaults_and_errors():
    c = ClientConfig({"metadata.broker.list": "a:1", "queue.time": "7", "request.required.acks": "1",
                      "compression.codec": "gzip", "auto.offset.reset": "smallest"})
    assert (c["bootstrap.servers"], c["linger.ms"], c["acks"], c["compression.type"],
            c["auto.offset.reset"]) == (["a:1"], 7, 1, "gzip", "earliest")
    assert c["batch.size"] == 16384 and c["enable.idempotence"] is True
    with pytest.raises(ConfigException, match="lingr"):
        ClientConfig({"lingr.ms": 1})
    with pytest.raises(ConfigException, match="acks"):
        ClientConfig({"acks": 2})
    with pytest.raises(ConfigException, match="producer.type"):
        ClientConfig({"producer.type": "fast"})
    assert parse_servers(["h", "PLAINTEXT://x:9", "[::1]:7"]) == [("h", 9092), ("x", 9), ("::1", 7)]


def test_negotiate_picks_highest_common_version():
    assert negotiate({0: (0, 11), 1: (5, 20), 3: (13, 14), 777: (0, 3)}) == {0: 10, 1: 12}


def test_accumulator_readiness_and_split():
    acc = RecordAccumulator(batch_size=100, max_messages=10, enqueue_timeout_ms=0)
    assert not acc.append(("t", 0), [(None, b"x" * 10, None, None)] * 2, 20)
    assert acc.drain(linger_s=60) == []               # neither full nor lingered
    assert [len(r) for _, r in acc.drain(linger_s=0)] == [2]
    assert acc.append(("t", 1), [(None, b"x" * 40, None, None)] * 5, 200)
    chunks = acc.drain(linger_s=60)
    assert [len(r) for _, r in chunks] == [2, 2, 1]   # ~batch.size each
    with pytest.raises(Exception, match="queue full"):
        acc.append(("t", 2), [(None, b"", None, None)] * 5, 5)   # 7 + 5 > 10, no waiting
    acc.release(7)
    assert acc.queued == 0


def test_accumulator_append_one_counts_fills_and_back_pressure():
    acc = RecordAccumulator(batch_size=30, max_messages=3, enqueue_timeout_ms=0)
    rec = (None, b"x" * 10, None, None)
    assert acc.append_one(("t", 0), rec, 10) is False     # first record: a new partition
    assert acc.append_one(("t", 0), rec, 10) is False
    assert acc.append_one(("t", 0), rec, 10) is True      # 30 bytes: this one filled the batch
    with pytest.raises(Exception, match="queue full"):
        acc.append_one(("t", 0), rec, 10)                 # 3 queued = max, no waiting
    [(tp, recs)] = acc.drain(linger_s=60)
    assert tp == ("t", 0) and recs == [rec] * 3
    acc.release(3)
    acc.close()
    with pytest.raises(Exception, match="closed"):
        acc.append_one(("t", 0), rec, 10)
