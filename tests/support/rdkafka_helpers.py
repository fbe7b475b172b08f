"""Reading and writing with confluent-kafka (librdkafka), the reference client the tests trust."""
import time


def create_topic(bootstrap: str, name: str, partitions: int = 1, configs=None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})])[name]
    fut.result(20)


def confluent_read(bootstrap: str, topic: str, expected: int, partitions=(0,), timeout: float = 20.0):
    """Every message of ``topic`` (from offset 0) as confluent-kafka sees it."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}",
                  "enable.auto.commit": False, "log_level": 0})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for m in c.consume(10_000, 0.5):
                if m.error() is None:
                    out.append(m)
    finally:
        c.close()
    return out


def confluent_write(bootstrap: str, topic: str, msgs, **conf) -> None:
    """Produce ``[(key, value, headers, partition, timestamp)]`` with confluent-kafka."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 0, **conf})
    for key, value, headers, partition, ts in msgs:
        kw = {"headers": headers} if headers else {}
        if partition is not None:
            kw["partition"] = partition
        if ts is not None:
            kw["timestamp"] = ts
        p.produce(topic, value, key, **kw)
    assert p.flush(20) == 0
