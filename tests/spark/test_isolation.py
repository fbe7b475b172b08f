"""``kafka.isolation.level`` (issue 15): read_committed batch and streaming reads see committed
transactions only -- aborted ones are dropped, an open one is beyond the last stable offset --
while read_uncommitted (Spark's default) sees every data record; transaction markers never
appear as rows. Transactions are written by confluent-kafka's transactional producer."""
import pytest
from conftest import create_topic, produce, reader

pytestmark = [pytest.mark.clients, pytest.mark.spark, pytest.mark.timeout(180)]


def _transactions(broker, topic):
    """plain a0..a2, committed c0..c2, aborted x0..x2, then an open transaction o0..o2."""
    from confluent_kafka import Producer
    produce(broker, topic, [{"value": b"a%d" % i} for i in range(3)])
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"{topic}-tx", "linger.ms": 0})
    p.init_transactions(20)
    for prefix, commit in ((b"c", True), (b"x", False), (b"o", None)):
        p.begin_transaction()
        for i in range(3):
            p.produce(topic, value=prefix + b"%d" % i)
        p.flush(20)
        if commit is True:
            p.commit_transaction(20)
        elif commit is False:
            p.abort_transaction(20)
    return p        # keep the open transaction open while the test reads


def _values(df):
    return sorted(bytes(r.value).decode() for r in df.select("value").collect())


def test_read_committed_batch_and_stream(spark, broker, topic_name, tmp_path):
    create_topic(broker, topic_name)
    producer = _transactions(broker, topic_name)
    try:
        committed = _values(reader(spark, broker, subscribe=topic_name,
                                   **{"kafka.isolation.level": "read_committed"}))
        assert committed == ["a0", "a1", "a2", "c0", "c1", "c2"]
        everything = _values(reader(spark, broker, subscribe=topic_name))
        assert everything == ["a0", "a1", "a2", "c0", "c1", "c2", "o0", "o1", "o2", "x0", "x1", "x2"]
        q = (spark.readStream.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", topic_name).option("startingOffsets", "earliest")
             .option("kafka.isolation.level", "read_committed")
             .load().select("value").writeStream.format("memory").queryName("committed_stream")
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert _values(spark.table("committed_stream")) == committed
    finally:
        producer.abort_transaction(20)


def test_bad_isolation_level_is_refused(spark, broker, topic_name):
    create_topic(broker, topic_name)
    with pytest.raises(Exception, match="isolation.level"):
        reader(spark, broker, subscribe=topic_name, **{"kafka.isolation.level": "serializable"}).collect()
