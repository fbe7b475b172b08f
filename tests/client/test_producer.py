"""Our Producer against our broker, read back with confluent-kafka (librdkafka)."""
import threading
import time

import pytest
from confluent_kafka import Producer as CkProducer

from fastkafka import errors, records
from fastkafka.client import (CallbackHandler, HashPartitioner, Murmur2Partitioner, Producer,
                              ProducerData, StringEncoder)
from fastkafka.client.connection import BrokerConnection
from fastkafka.client.simple_consumer import FetchRequest, SimpleConsumer
from fastkafka.protocol import ApiKey

from support.rdkafka_helpers import confluent_read, create_topic

pytestmark = [pytest.mark.clients, pytest.mark.timeout(60)]


def test_sync_send_is_read_back_exactly_by_confluent(broker, topic):
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        md = p.send([ProducerData(topic, b"k1", [b"v1", b"v2"], headers=[("h", b"x"), ("n", None)],
                                  timestamp=1_600_000_000_000),
                     ProducerData(topic, None, b"solo")])
    assert [(m.partition, m.offset, m.count) for m in md] == [(0, 0, 2), (0, 2, 1)]
    got = confluent_read(broker.bootstrap, topic, 3)
    assert [(m.offset(), m.key(), m.value()) for m in got] == [
        (0, b"k1", b"v1"), (1, b"k1", b"v2"), (2, None, b"solo")]
    assert got[0].headers() == [("h", b"x"), ("n", None)]
    assert got[1].timestamp() == (1, 1_600_000_000_000)
    assert abs(got[2].timestamp()[1] - time.time() * 1000) < 60_000


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_async_batches_read_back(broker, topic, codec):
    values = [f"message {i}".encode() * (i % 5 + 1) for i in range(3000)]
    with Producer({"bootstrap.servers": broker.bootstrap, "producer.type": "async",
                   "compression.type": codec, "queue.time": 20, "batch.size": 8192}) as p:
        for i in range(0, len(values), 100):
            p.send(ProducerData(topic, None, values[i:i + 100], partition=0))
        p.flush()
    got = confluent_read(broker.bootstrap, topic, len(values))
    assert [m.value() for m in got] == values
    assert [m.offset() for m in got] == list(range(len(values)))


def test_keys_land_where_librdkafka_murmur2_puts_them(broker, topic):
    create_topic(broker.bootstrap, topic, 7)
    keys = [f"key-{i}".encode() for i in range(200)]
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        for k in keys:
            p.send(ProducerData(topic, k, [b"ours"]))
    ck = CkProducer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random",
                     "log_level": 0})
    for k in keys:
        ck.produce(topic, b"theirs", k)
    assert ck.flush(20) == 0
    got = confluent_read(broker.bootstrap, topic, 400, partitions=range(7))
    placed = {}
    for m in got:
        placed.setdefault((m.key(), m.value()), set()).add(m.partition())
    assert len(placed) == 400
    for k in keys:
        assert placed[k, b"ours"] == placed[k, b"theirs"] == {Murmur2Partitioner().partition(k, 7)}


def test_encoder_partitioner_and_callbacks(broker, topic):
    create_topic(broker.bootstrap, topic, 3)
    events = []

    class Hooks(CallbackHandler):
        def on_enqueue(self, data):
            events.append(("enqueue", data.topic, len(data.messages)))

        def before_send(self, t, partition, recs):
            events.append(("send", partition, len(recs)))

        def on_acknowledgement(self, t, partition, offset, count, error):
            events.append(("ack", partition, offset, count, error))

    with Producer({"bootstrap.servers": broker.bootstrap, "serializer.class": StringEncoder,
                   "partitioner.class": "hash", "callback.handler": Hooks()}) as p:
        p.send(ProducerData(topic, "ab", [1, 2.5]))
    part = HashPartitioner().partition(b"ab", 3)
    assert events == [("enqueue", topic, 2), ("send", part, 2), ("ack", part, 0, 2, None)]
    got = confluent_read(broker.bootstrap, topic, 2, partitions=[part])
    assert [(m.key(), m.value()) for m in got] == [(b"ab", b"1"), (b"ab", b"2.5")]


