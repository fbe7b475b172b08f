"""Spark tests: one local[2] SparkSession (UI off) and one in-process broker per test session;
data is produced with confluent-kafka (librdkafka), a real client independent of ours."""
import os
import sys
import time
import uuid

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def broker(start_session_broker):
    return start_session_broker()


@pytest.fixture(scope="session")
def spark():
    import pyspark  # noqa: F401 (a declared dependency: missing, it fails here by name)
    import fastkafka.spark
    session = fastkafka.spark.local_session("fastkafka-tests", sql_shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture
def topic_name():
    return "t-" + uuid.uuid4().hex[:10]


def create_topic(broker, name, partitions=1, **configs):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)],
                        request_timeout=10)[name].result(10)


def produce(broker, topic, rows, **conf):
    """rows: dicts with value and optional key, partition, headers, timestamp (ms)."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "acks": "all", **conf})
    for r in rows:
        kw = {k: r[k] for k in ("key", "partition", "headers", "timestamp") if k in r}
        p.produce(topic, value=r["value"], **kw)
        p.poll(0)
    assert p.flush(30) == 0


def reader(spark, broker, **options):
    r = spark.read.format("fastkafka").option("kafka.bootstrap.servers", broker.bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def now_ms():
    return int(time.time() * 1000)
