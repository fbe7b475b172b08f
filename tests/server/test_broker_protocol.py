"""The broker driven with raw Kafka requests over a socket: exact semantics clients rely on."""
import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastkafka import errors, legacy, records
from fastkafka import protocol as P
from fastkafka.protocol import ApiKey
from fastkafka.server.handlers.admin import MAX_PARTITIONS_PER_REQUEST

from support.raw_client import RawClient as Raw, recv_exact


pytestmark = pytest.mark.timeout(60)


def produce_body(topic, partition, recs, acks=1):
    return {"acks": acks, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": recs}]}]}


def fetch_body(topic, partition, offset, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20):
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                {"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                 "partition_max_bytes": max_bytes}]}],
            "forgotten_topics_data": []}


def batch(*values, ts=1_600_000_000_000):
    return records.build_batch([(None, v, [], ts + i) for i, v in enumerate(values)])


def part(resp):
    """The single partition of a Produce/Fetch response."""
    return resp.responses[0].partition_responses[0] if hasattr(resp.responses[0], "partition_responses") \
        else resp.responses[0].partitions[0]


def test_pipelined_requests_are_answered_in_order(broker):
    broker.topics.create("pipe", 1)
    c = Raw(broker.port)
    kinds = []
    for i in range(30):  # mixed APIs, all in flight at once
        if i % 3 == 0:
            c.send(ApiKey.PRODUCE, 7, produce_body("pipe", 0, batch(b"%d" % i)))
        elif i % 3 == 1:
            c.send(ApiKey.METADATA, 8, {"topics": [{"name": "pipe"}]})
        else:
            c.send(ApiKey.API_VERSIONS, 0, {})
        kinds.append(i % 3)
    offsets = []
    for k in kinds:  # recv() asserts every correlation id comes back in send order
        resp = c.recv()
        if k == 0:
            assert part(resp).error_code == 0
            offsets.append(part(resp).base_offset)
    assert offsets == list(range(10))


def test_acks_zero_sends_nothing_but_appends(broker):
    broker.topics.create("fire", 1)
    c = Raw(broker.port)
    c.sock.sendall(P.encode_request(ApiKey.PRODUCE, 7, 99, produce_body("fire", 0, batch(b"a", b"b"), acks=0)))
    c.sock.sendall(P.encode_request(ApiKey.PRODUCE, 7, 100, produce_body("nope", 0, batch(b"c"), acks=0)))
    resp = c.call(ApiKey.METADATA, 1, {"topics": [{"name": "fire"}]})  # next bytes answer this
    assert resp.topics[0].name == "fire"
    c.sock.settimeout(0.3)
    with pytest.raises(socket.timeout):
        c.sock.recv(1)
    assert broker.topics.log("fire", 0).log_end_offset == 2


def test_produce_errors_per_partition(broker):
    broker.topics.create("errs", 1, configs={"max.message.bytes": "2000"})
    c = Raw(broker.port)
    body = {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "errs", "partition_data": [
            {"index": 0, "records": batch(b"ok")},
            {"index": 7, "records": batch(b"no such partition")}]},
        {"name": "missing", "partition_data": [{"index": 0, "records": batch(b"x")}]}]}
    resp = c.call(ApiKey.PRODUCE, 7, body)
    codes = [(t.name, p.index, p.error_code) for t in resp.responses for p in t.partition_responses]
    assert codes == [("errs", 0, 0), ("errs", 7, 3), ("missing", 0, 3)]
    corrupt = bytearray(batch(b"payload"))
    corrupt[-1] ^= 0xFF  # CRC no longer matches
    assert part(c.call(ApiKey.PRODUCE, 7, produce_body("errs", 0, bytes(corrupt)))).error_code == 2
    big = batch(b"x" * 5000)
    assert part(c.call(ApiKey.PRODUCE, 7, produce_body("errs", 0, big))).error_code == 10
    old = legacy.build_message_set([(None, b"v1", 1000)], magic=1)
    assert part(c.call(ApiKey.PRODUCE, 3, produce_body("errs", 0, old))).error_code == 43
    assert part(c.call(ApiKey.PRODUCE, 7, produce_body("errs", 0, batch(b"bad acks"), acks=2))).error_code == 21
    assert broker.topics.log("errs", 0).log_end_offset == 1  # only the good batch landed