def test_async_waits_queue_time_then_sends(broker, topic):
    acks = []

    class Hooks(CallbackHandler):
        def on_acknowledgement(self, t, partition, offset, count, error):
            acks.append((time.monotonic(), count))

    p = Producer({"bootstrap.servers": broker.bootstrap, "producer.type": "async",
                  "queue.time": 300, "batch.size": 1 << 20, "callback.handler": Hooks()})
    p.partitions_for(topic)          # metadata (and auto-creation) out of the timing
    t0 = time.monotonic()
    p.send(ProducerData(topic, None, [b"a"]))
    p.send(ProducerData(topic, None, [b"b"]))
    deadline = time.monotonic() + 10
    while not acks and time.monotonic() < deadline:
        time.sleep(0.01)  # poll interval
    assert acks and acks[0][0] - t0 >= 0.25 and acks[0][1] == 2   # one batch, after queue.time
    p.close()
    assert [m.value() for m in confluent_read(broker.bootstrap, topic, 2)] == [b"a", b"b"]


def test_async_full_batch_is_sent_before_queue_time(broker, topic):
    with Producer({"bootstrap.servers": broker.bootstrap, "producer.type": "async",
                   "queue.time": 30_000, "batch.size": 1000}) as p:
        p.partitions_for(topic)
        t0 = time.monotonic()
        p.send(ProducerData(topic, None, [b"x" * 100] * 20))
        got = confluent_read(broker.bootstrap, topic, 20, timeout=10)
        assert len(got) == 20 and time.monotonic() - t0 < 10


def test_acks_zero_and_acks_one(broker, topic):
    with Producer({"bootstrap.servers": broker.bootstrap, "acks": 0}) as p:
        assert p.send(ProducerData(topic, None, [b"fire"]))[0].offset == -1
    with Producer({"bootstrap.servers": broker.bootstrap, "acks": 1}) as p:
        assert p.send(ProducerData(topic, None, [b"forget"]))[0].offset == 1
    assert [m.value() for m in confluent_read(broker.bootstrap, topic, 2)] == [b"fire", b"forget"]


def test_errors_surface_sync_and_async(broker, topic):
    create_topic(broker.bootstrap, topic, 1)
    with Producer({"bootstrap.servers": broker.bootstrap, "retries": 0}) as p:
        with pytest.raises(errors.KafkaError):
            p.send(ProducerData(topic, None, [b"x"], partition=5))
        with pytest.raises(errors.MessageTooLargeError):
            p.send(ProducerData(topic, None, [b"x" * 2_000_000]))
    p = Producer({"bootstrap.servers": broker.bootstrap, "producer.type": "async", "retries": 0,
                  "queue.time": 1})
    p.send(ProducerData(topic, None, [b"y" * 2_000_000]))
    with pytest.raises(errors.MessageTooLargeError):
        p.flush(20)
    p.close()


def test_bootstrap_skips_a_dead_server(broker, topic):
    with Producer({"bootstrap.servers": f"127.0.0.1:1,{broker.bootstrap}", "retries": 1}) as p:
        p.send(ProducerData(topic, None, [b"z"]))
    assert [m.value() for m in confluent_read(broker.bootstrap, topic, 1)] == [b"z"]


def _batch_headers(broker, topic):
    with SimpleConsumer("127.0.0.1", broker.port) as c:
        buf = c.fetch(FetchRequest(topic, 0, 0, 1 << 20)).buffer
    return [b.header for b in records.iter_batches(buf)]


