"""SimpleConsumer and fetch_arrow reading what confluent-kafka (librdkafka) wrote to our broker."""
import pytest

from fastkafka import errors
from fastkafka.client import Producer, ProducerData
from fastkafka.client.simple_consumer import EARLIEST_TIME, LATEST_TIME, FetchRequest, SimpleConsumer

pytestmark = [pytest.mark.clients, pytest.mark.timeout(60)]

MSGS = [(b"k%d" % i if i % 3 else None, b"value-%d" % i * (i % 7 + 1),
         [("i", b"%d" % i)] if i % 2 else None, None, 1_700_000_000_000 + i) for i in range(500)]

from support.rdkafka_helpers import confluent_read, confluent_write, create_topic


def consumer(broker, **kw):
    return SimpleConsumer("127.0.0.1", broker.port, so_timeout=10_000, buffer_size=64 * 1024, **kw)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_fetch_reads_exactly_what_confluent_wrote(broker, topic, codec):
    confluent_write(broker.bootstrap, topic, MSGS, **{"compression.codec": codec})
    got, offset = [], 0
    with consumer(broker) as c:
        while offset < len(MSGS):
            ms = c.fetch(FetchRequest(topic, 0, offset, 4096))
            batch = list(ms)
            assert batch, "no progress"
            got += batch
            offset = ms.next_offset
        assert ms.high_watermark == len(MSGS)
    assert [mo.offset for mo in got] == list(range(len(MSGS)))
    assert [(mo.message.key, mo.message.value, mo.message.headers or None, mo.message.timestamp)
            for mo in got] == [(k, v, [(a, b) for a, b in h] if h else None, ts)
                               for k, v, h, _, ts in MSGS]


def test_fetch_from_the_middle_of_a_batch_skips_earlier_records(broker, topic):
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        p.send(ProducerData(topic, None, [b"a", b"b", b"c", b"d"]))
    with consumer(broker) as c:
        assert [(mo.offset, mo.message.value) for mo in c.fetch(FetchRequest(topic, 0, 2))] == [
            (2, b"c"), (3, b"d")]
        assert list(c.fetch(FetchRequest(topic, 0, 4))) == []


def test_multifetch_and_buffer_doubling(broker, topic):
    create_topic(broker.bootstrap, topic, 2)
    big = b"B" * 300_000
    confluent_write(broker.bootstrap, topic, [(None, b"small", None, 0, None),
                                              (None, big, None, 1, None)])
    with consumer(broker) as c:
        # The second partition's batch is larger than its 1 KiB buffer: the broker sends a
        # cut-off piece, the client doubles 1 KiB -> 512 KiB and retries.
        a, b = c.multifetch([FetchRequest(topic, 0, 0, 1024), FetchRequest(topic, 1, 0, 1024)])
        assert [mo.message.value for mo in a] == [b"small"]
        assert [mo.message.value for mo in b] == [big]
    with consumer(broker, max_buffer_size=64 * 1024) as c:
        a, b = c.multifetch([FetchRequest(topic, 0, 0, 1024), FetchRequest(topic, 1, 0, 1024)])
        assert isinstance(b.error, errors.MessageTooLargeError)
        with pytest.raises(errors.MessageTooLargeError):
            list(b)


def test_errors(broker, topic):
    confluent_write(broker.bootstrap, topic, MSGS[:3])
    with consumer(broker) as c:
        with pytest.raises(errors.OffsetOutOfRangeError):
            c.fetch(FetchRequest(topic, 0, 99))
        with pytest.raises(errors.UnknownTopicOrPartitionError):
            c.fetch(FetchRequest(topic, 9, 0))
        ms = c.multifetch([FetchRequest(topic, 0, 0), FetchRequest(topic, 0 + 9, 0)])
        assert ms[0].error is None and isinstance(ms[1].error, errors.UnknownTopicOrPartitionError)


def test_get_offsets_before(broker, topic):
    create_topic(broker.bootstrap, topic, 1, {"segment.bytes": "2000"})
    for i in range(6):   # one batch each; small segments roll every couple of batches
        confluent_write(broker.bootstrap, topic, [(None, b"x" * 700, None, 0, None)])
    with consumer(broker) as c:
        latest = c.get_offsets_before(topic, 0, LATEST_TIME, 100)
        assert latest[0] == 6 and latest == sorted(latest, reverse=True) and latest[-1] == 0
        assert len(latest) > 2                      # segment base offsets, newest first
        assert c.get_offsets_before(topic, 0, EARLIEST_TIME, 1) == [0]
        assert c.get_offsets_before(topic, 0, LATEST_TIME, 1) == [6]
        assert c.offsets_before(topic, 0, LATEST_TIME, 2) == latest[:2]


def test_fetch_arrow_matches_confluent(broker, topic):
    confluent_write(broker.bootstrap, topic, MSGS, **{"compression.codec": "lz4"})
    with consumer(broker) as c:
        rb = c.fetch_arrow(topic, 0, 10, max_bytes=1 << 20)
    theirs = confluent_read(broker.bootstrap, topic, len(MSGS))[10:]
    assert rb.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp",
                               "timestampType", "headers"]
    assert rb.num_rows == len(theirs)
    assert rb.column("key").to_pylist() == [m.key() for m in theirs]
    assert rb.column("value").to_pylist() == [m.value() for m in theirs]
    assert set(rb.column("topic").to_pylist()) == {topic}
    assert set(rb.column("partition").to_pylist()) == {0}
    assert rb.column("offset").to_pylist() == [m.offset() for m in theirs]
    assert rb.column("timestamp").cast("int64").to_pylist() == [m.timestamp()[1] for m in theirs]
    assert set(rb.column("timestampType").to_pylist()) == {0}
    assert [[(h["key"], h["value"]) for h in hs] for hs in rb.column("headers").to_pylist()] == [
        m.headers() or [] for m in theirs]