def test_legacy_produce_is_stored_as_v2_and_down_converted_for_old_fetchers(broker):
    broker.topics.create("old", 1)
    c = Raw(broker.port)
    m0 = legacy.build_message_set([(b"k", b"magic0", None)], magic=0)
    m1 = legacy.build_message_set([(None, b"magic1-a", 1000), (None, b"magic1-b", 2000)], magic=1,
                                  compression=legacy.GZIP if hasattr(legacy, "GZIP") else 1)
    assert part(c.call(ApiKey.PRODUCE, 0, produce_body("old", 0, m0))).error_code == 0
    r = part(c.call(ApiKey.PRODUCE, 2, produce_body("old", 0, m1)))
    assert (r.error_code, r.base_offset) == (0, 1)
    v11 = part(c.call(ApiKey.FETCH, 11, fetch_body("old", 0, 0)))
    stored = list(records.iter_batches(bytes(v11.records)))
    assert bytes(v11.records)[16] == 2  # kept as v2 batches
    assert [r.value for b in stored for r in b.records()] == [b"magic0", b"magic1-a", b"magic1-b"]
    for version, magic in ((0, 0), (2, 1), (3, 1)):
        resp = part(c.call(ApiKey.FETCH, version, fetch_body("old", 0, 0)))
        msgs = list(legacy.iter_messages(bytes(resp.records)))
        assert [m.value for m in msgs] == [b"magic0", b"magic1-a", b"magic1-b"]
        assert [m.offset for m in msgs] == [0, 1, 2]
        assert bytes(resp.records)[16] == magic


def test_fetch_long_poll_is_woken_by_an_append_and_times_out_otherwise(broker):
    broker.topics.create("poll", 1)
    fetcher, producer = Raw(broker.port), Raw(broker.port)
    t0 = time.monotonic()
    resp = part(fetcher.call(ApiKey.FETCH, 11, fetch_body("poll", 0, 0, max_wait_ms=300)))
    assert time.monotonic() - t0 >= 0.25 and resp.error_code == 0 and len(resp.records or b"") == 0
    fetcher.send(ApiKey.FETCH, 11, fetch_body("poll", 0, 0, max_wait_ms=10_000))
    deadline = time.monotonic() + 10
    while broker.fetch_purgatory.watched() != 1:      # the long poll is parked, waiting for data
        assert time.monotonic() < deadline, "the fetch never waited in the purgatory"
        time.sleep(0.005)                             # poll interval
    t0 = time.monotonic()
    assert part(producer.call(ApiKey.PRODUCE, 7, produce_body("poll", 0, batch(b"wake")))).error_code == 0
    resp = part(fetcher.recv())
    assert time.monotonic() - t0 < 3
    assert [r.value for b in records.iter_batches(bytes(resp.records)) for r in b.records()] == [b"wake"]
    assert resp.high_watermark == 1


def test_fetch_kip74_first_batch_whole_and_offset_out_of_range(broker):
    broker.topics.create("big", 1)
    c = Raw(broker.port)
    c.call(ApiKey.PRODUCE, 7, produce_body("big", 0, batch(b"x" * 10_000)))
    c.call(ApiKey.PRODUCE, 7, produce_body("big", 0, batch(b"y" * 10)))
    resp = part(c.call(ApiKey.FETCH, 11, fetch_body("big", 0, 0, max_bytes=100)))
    got = list(records.iter_batches(bytes(resp.records)))
    assert len(got) == 1 and got[0].records()[0].value == b"x" * 10_000
    resp = part(c.call(ApiKey.FETCH, 11, fetch_body("big", 0, 5)))
    assert resp.error_code == 1 and resp.high_watermark == 2
    body = fetch_body("big", 0, 0)
    body["session_id"], body["session_epoch"] = 1234, 1    # an incremental fetch in no session
    assert c.call(ApiKey.FETCH, 11, body).error_code == 70


def test_list_offsets_v0_and_by_timestamp(broker):
    broker.topics.create("lo", 1)
    c = Raw(broker.port)
    for i in range(5):
        c.call(ApiKey.PRODUCE, 7, produce_body("lo", 0, batch(b"m", ts=1000 * (i + 1))))
    req = lambda ts: {"replica_id": -1, "topics": [{"name": "lo", "partitions": [  # noqa: E731
        {"partition_index": 0, "timestamp": ts, "max_num_offsets": 10}]}]}
    r0 = c.call(ApiKey.LIST_OFFSETS, 0, req(-1)).topics[0].partitions[0]
    assert r0.error_code == 0 and r0.old_style_offsets[0] == 5
    assert c.call(ApiKey.LIST_OFFSETS, 0, req(-2)).topics[0].partitions[0].old_style_offsets == [0]
    r = c.call(ApiKey.LIST_OFFSETS, 5, req(2500)).topics[0].partitions[0]
    assert (r.offset, r.timestamp) == (2, 3000)
    r = c.call(ApiKey.LIST_OFFSETS, 1, req(-2)).topics[0].partitions[0]
    assert r.offset == 0


