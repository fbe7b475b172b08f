"""Throttling (KIP-219) end to end over raw requests, and the network layer's mechanism on its own:
a throttled response leaves at once and its connection then reads nothing for the throttle time;
versions that predate KIP-219 get the response itself delayed; a throttled fetch is answered
empty; acks=0 produce is muted without an answer; the request-time quota caps at one window.

The broker runs with quota.window.num=2 so a rate settles within a second or two."""
import socket
import struct
import time

import pytest

from fastkafka import records
from fastkafka.protocol import ApiKey
from fastkafka.security.client_quotas import DEFAULT
from fastkafka.server.quotas import ClientQuotas
from fastkafka.server.socket_server import SocketServer

from support.raw_client import RawClient, recv_exact


pytestmark = [pytest.mark.clients, pytest.mark.timeout(60)]


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def recv_frame(sock):
    (n,) = struct.unpack(">i", recv_exact(sock, 4))
    return recv_exact(sock, n)


# --- the processor's mechanism ------------------------------------------------------------------

def throttling_handler(req):
    """``M<ms>``: answer now, mute; ``L<ms>``: answer later; ``Z<ms>``: no answer, mute; else echo."""
    body = bytes(req.frame)
    chunks = [frame(body)]
    if body[:1] in (b"M", b"L", b"Z"):
        delay = int(body[1:].split(b":")[0]) / 1000
        {b"M": lambda: req.respond_then_mute(chunks, delay), b"L": lambda: req.respond_later(chunks, delay),
         b"Z": lambda: req.respond_then_mute(None, delay)}[body[:1]]()
    else:
        req.respond(chunks)


@pytest.fixture
def server():
    s = SocketServer(["PLAINTEXT://127.0.0.1:0"], submit=throttling_handler, num_network_threads=1,
                     max_request_bytes=1 << 20, max_connections=100, idle_ms=600_000)
    s.start()
    yield socket.create_connection(("127.0.0.1", s.bound["PLAINTEXT"][1]), timeout=10)
    s.shutdown(5)


def timed(sock, *bodies):
    """Send ``bodies`` pipelined; the seconds until each answer arrives."""
    start = time.monotonic()
    sock.sendall(b"".join(frame(b) for b in bodies))
    out = []
    for _ in bodies:
        recv_frame(sock)
        out.append(time.monotonic() - start)
    return out


def test_muted_after_the_response_not_before(server):
    first, second = timed(server, b"M400:x", b"next")
    assert first < 0.2                      # the throttled response leaves at once
    assert 0.38 <= second < 1.5             # the pipelined request waited out the mute


def test_old_versions_get_the_response_late(server):
    first, second = timed(server, b"L400:x", b"next")
    assert 0.38 <= first < 1.5 and second - first < 0.2


def test_no_response_and_muted(server):
    start = time.monotonic()
    server.sendall(frame(b"Z400") + frame(b"next"))
    assert recv_frame(server) == b"next"
    assert 0.38 <= time.monotonic() - start < 1.5


def test_a_connection_unmuted_early_by_a_past_deadline(server):
    # a mute that is over by the time the response is out costs nothing more
    assert timed(server, b"M0:x", b"next")[1] < 0.2


# --- the broker --------------------------------------------------------------------------------

