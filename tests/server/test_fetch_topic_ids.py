"""Fetch v13-v15 (KIP-516 topic ids, KIP-903's replica_state) against a real broker, raw requests:
topics named and answered by id, UNKNOWN_TOPIC_ID for an id no topic has (also one of a deleted
topic whose name was reused), the long poll woken by an append to a topic named by id."""
import threading
import time
import uuid

import pytest

from fastkafka import errors as E
from fastkafka.protocol import ApiKey
from fastkafka.records import build_batch, iter_batches

from support.raw_client import RawClient as Raw


def produce(port, topic, values):
    r = Raw(port).call(ApiKey.PRODUCE, 7, {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": build_batch([(None, v, [], 1) for v in values])}]}]})
    assert r.responses[0].partition_responses[0].error_code == 0


def fetch(c, version, topic_ids, max_wait_ms=0, **extra):
    return c.call(ApiKey.FETCH, version, dict({
        "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
        "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic_id": t, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}
                   for t in topic_ids]}, **extra))


def values(partition) -> list[bytes]:
    return [r.value for b in iter_batches(bytes(partition.records or b"")) for r in b.records()]


@pytest.mark.parametrize("version", [13, 14, 15])
def test_fetch_names_topics_by_id(broker, version):
    tid = broker.topics.create("ids", 1).topic_id
    produce(broker.port, "ids", [b"a", b"b"])
    c = Raw(broker.port)
    unknown = uuid.uuid4()
    r = fetch(c, version, [tid, unknown])
    assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in r.responses] == [
        (tid, [0]), (unknown, [E.UnknownTopicIdError.code])]
    assert values(r.responses[0].partitions[0]) == [b"a", b"b"]
    assert r.responses[0].partitions[0].high_watermark == 2


def test_a_reused_name_is_another_topic(broker):
    old = broker.topics.create("reused", 1).topic_id
    produce(broker.port, "reused", [b"old"])
    broker.topics.delete("reused")
    new = broker.topics.create("reused", 1).topic_id
    produce(broker.port, "reused", [b"new"])
    r = fetch(Raw(broker.port), 13, [old, new])
    assert [(t.topic_id, t.partitions[0].error_code) for t in r.responses] == [
        (old, E.UnknownTopicIdError.code), (new, 0)]
    assert values(r.responses[1].partitions[0]) == [b"new"]


def test_v15_replica_state_and_long_poll_by_id(broker):
    tid = broker.topics.create("polled", 1).topic_id
    c = Raw(broker.port)
    # a consumer's v15 fetch carries no replica_state: it reads up to the high watermark, and the
    # long poll wakes on the append (watched under the topic's name, found from its id)
    timer = threading.Timer(0.3, produce, (broker.port, "polled", [b"late"]))
    timer.start()
    started = time.monotonic()
    r = fetch(c, 15, [tid], max_wait_ms=10000)
    timer.join()
    assert time.monotonic() - started < 8
    assert values(r.responses[0].partitions[0]) == [b"late"]
    # replica_state naming a broker on a single broker: no replication here, answered as a read
    r = fetch(c, 15, [tid], replica_state={"replica_id": -1, "replica_epoch": -1})
    assert r.responses[0].partitions[0].error_code == 0