def test_unsupported_api_versions_version_gets_error_35_with_ranges(broker):
    c = Raw(broker.port)
    # ApiVersions v9: the header is flexible, the body unknown; the answer is a v0 body.
    c.sock.sendall(P.encode_request(ApiKey.API_VERSIONS, 3, 5, {}, "x")[:6] + b"\x00\x09"
                   + P.encode_request(ApiKey.API_VERSIONS, 3, 5, {}, "x")[8:])
    (n,) = struct.unpack(">i", recv_exact(c.sock, 4))
    corr, resp = P.decode_response(ApiKey.API_VERSIONS, 0, recv_exact(c.sock, n))
    assert corr == 5 and resp.error_code == 35
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert ranges[ApiKey.PRODUCE] == (0, 10) and ranges[ApiKey.FETCH] == (0, 16)
    assert all(lo == 0 for lo, _ in ranges.values())


def test_unknown_api_and_garbage_close_only_that_connection(broker):
    broker.topics.create("safe", 1)
    good = Raw(broker.port)
    assert part(good.call(ApiKey.PRODUCE, 7, produce_body("safe", 0, batch(b"before")))).error_code == 0
    for junk in (struct.pack(">ihhi", 8, 999, 0, 1),                 # unknown api key
                 struct.pack(">ihhi", 8, ApiKey.PRODUCE, 42, 1),     # unsupported produce version
                 struct.pack(">i", 3) + b"abc",                      # header too short
                 b"\xff\xff\xff\xf0" + b"x" * 20,                   # negative size
                 b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"):               # HTTP: a ~1.2 GB frame size
        bad = Raw(broker.port)
        bad.sock.sendall(junk)
        assert bad.closed()
    assert part(good.call(ApiKey.PRODUCE, 7, produce_body("safe", 0, batch(b"after")))).base_offset == 1


def test_more_partitions_than_the_broker_can_map_is_invalid_partitions(broker):
    too_many = MAX_PARTITIONS_PER_REQUEST + 1
    raw = Raw(broker.port)
    t0 = time.monotonic()
    resp = raw.call(ApiKey.CREATE_TOPICS, 4, {"topics": [
        {"name": "huge", "num_partitions": too_many, "replication_factor": 1, "assignments": [],
         "configs": []}], "timeout_ms": 5000, "validate_only": False})
    assert resp.topics[0].error_code == errors.InvalidPartitionsError.code
    assert broker.topics.get("huge") is None
    broker.topics.create("grow", 1)
    resp = raw.call(ApiKey.CREATE_PARTITIONS, 1, {"topics": [
        {"name": "grow", "count": too_many, "assignments": None}], "timeout_ms": 5000,
        "validate_only": False})
    assert resp.results[0].error_code == errors.InvalidPartitionsError.code
    assert broker.topics.get("grow").partitions == 1
    assert time.monotonic() - t0 < 30     # refused up front, not after creating thousands


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_requests_get_an_answer_or_a_clean_disconnect(broker, data):
    broker.topics.create("fuzz", 1) if broker.topics.get("fuzz") is None else None
    key, version, body = data.draw(st.sampled_from([
        (ApiKey.PRODUCE, 7, produce_body("fuzz", 0, batch(b"seed"))),
        (ApiKey.FETCH, 11, fetch_body("fuzz", 0, 0)),
        (ApiKey.METADATA, 8, {"topics": [{"name": "fuzz"}]}),
        (ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "topics": [{"name": "fuzz", "partitions": [
            {"partition_index": 0, "timestamp": -1}]}]}),
        (ApiKey.CREATE_TOPICS, 4, {"topics": [{"name": "fz", "num_partitions": 1, "replication_factor": 1,
                                               "assignments": [], "configs": []}]}),
    ]))
    frame = bytearray(P.encode_request(key, version, 1, body, "fuzz"))
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(4, len(frame) - 1))
        frame[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        frame = frame[:data.draw(st.integers(4, len(frame)))]
        frame[:4] = struct.pack(">i", len(frame) - 4)
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    s.sendall(bytes(frame))
    # only bounds the wait: a mutated CreateTopics may legitimately ask for thousands of
    # partitions (up to MAX_PARTITIONS_PER_REQUEST), seconds of work on a loaded machine
    s.settimeout(60)
    try:
        head = s.recv(4)
    except ConnectionResetError:
        head = b""
    if head:  # an answer: a whole, well-formed frame
        (n,) = struct.unpack(">i", head)
        got = b""
        while len(got) < n:
            chunk = s.recv(n - len(got))
            assert chunk
            got += chunk
    s.close()
    probe = Raw(broker.port)  # the broker is alive and the log intact
    assert probe.call(ApiKey.API_VERSIONS, 0, {}).error_code == 0
    log = broker.topics.log("fuzz", 0)
    assert log.read(0, 1 << 20).length >= 0