def test_idempotence_follows_what_the_broker_offers(broker, topic):
    with BrokerConnection("127.0.0.1", broker.port) as conn:
        offered = conn.connect().supports(ApiKey.INIT_PRODUCER_ID)
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        p.send(ProducerData(topic, None, [b"a", b"b"]))
        p.send(ProducerData(topic, None, [b"c"]))
        pid = p.sender.producer_id
    hs = _batch_headers(broker, topic)
    if offered:
        assert pid >= 0
        assert [(h.producer_id, h.base_sequence) for h in hs] == [(pid, 0), (pid, 2)]
    else:
        assert pid == -1 and [h.producer_id for h in hs] == [-1, -1]
    with Producer({"bootstrap.servers": broker.bootstrap, "acks": 1}) as p:   # needs acks=all
        p.send(ProducerData(topic, None, [b"d"]))
        assert p.sender.producer_id == -1
    assert [m.value() for m in confluent_read(broker.bootstrap, topic, 4)] == [b"a", b"b", b"c", b"d"]


def test_producer_is_usable_from_many_threads(broker, topic):
    with Producer({"bootstrap.servers": broker.bootstrap, "producer.type": "async"}) as p:
        def work(i):
            for j in range(50):
                p.send(ProducerData(topic, None, [f"{i}-{j}".encode()]))
        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        p.flush()
    got = confluent_read(broker.bootstrap, topic, 200)
    assert sorted(m.value() for m in got) == sorted(f"{i}-{j}".encode() for i in range(4) for j in range(50))


def test_one_record_per_send_keeps_keys_headers_timestamps_and_order(broker, topic):
    """The async one-record shortcut: keyed records where murmur2 puts them, in send order,
    with their headers and timestamps, as confluent-kafka reads them."""
    create_topic(broker.bootstrap, topic, 3)
    sent = [(f"k{i % 10}".encode(), f"v{i}".encode()) for i in range(300)]
    with Producer({"bootstrap.servers": broker.bootstrap, "producer.type": "async",
                   "batch.size": 500}) as p:
        for k, v in sent:
            p.send(ProducerData(topic, k, v, headers=[("i", v)], timestamp=1_700_000_000_000))
        p.flush()
    got = confluent_read(broker.bootstrap, topic, 300, partitions=range(3))
    for part in range(3):
        want = [(k, v) for k, v in sent if Murmur2Partitioner().partition(k, 3) == part]
        assert [(m.key(), m.value()) for m in got if m.partition() == part] == want
    assert all(m.headers() == [("i", m.value())] and m.timestamp() == (1, 1_700_000_000_000)
               for m in got)


def test_unkeyed_single_sends_stick_to_a_partition_until_its_batch_fills(broker, topic):
    """KIP-480: one-record sends without a key fill one partition's batch, then move on."""
    create_topic(broker.bootstrap, topic, 4)
    with Producer({"bootstrap.servers": broker.bootstrap, "producer.type": "async",
                   "batch.size": 2000, "queue.time": 60_000}) as p:
        for i in range(400):                       # 100-byte records: a batch every ~18
            p.send(ProducerData(topic, None, b"%099d" % i))
        p.flush()
    got = confluent_read(broker.bootstrap, topic, 400, partitions=range(4))
    assert sorted(m.value() for m in got) == sorted(b"%099d" % i for i in range(400))
    runs = 1 + sum(a.partition() != b.partition()
                   for a, b in zip(sorted(got, key=lambda m: m.value()),
                                   sorted(got, key=lambda m: m.value())[1:]))
    # a new partition after each batch.size (2000 / ~112 bytes a record): 22 batches, 23 runs
    assert 20 <= runs <= 24


def test_one_record_sends_block_then_fail_on_a_full_queue(broker, topic):
    p = Producer({"bootstrap.servers": broker.bootstrap, "producer.type": "async",
                  "queue.buffering.max.messages": 5, "queue.enqueue.timeout.ms": 0,
                  "queue.time": 60_000, "batch.size": 1 << 20})
    p.partitions_for(topic)
    for i in range(5):
        p.send(ProducerData(topic, None, b"x", partition=0))
    with pytest.raises(errors.KafkaError, match="queue full"):
        p.send(ProducerData(topic, None, b"x", partition=0))
    p.close()
    with pytest.raises(errors.KafkaError, match="closed"):
        p.send(ProducerData(topic, None, b"x", partition=0))
    assert len(confluent_read(broker.bootstrap, topic, 5)) == 5
