"""Incremental fetch sessions (KIP-227) against a real broker: kafka-python's consumer (which uses
them by default) end to end, and each of Kafka's session rules with raw Fetch v12 requests."""
import threading
import time
from types import SimpleNamespace

import pytest

from fastkafka import errors as E
from fastkafka.protocol import ApiKey
from fastkafka.records import build_batch, iter_batches
from fastkafka.server.fetch_sessions import FetchSessionCache

from support.brokers import running_broker
from support.raw_client import RawClient as Raw


pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]
NOT_FOUND, BAD_EPOCH = E.FetchSessionIdNotFoundError.code, E.InvalidFetchSessionEpochError.code


def produce(port, topic, partition, values):
    r = Raw(port).call(ApiKey.PRODUCE, 7, {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition,
                                            "records": build_batch([(None, v, [], 1) for v in values])}]}]})
    assert r.responses[0].partition_responses[0].error_code == 0


def fetch(c, session_id, epoch, topics=(), forgotten=(), max_wait_ms=0, replica_id=-1):
    """``topics``: ``{topic: {partition: fetch offset}}``; ``forgotten``: ``{topic: [partitions]}``."""
    return c.call(ApiKey.FETCH, 12, {
        "replica_id": replica_id, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": session_id, "session_epoch": epoch, "rack_id": "",
        "topics": [{"topic": t, "partitions": [{"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20}
                                               for p, o in parts.items()]} for t, parts in dict(topics).items()],
        "forgotten_topics_data": [{"topic": t, "partitions": list(ps)} for t, ps in dict(forgotten).items()]})


def answered(r) -> dict:
    """``{(topic, partition): (error code, high watermark, values)}`` of a response."""
    return {(t.topic, p.partition_index): (p.error_code, p.high_watermark,
                                           [rec.value for b in iter_batches(bytes(p.records or b""))
                                            for rec in b.records()])
            for t in r.responses for p in t.partitions}


def produce_batches(port, first):
    """50 records to each partition of kp-sessions, from number ``first``, in batches of 5."""
    for p in range(4):
        for i in range(first, first + 50, 5):
            produce(port, "kp-sessions", p, [b"%d-%d" % (p, j) for j in range(i, i + 5)])


def test_kafka_python_consumer_fetches_incrementally(broker):
    import kafka
    from kafka import KafkaConsumer, TopicPartition
    assert kafka.__version__.startswith("3.")
    broker.topics.create("kp-sessions", 4)
    produce_batches(broker.port, 0)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                      consumer_timeout_ms=30_000, fetch_max_wait_ms=100, max_partition_fetch_bytes=512)
    assert c.config["enable_incremental_fetch_sessions"]
    c.assign([TopicPartition("kp-sessions", p) for p in range(4)])
    c.seek_to_beginning()
    got = {p: [] for p in range(4)}
    n = 0
    for m in c:
        got[m.partition].append((m.offset, m.value))
        n += 1
        if n == 200:
            # more records while the session is open: incremental fetches must answer them
            produce_batches(broker.port, 50)
        if n == 400:
            break
    sessions = broker.fetch_sessions.sessions()
    c.close()
    for p in range(4):
        assert got[p] == [(i, b"%d-%d" % (p, i)) for i in range(100)]    # in order, none twice, none lost
    # one session of the four partitions, and many incremental fetches accepted on it (its epoch)
    assert [(parts, epoch > 5) for _, epoch, parts in sessions] == [(4, True)]
    assert broker.fetch_sessions.num_partitions() == 4


def test_incremental_fetch_answers_only_changed_partitions(broker):
    broker.topics.create("s", 3)
    produce(broker.port, "s", 0, [b"a", b"b"])
    produce(broker.port, "s", 1, [b"c"])
    c = Raw(broker.port)
    r = fetch(c, 0, 0, {"s": {0: 0, 1: 0, 2: 0}, "gone": {0: 0}})
    sid = r.session_id
    assert r.error_code == 0 and sid > 0
    assert answered(r) == {("s", 0): (0, 2, [b"a", b"b"]), ("s", 1): (0, 1, [b"c"]), ("s", 2): (0, 0, []),
                           ("gone", 0): (E.UnknownTopicOrPartitionError.code, -1, [])}
    assert broker.fetch_sessions.sessions() == [(sid, 1, 4)]
    # the fetcher moved on in 0 and 1; nothing else changed: only the failing partition is answered
    r = fetch(c, sid, 1, {"s": {0: 2, 1: 1}})
    assert (r.error_code, r.session_id) == (0, sid)
    assert answered(r) == {("gone", 0): (E.UnknownTopicOrPartitionError.code, -1, [])}
    # forget the failing one; an append to 2 is the only news, and the request lists nothing
    r = fetch(c, sid, 2, forgotten={"gone": [0]})
    assert answered(r) == {} and r.session_id == sid
    produce(broker.port, "s", 2, [b"d"])
    r = fetch(c, sid, 3)
    assert answered(r) == {("s", 2): (0, 1, [b"d"])}
    # partition 2 still fetches from 0 (the session's offset): its records come again, hw unchanged
    r = fetch(c, sid, 4)
    assert answered(r) == {("s", 2): (0, 1, [b"d"])}
    r = fetch(c, sid, 5, {"s": {2: 1}})
    assert answered(r) == {}
    assert broker.fetch_sessions.sessions() == [(sid, 6, 3)]


