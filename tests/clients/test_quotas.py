"""Client quotas with real clients (confluent-kafka / librdkafka): a producer and a consumer over
their quota get the quota's throughput (±20%) while another client at the same time is not
slowed, a quota changed while clients run takes effect, and clients see throttle_time_ms
(librdkafka's throttle_cb).

The broker is a ``fastkafka serve`` process (its own interpreter, so the clients' Python does
not share its GIL) with quota.window.num=2: Kafka's rate settles within about two windows, so
a few seconds of traffic measure it."""
import threading
import time

import pytest

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from fastkafka.client.admin import AdminClient  # noqa: E402

from support.brokers import free_port, serve_process, stop, wait_listening


pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]

VALUE = b"q" * 1000


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory):
    port = free_port()
    proc = serve_process("--log-level", "WARNING", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                         "--override", f"log.dirs={tmp_path_factory.mktemp('quota-data')}",
                         "--override", "quota.window.num=2")
    try:
        wait_listening(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        stop(proc)


class Meter:
    """Bytes delivered (or consumed) over time, and the throttle times the client reported."""

    def __init__(self):
        self.events: list[tuple[float, int]] = []
        self.throttles: list[int] = []

    def add(self, n: int) -> None:
        self.events.append((time.monotonic(), n))

    def on_delivery(self, err, msg) -> None:
        if err is None:
            self.add(len(msg.value()))

    def on_throttle(self, event) -> None:
        if event.throttle_time > 0:
            self.throttles.append(event.throttle_time)

    def rate(self, start: float, end: float) -> float:
        return sum(n for t, n in self.events if start <= t < end) / (end - start)


def producer(bootstrap, client_id, meter, **extra):
    return Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                     "batch.size": 65536, "throttle_cb": meter.on_throttle, **extra})


def run_greedy(p, topic, meter, stop_at):
    """Produce as fast as the broker takes it, keeping about 1 MB queued."""
    while time.monotonic() < stop_at:
        if len(p) < 1000:
            p.produce(topic, VALUE, on_delivery=meter.on_delivery)
            p.poll(0)
        else:
            p.poll(0.005)
    p.flush(30)


def run_paced(p, topic, meter, rate, stop_at):
    """Produce ``rate`` bytes/s in 10 ms steps (what this client asks for, quota or not)."""
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) < stop_at:
        while sent < rate * (now - start) and len(p) < 20_000:
            p.produce(topic, VALUE, on_delivery=meter.on_delivery)
            sent += len(VALUE)
        p.poll(0.01)
    p.flush(30)


def in_thread(fn, *args) -> threading.Thread:
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


def test_producer_quota_throughput_and_a_change_while_running(bootstrap):
    quota, raised, other_rate = 1_000_000, 2_500_000, 4_000_000
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.alter_client_quotas({"client-id": "metered"}, {"producer_byte_rate": quota})
        limited, free = Meter(), Meter()
        t0 = time.monotonic()
        # the other client alone first, then beside the throttled one
        b = in_thread(run_paced, producer(bootstrap, "unmetered", free), "quota-b", free, other_rate, t0 + 20)
        time.sleep(4)  # the other client alone: its rate measured
        t1 = time.monotonic()
        a = in_thread(run_greedy, producer(bootstrap, "metered", limited), "quota-a", limited, t1 + 16)
        time.sleep(8)  # both running: the throttled one measured
        t2 = time.monotonic()
        admin.alter_client_quotas({"client-id": "metered"}, {"producer_byte_rate": raised})
        a.join(60)
        b.join(60)
    alone = free.rate(t0 + 1, t1)
    beside = free.rate(t1 + 1, t2)
    measured = limited.rate(t1 + 2.5, t2)
    after_change = limited.rate(t2 + 3.5, t1 + 16)   # once the old rate has left the windows
    print(f"quota {quota}: {measured:.0f} B/s; raised to {raised}: {after_change:.0f} B/s; "
          f"other client alone {alone:.0f} B/s, beside {beside:.0f} B/s; throttles seen {len(limited.throttles)}")
    assert measured == pytest.approx(quota, rel=0.2)
    assert after_change == pytest.approx(raised, rel=0.2)
    assert beside >= 0.8 * alone and alone >= 0.8 * other_rate
    assert limited.throttles and max(limited.throttles) > 0      # throttle_time_ms reached the client
    assert free.throttles == []


def fill(bootstrap, topic, megabytes):
    # small batches: a fetch returns at least one whole batch (KIP-74), and a throttled fetch
    # wastes what it would have returned, so responses stay well below a window of quota
    p = Producer({"bootstrap.servers": bootstrap, "client.id": "filler", "linger.ms": 5, "batch.size": 65536})
    for _ in range(megabytes * 1000):
        p.produce(topic, VALUE)
        p.poll(0)
    assert p.flush(60) == 0
    return megabytes * 1000


def consumer(bootstrap, client_id, meter, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": client_id,
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100, "max.partition.fetch.bytes": 131072,
                  # a small read-ahead, so what the application gets is what the broker sends
                  "queued.max.messages.kbytes": 1024, "fetch.queue.backoff.ms": 5,
                  "throttle_cb": meter.on_throttle})
    c.assign([TopicPartition(topic, 0, 0)])
    return c


def run_consumer(c, topic, meter, stop_at, messages, rate=None):
    """Consume (at most ``rate`` bytes/s), starting over at the end of the topic."""
    start, got, position = time.monotonic(), 0, 0
    while (now := time.monotonic()) < stop_at:
        if rate is not None and got > rate * (now - start):
            time.sleep(0.005)  # pace the reader to its rate
            continue
        for m in c.consume(100, 0.05):
            if m.error() is None:
                meter.add(len(m.value()))
                got += len(m.value())
                position = m.offset() + 1
        if position >= messages:
            c.seek(TopicPartition(topic, 0, 0))
            position = 0
    c.close()


def test_consumer_quota_throughput(bootstrap):
    quota, other_rate = 2_000_000, 4_000_000
    messages = fill(bootstrap, "quota-read", 24)
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.alter_client_quotas({"client-id": "slow-reader"}, {"consumer_byte_rate": quota})
    limited, free = Meter(), Meter()
    t0 = time.monotonic()
    b = in_thread(run_consumer, consumer(bootstrap, "fast-reader", free, "quota-read"), "quota-read", free,
                  t0 + 13, messages, other_rate)
    time.sleep(4)  # the other client alone: its rate measured
    t1 = time.monotonic()
    a = in_thread(run_consumer, consumer(bootstrap, "slow-reader", limited, "quota-read"), "quota-read", limited,
                  t1 + 9, messages)
    a.join(60)
    b.join(60)
    alone = free.rate(t0 + 1, t1)
    beside = free.rate(t1 + 1, t1 + 9)
    measured = limited.rate(t1 + 3, t1 + 9)
    print(f"quota {quota}: {measured:.0f} B/s; other consumer alone {alone:.0f} B/s, beside {beside:.0f} B/s; "
          f"throttles seen {len(limited.throttles)}")
    assert measured == pytest.approx(quota, rel=0.2)
    assert beside >= 0.8 * alone and alone >= 0.8 * other_rate
    assert limited.throttles and free.throttles == []
