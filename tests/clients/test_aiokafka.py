"""aiokafka 0.14 against the broker."""
import asyncio
import time

import pytest

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402

pytestmark = [pytest.mark.clients, pytest.mark.timeout(90)]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_produce_consume_keys_headers_offsets_timestamps(broker):
    async def go():
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic("aio", num_partitions=1, replication_factor=1)])
        assert "aio" in await admin.list_topics()
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False,
                             compression_type="gzip")
        await p.start()
        base = int(time.time() * 1000) - 30_000
        for i in range(30):
            await p.send_and_wait("aio", key=b"k%d" % i, value=b"v%d" % i, timestamp_ms=base + i * 1000,
                                  headers=[("i", b"%d" % i)])
        await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_wait_ms=100)
        await c.start()
        tp = TopicPartition("aio", 0)
        c.assign([tp])
        found = await c.offsets_for_times({tp: base + 12_000})
        assert found[tp].offset == 12
        c.seek(tp, found[tp].offset)
        got = []
        while len(got) < 18:
            batch = await c.getmany(tp, timeout_ms=1000)
            got.extend(batch.get(tp, []))
        assert [m.offset for m in got] == list(range(12, 30))
        assert (got[0].key, got[0].value, list(got[0].headers)) == (b"k12", b"v12", [("i", b"12")])
        assert (await c.end_offsets([tp]))[tp] == 30
        await c.stop()
        await admin.delete_topics(["aio"])
        assert "aio" not in await admin.list_topics()
        await admin.close()
    run(go())