def test_session_errors(broker):
    broker.topics.create("e", 1)
    c = Raw(broker.port)
    for sid, epoch in ((12345, 1), (0, 3)):      # no such session (id 0 with an epoch > 0 included)
        r = fetch(c, sid, epoch, {"e": {0: 0}})
        assert (r.error_code, r.session_id, r.responses) == (NOT_FOUND, 0, [])
    sid = fetch(c, 0, 0, {"e": {0: 0}}).session_id
    r = fetch(c, sid, 5)
    assert (r.error_code, r.session_id, r.responses) == (BAD_EPOCH, 0, [])
    assert fetch(c, sid, 1).error_code == 0
    assert fetch(c, sid, 1).error_code == BAD_EPOCH        # a repeated request
    assert fetch(c, sid, 2).error_code == 0                # the session is intact


def test_closing_and_reopening(broker):
    broker.topics.create("c", 2)
    produce(broker.port, "c", 0, [b"x"])
    c = Raw(broker.port)
    sid = fetch(c, 0, 0, {"c": {0: 0, 1: 0}}).session_id
    # epoch -1 closes the session and is answered as a sessionless full fetch
    r = fetch(c, sid, -1, {"c": {0: 0}})
    assert (r.error_code, r.session_id) == (0, 0) and answered(r) == {("c", 0): (0, 1, [b"x"])}
    assert broker.fetch_sessions.sessions() == []
    assert fetch(c, sid, 1).error_code == NOT_FOUND
    # epoch 0 on a session closes it and opens another
    sid = fetch(c, 0, 0, {"c": {0: 0}}).session_id
    r = fetch(c, sid, 0, {"c": {1: 0}})
    assert r.session_id not in (0, sid) and answered(r) == {("c", 1): (0, 0, [])}
    assert broker.fetch_sessions.sessions() == [(r.session_id, 1, 1)]
    assert fetch(c, sid, 1).error_code == NOT_FOUND
    # forgetting every partition closes the session too: answered without one
    r = fetch(c, r.session_id, 1, forgotten={"c": [1]})
    assert (r.error_code, r.session_id, r.responses) == (0, 0, [])
    assert broker.fetch_sessions.sessions() == []


def test_long_poll_waits_on_every_session_partition(broker):
    broker.topics.create("lp", 2)
    c = Raw(broker.port)
    sid = fetch(c, 0, 0, {"lp": {0: 0, 1: 0}}).session_id
    timer = threading.Timer(0.3, produce, (broker.port, "lp", 1, [b"late"]))
    timer.start()
    started = time.monotonic()
    r = fetch(c, sid, 1, max_wait_ms=20_000)       # lists no partition: waits on the session's two
    timer.join()
    assert time.monotonic() - started < 15
    assert (r.session_id, answered(r)) == (sid, {("lp", 1): (0, 1, [b"late"])})