def produce(topic, size, acks=1, batches=1):
    recs = b"".join(bytes(records.build_batch([(None, b"v" * (size // batches), [], 1_600_000_000_000)]))
                    for _ in range(batches))
    return {"acks": acks, "timeout_ms": 5000, "transactional_id": None,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": recs}]}]}


def fetch(topic, offset=0, max_bytes=1 << 20):
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": max_bytes, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                         "partition_max_bytes": max_bytes}]}]}


METADATA = (ApiKey.METADATA, 8, {"topics": [], "allow_auto_topic_creation": False})


@pytest.fixture
def broker(start_broker):
    b = start_broker(quota_window_num=2)
    b.topics.create("t", 1)
    return b


def set_quotas(broker, entity, **values):
    broker.metadata.set_quota_configs(entity, {k: str(v) for k, v in values.items()})


def test_produce_over_quota_answers_at_once_then_mutes(broker):
    set_quotas(broker, (None, DEFAULT), producer_byte_rate=20_000)   # each client id its own rate
    c = RawClient(broker.port, "fast-writer")
    resp, took = c.timed_call(ApiKey.PRODUCE, 7, produce("t", 30_000))
    throttle = resp.throttle_time_ms
    assert resp.responses[0].partition_responses[0].error_code == 0
    assert 300 <= throttle <= 1000 and took < 0.3         # 30 kB against 20 kB/s over one window
    _, waited = c.timed_call(*METADATA)                  # muted: read only after the throttle
    assert waited >= throttle / 1000 - took - 0.05
    # another client id is not throttled meanwhile
    other = RawClient(broker.port, "other-writer")
    assert other.call(ApiKey.PRODUCE, 7, produce("t", 5_000)).throttle_time_ms == 0


def test_old_produce_versions_get_a_late_response(broker):
    set_quotas(broker, (None, "old-client"), producer_byte_rate=20_000)
    c = RawClient(broker.port, "old-client")
    resp, took = c.timed_call(ApiKey.PRODUCE, 2, produce("t", 30_000))   # Produce v2 predates KIP-219
    assert resp.throttle_time_ms >= 300                      # v1+ carries it all the same
    assert took >= resp.throttle_time_ms / 1000 - 0.05
    _, waited = c.timed_call(*METADATA)                      # and nothing is left to wait for
    assert waited < 0.3


def test_acks_zero_is_muted_without_an_answer(broker):
    set_quotas(broker, ("ANONYMOUS", None), producer_byte_rate=20_000)
    c = RawClient(broker.port, "fire-and-forget")
    c.send(ApiKey.PRODUCE, 7, produce("t", 40_000, acks=0), expect_response=False)
    start = time.monotonic()
    c.call(*METADATA)
    assert time.monotonic() - start >= 0.8                # (40 kB - 20 kB/s) over 1 s: ~1 s of mute
    assert broker.topics.log("t", 0).log_end_offset == 1


def test_a_throttled_fetch_is_answered_empty(broker):
    writer = RawClient(broker.port, "writer")
    assert writer.call(ApiKey.PRODUCE, 7, produce("t", 30_000, batches=10)).throttle_time_ms == 0
    set_quotas(broker, (None, "reader"), consumer_byte_rate=20_000)
    c = RawClient(broker.port, "reader")
    offset, throttled, sizes = 0, 0, []
    deadline = time.monotonic() + 20
    while offset < 10 and time.monotonic() < deadline:
        resp = c.call(ApiKey.FETCH, 11, fetch("t", offset))
        if resp.throttle_time_ms:
            assert resp.responses == []          # no data while throttled (nor charged for)
            throttled += 1
            time.sleep(resp.throttle_time_ms / 1000)  # what a client does: wait the throttle
            continue
        recs = bytes(resp.responses[0].partitions[0].records)
        sizes.append(len(recs))
        offset = max(b.last_offset for b in records.iter_batches(recs)) + 1
    assert offset == 10 and throttled >= 1
    # max_bytes (1 MiB asked) is capped at what one quota window allows: 20 kB
    assert max(sizes) <= 20_000


def test_a_throttled_fetch_closes_its_session(broker):
    """A full fetch opening a session (epoch 0) is throttled: the session recorded an answer the
    client never got, so it is closed rather than left cached until evicted, and the client is
    told so (session id 0); its next full fetch opens another."""
    writer = RawClient(broker.port, "writer")
    assert writer.call(ApiKey.PRODUCE, 7, produce("t", 30_000, batches=4)).throttle_time_ms == 0
    set_quotas(broker, (None, "sessions"), consumer_byte_rate=10_000)
    c = RawClient(broker.port, "sessions")
    resp = c.call(ApiKey.FETCH, 11, dict(fetch("t"), session_epoch=0))
    assert resp.throttle_time_ms > 0 and resp.responses == [] and resp.session_id == 0
    assert broker.fetch_sessions.sessions() == []
    time.sleep(resp.throttle_time_ms / 1000 + 2.5)          # the rate forgets the burst
    again = c.call(ApiKey.FETCH, 11, dict(fetch("t", max_bytes=1000), session_epoch=0))
    assert again.throttle_time_ms == 0 and again.session_id != 0
    assert [s[0] for s in broker.fetch_sessions.sessions()] == [again.session_id]


def test_request_percentage_caps_throttling_at_one_window(broker):
    set_quotas(broker, (None, "busy"), request_percentage=0.001)
    c = RawClient(broker.port, "busy")
    throttles = [c.call(*METADATA).throttle_time_ms for _ in range(2)]
    assert throttles[0] == 1000                   # far over: capped at quota.window.size.seconds
    idle = RawClient(broker.port, "idle")
    assert idle.call(*METADATA).throttle_time_ms == 0


def test_request_percentage_charges_the_network_threads_time(broker):
    """A request's network-thread time (reading its frame, writing its response) is charged to the
    request-time quota once the response has left, as Kafka does. kafka-python reading 32 MB
    batches over and over costs the handlers little (the processor sendfile()s each Fetch's
    records) and the processor much: its handler time alone (about 0.1 % of a thread here) stays
    within request_percentage=0.5, its network time (1 to 5 %) does not."""
    from kafka import KafkaConsumer, TopicPartition
    writer = RawClient(broker.port, "writer")
    batch = bytes(records.build_batch([(None, b"v" * 1_000_000, [], 1_600_000_000_000)]))
    body = {"acks": 1, "timeout_ms": 5000, "transactional_id": None,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}
    for _ in range(32):
        assert writer.call(ApiKey.PRODUCE, 7, body).throttle_time_ms == 0
    set_quotas(broker, (None, "reader"), request_percentage=0.5)
    tp = TopicPartition("t", 0)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, client_id="reader", enable_auto_commit=False,
                      fetch_max_bytes=64 << 20, max_partition_fetch_bytes=64 << 20)
    try:
        c.assign([tp])
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            c.seek(tp, 0)
            read = 0
            while read < 32 and time.monotonic() < deadline:
                read += sum(len(msgs) for msgs in c.poll(200).values())
        throttle_max = c.metrics()["consumer-metrics"]["throttle-time-max"]
    finally:
        c.close()
    assert throttle_max > 0


def test_quotas_resolve_by_precedence_in_the_broker(broker):
    set_quotas(broker, (None, "app"), producer_byte_rate=1_000_000)
    set_quotas(broker, ("ANONYMOUS", "app"), producer_byte_rate=10_000)   # more specific: wins
    c = RawClient(broker.port, "app")
    assert c.call(ApiKey.PRODUCE, 7, produce("t", 30_000)).throttle_time_ms > 0
    set_quotas(broker, ("ANONYMOUS", "app"))       # removed: the client id's quota applies again
    time.sleep(2.5)                                # (the rate forgets the burst after two windows)
    c = RawClient(broker.port, "app")
    assert c.call(ApiKey.PRODUCE, 7, produce("t", 30_000)).throttle_time_ms == 0


def test_without_quotas_nothing_is_tracked(broker):
    quotas = ClientQuotas(samples=2, window_s=1, store=lambda: broker.metadata)
    quotas.bind()
    assert not quotas.enabled
    set_quotas(broker, (None, "x"), producer_byte_rate=1)
    assert quotas.enabled and quotas.produce.enabled and not quotas.fetch.enabled
    set_quotas(broker, (None, "x"))
    assert not quotas.enabled


def test_a_quota_that_is_not_a_positive_number_is_ignored():
    quotas = ClientQuotas(samples=2, window_s=1)
    quotas.configure({(None, "a"): {"producer_byte_rate": "0"}, (None, "b"): {"producer_byte_rate": "-5"},
                      (None, "c"): {"producer_byte_rate": "lots"}, (None, "d"): {"request_percentage": "nan"}})
    assert not quotas.enabled


def test_rates_keep_their_history_when_the_quota_changes():
    quotas = ClientQuotas(samples=11, window_s=1)
    quotas.configure({("alice", None): {"producer_byte_rate": "100000"}})
    assert quotas.produce.record("alice", "a", 500_000, 0) == 0          # 50 kB/s over 10 s
    quotas.configure({("alice", None): {"producer_byte_rate": "10000"}})  # lowered while running
    assert quotas.produce.record("alice", "a", 1, 10) > 0                 # the 500 kB still count
    quotas.configure({})
    assert not quotas.enabled and quotas.produce.record("alice", "a", 10**9, 20) == 0


def test_quotas_configured_by_hand_bind_without_a_store():
    # no metadata store to follow: the first tracked request's bind() leaves the quotas as configured
    quotas = ClientQuotas(samples=11, window_s=1)
    quotas.configure({("alice", None): {"producer_byte_rate": "1000"}})
    quotas.bind()
    assert quotas.enabled and quotas.produce.record("alice", "a", 1_000_000, 0) > 0
