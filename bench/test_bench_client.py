"""Client throughput against one fastkafka broker (bench_client.py has the drivers), records/s,
each client against confluent-kafka (librdkafka) in the same rounds: fastkafka's Producer (lists of
1000 records, and one record per send) and kafka-python beside it, 100 and 1000 B values, acks=1,
linger 5 ms, batch.size 1 MB; SimpleConsumer.fetch_arrow against confluent-kafka's consume(10000)
loop, tuned (CONFLUENT_TUNED) and with librdkafka's defaults."""
import itertools
import os
import shutil
import tempfile

import pytest
from bench_client import (confluent, kafka_python, ours_chunked, ours_single, read_arrow, read_confluent,
                          read_confluent_tuned, start_broker)
from benchkit import SelfTimed, compare, pick

RECORDS = pick(200_000, 2_000)
_topics = itertools.count()


@pytest.fixture(scope="module")
def bootstrap():
    data = tempfile.mkdtemp(prefix="bench-client-")
    proc, bootstrap = start_broker(data)
    try:
        yield bootstrap
    finally:
        proc.terminate()
        proc.wait(20)
        shutil.rmtree(data, ignore_errors=True)


def _seconds(fn, bootstrap, n, value, count=None):
    """Seconds ``n`` records take at the rate ``fn`` measures producing ``count`` (default ``n``)
    records to a fresh topic: a slow client sends fewer, and is charged for ``n`` all the same."""
    return SelfTimed(lambda: n / fn(bootstrap, f"p{next(_topics)}", count or n, value))


@pytest.mark.parametrize("size", [100, 1000], ids=["100B", "1000B"])
@pytest.mark.parametrize("name,fn,share", [("lists of 1000", ours_chunked, 1), ("1 per send", ours_single, 3)],
                         ids=["lists", "single"])
def test_producer(benchmark, bootstrap, name, fn, share, size):
    value = os.urandom(size)
    n = RECORDS // share // 1000 * 1000 or 1000
    benchmark.group = "client"
    compare(benchmark, _seconds(fn, bootstrap, n, value),
            {"confluent-kafka": _seconds(confluent, bootstrap, n, value),
             "kafka-python": _seconds(kafka_python, bootstrap, n, value, max(100, n // 10))},
            what=f"fastkafka Producer ({name}), {size} B values", amount=n, unit="k records/s", scale=1e3,
            n_rounds=2, warmup=0)


def test_consumer(benchmark, bootstrap):
    topic = f"c{next(_topics)}"
    n = pick(RECORDS, 100_000)    # the clock starts after the first fetch (8 MiB): it must not hold them all
    ours_chunked(bootstrap, topic, n, os.urandom(100))

    def reader(fn):
        return SelfTimed(lambda: n / fn(bootstrap, topic, n))
    benchmark.group = "client"
    compare(benchmark, reader(read_arrow),
            {"confluent-kafka consume (tuned)": reader(read_confluent_tuned),
             "confluent-kafka consume (defaults)": reader(read_confluent)},
            what="fetch_arrow, 100 B values", amount=n, unit="k records/s", scale=1e3, n_rounds=2, warmup=0)