def test_a_newer_request_on_the_session_fails_the_waiting_one(broker):
    broker.topics.create("w", 1)
    c, other = Raw(broker.port), Raw(broker.port)
    sid = fetch(c, 0, 0, {"w": {0: 0}}).session_id
    c.send(ApiKey.FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 20_000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": sid, "session_epoch": 1, "rack_id": "", "topics": [], "forgotten_topics_data": []})
    deadline = time.monotonic() + 10
    while broker.fetch_sessions.sessions() != [(sid, 2, 1)]:      # the waiting request was accepted
        assert time.monotonic() < deadline
        time.sleep(0.01)  # poll interval
    assert fetch(other, sid, 2).error_code == 0
    produce(broker.port, "w", 0, [b"v"])
    r = c.recv()
    assert (r.error_code, r.session_id, r.responses) == (BAD_EPOCH, sid, [])


def test_cache_full_then_eviction(tmp_path):
    with running_broker(tmp_path / "data", max_incremental_fetch_session_cache_slots=1,
                        min_incremental_fetch_session_eviction_ms=1000) as broker:
        broker.topics.create("f", 2)
        a, b = Raw(broker.port), Raw(broker.port)
        first = fetch(a, 0, 0, {"f": {0: 0}}).session_id
        assert first > 0
        # full, and the one session is neither idle nor old: no session, an ordinary full answer
        r = fetch(b, 0, 0, {"f": {0: 0, 1: 0}})
        assert r.session_id == 0 and set(answered(r)) == {("f", 0), ("f", 1)}
        # a follower's session is privileged: it evicts a consumer's even when that one is young
        r = fetch(b, 0, 0, {"f": {0: 0}}, replica_id=1)
        assert r.session_id not in (0, first) and broker.fetch_sessions.evictions == 1
        assert fetch(a, first, 1).error_code == NOT_FOUND
        follower = r.session_id
        # a consumer may not evict a follower's young session; once it has been idle long enough it may
        assert fetch(a, 0, 0, {"f": {0: 0, 1: 0}}).session_id == 0
        deadline = time.monotonic() + 10
        while (sid := fetch(a, 0, 0, {"f": {0: 0}}).session_id) == 0:
            assert time.monotonic() < deadline
        assert sid != follower and broker.fetch_sessions.evictions == 2
        assert [s[0] for s in broker.fetch_sessions.sessions()] == [sid]


def test_no_slots_no_sessions(tmp_path):
    with running_broker(tmp_path / "data", max_incremental_fetch_session_cache_slots=0) as broker:
        broker.topics.create("z", 1)
        r = fetch(Raw(broker.port), 0, 0, {"z": {0: 0}})
        assert (r.error_code, r.session_id, list(answered(r))) == (0, 0, [("z", 0)])


def test_eviction_prefers_bigger_and_privileged_sessions():
    """tryEvict's order with a clock we move: an old small session gives way to a bigger one, never
    to an equal or smaller one; a consumer never evicts a follower's session that is not idle."""
    now = [0.0]
    cache = FetchSessionCache(max_slots=1, eviction_ms=1000, clock=lambda: now[0])

    def open_session(n, privileged=False):
        parts = [SimpleNamespace(partition=i, fetch_offset=0, partition_max_bytes=1) for i in range(n)]
        res = [dict(partition_index=i, error_code=0, high_watermark=0, last_stable_offset=0, log_start_offset=0,
                    records=b"") for i in range(n)]
        return cache.context(12, 0, 0, [("t", None, parts)], [], privileged).answer([("t", None, res)])[1]

    small = open_session(2)
    now[0] = 500
    assert open_session(5) == 0                # the small one is young
    now[0] = 1500
    cache.context(12, small, 1, [], [], False).answer([])   # keeps it from idling
    assert open_session(2) == 0 and open_session(1) == 0    # old now, but not less valuable
    bigger = open_session(3)
    assert bigger > 0 and cache.evictions == 1 and cache.num_partitions() == 3
    now[0] = 3000
    follower = open_session(1, privileged=True)            # idle past the eviction time: evicted
    assert follower > 0 and cache.evictions == 2
    now[0] = 3500
    assert open_session(50) == 0                           # a young follower session stays
    now[0] = 4600
    cache.context(12, follower, 1, [], [], True).answer([("t", None, [])])
    assert open_session(50) == 0                           # old but busy, and privileged: stays


def test_partitions_answered_with_records_go_last(broker):
    """The next fetch's max_bytes goes first to the partitions that got nothing last time."""
    broker.topics.create("o", 3)
    c = Raw(broker.port)
    sid = fetch(c, 0, 0, {"o": {0: 0, 1: 0, 2: 0}}).session_id
    produce(broker.port, "o", 0, [b"a"])
    assert list(answered(fetch(c, sid, 1))) == [("o", 0)]
    produce(broker.port, "o", 1, [b"b"])
    produce(broker.port, "o", 2, [b"c"])
    r = fetch(c, sid, 2)
    assert list(answered(r)) == [("o", 1), ("o", 2), ("o", 0)]


def test_v13_sessions_key_partitions_by_topic_id(broker):
    tid = broker.topics.create("ids", 2).topic_id
    c = Raw(broker.port)

    def fetch13(session_id, epoch, parts=(), forget=()):
        return c.call(ApiKey.FETCH, 13, {
            "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": session_id,
            "session_epoch": epoch, "rack_id": "",
            "topics": [{"topic_id": tid, "partitions": [{"partition": p, "fetch_offset": 0,
                                                         "partition_max_bytes": 1 << 20} for p in parts]}]
            if parts else [],
            "forgotten_topics_data": [{"topic_id": tid, "partitions": list(forget)}] if forget else []})

    sid = fetch13(0, 0, [0, 1]).session_id
    assert sid > 0 and fetch13(sid, 1).responses == []
    produce(broker.port, "ids", 1, [b"x"])
    r = fetch13(sid, 2)
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in r.responses] == [(tid, [1])]
    assert fetch13(sid, 3, forget=[1]).responses == [] and broker.fetch_sessions.sessions() == [(sid, 4, 1)]
    # a session opened naming topics by id does not serve a request naming them (nor the reverse)
    r = fetch(c, sid, 4)
    assert (r.error_code, r.responses) == (E.FetchSessionTopicIdError.code, [])


def test_session_metrics_are_scraped(tmp_path):
    """Kafka's FetchSessionCache metrics on metrics.port (prometheus_client is a test dependency)."""
    import urllib.request
    with running_broker(tmp_path / "data", metrics_port=0, max_incremental_fetch_session_cache_slots=1) as broker:
        broker.topics.create("m", 3)
        c = Raw(broker.port)
        fetch(c, 0, 0, {"m": {0: 0, 1: 0, 2: 0}})
        fetch(c, 0, 0, {"m": {0: 0}}, replica_id=1)        # evicts the consumer's session
        text = urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10).read().decode()
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if line.startswith("kafka_server_fetchsession"))
    assert {k: float(v) for k, v in samples.items()} == {
        "kafka_server_fetchsessioncache_numincrementalfetchsessions": 1.0,
        "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached": 1.0,
        "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total": 1.0}
