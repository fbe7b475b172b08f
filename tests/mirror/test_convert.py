"""The mirror's batch conversion without a broker: what each path sends (copy, merge, route), that
the records come out intact and numbered the way an idempotent producer must number them, and that
a read_committed fetch drops aborted transactions (MessageSet.batches)."""
from __future__ import annotations

from fastkafka import records
from fastkafka._core.records import decode_records
from fastkafka.client import murmur2
from fastkafka.client.simple_consumer import MessageSet
from fastkafka.mirror.convert import Route, convert
from fastkafka.mirror.naming import TopicSelector

SAME = Route("t", "dc1.t", 3, 3)


def rows(n, start=0, ts=1000):
    return [(b"k%d" % (i % 5), b"v%d-" % i + b"x" * 100, [("i", b"%d" % i), ("nil", None)], ts + i)
            for i in range(start, start + n)]


def decoded(chunks):
    """``[(target tp, [(key, value, headers, timestamp)])]`` as the target would store them."""
    out = []
    for tp, enc in chunks:
        assert enc.count == enc.last_offset_delta + 1        # sequences count records: no gaps
        recs = decode_records(memoryview(enc.buf)[records.BATCH_OVERHEAD:], 0, enc.base_timestamp, enc.count)
        assert [r.offset for r in recs] == list(range(enc.count))
        out.append((tp, [(r.key, r.value, r.headers, r.timestamp) for r in recs]))
    return out


def test_a_big_batch_is_copied_byte_for_byte():
    batch = records.build_batch(rows(2000), base_offset=100, compression=3)       # lz4
    out = convert(MessageSet("t", 1, 100, batch), SAME)
    stream = next(records.iter_batches(batch)).record_stream()
    assert len(out.chunks) == 1 and bytes(out.chunks[0][1].buf[records.BATCH_OVERHEAD:]) == bytes(stream)
    assert decoded(out.chunks) == [(("dc1.t", 1), rows(2000))]
    assert (out.source, out.next_offset, out.records) == (("t", 1), 2100, 2000)


def test_small_batches_are_merged_in_order():
    buf = b"".join(records.build_batch(rows(10, 10 * j), base_offset=10 * j) for j in range(30))
    out = convert(MessageSet("t", 0, 0, buf), SAME)
    assert len(out.chunks) == 1
    assert decoded(out.chunks) == [(("dc1.t", 0), rows(300))]


def test_a_fetch_from_inside_a_batch_starts_at_the_position():
    buf = records.build_batch(rows(2000), base_offset=0)
    out = convert(MessageSet("t", 0, 1500, buf), SAME)
    assert decoded(out.chunks) == [(("dc1.t", 0), rows(500, 1500))]
    assert out.next_offset == 2000 and out.records == 500


def test_gaps_are_renumbered_and_aborted_transactions_dropped():
    """Committed, aborted and again committed transactions of two producers: read_committed
    copies only committed data, renumbered without the markers' and aborted batches' offsets."""
    def txn(pid, rs, at):
        return records.build_batch(rs, base_offset=at, producer_id=pid, producer_epoch=0, base_sequence=0,
                                   is_transactional=True)
    buf = b"".join([
        txn(7, rows(5), 0), records.build_control_batch(True, 7, 0, base_offset=5),
        txn(8, rows(5, 100), 6), records.build_control_batch(False, 8, 0, base_offset=11),
        txn(7, rows(5, 5), 12), records.build_control_batch(True, 7, 0, base_offset=17),
    ])
    ms = MessageSet("t", 2, 0, buf, aborted_transactions=[(8, 6)])
    out = convert(ms, SAME)
    assert decoded(out.chunks) == [(("dc1.t", 2), rows(10))]
    assert out.next_offset == 18
    assert [mo.offset for mo in MessageSet("t", 2, 0, buf, aborted_transactions=[(8, 6)])] == \
        list(range(5)) + list(range(12, 17))
    assert len(list(MessageSet("t", 2, 0, buf))) == 15            # read_uncommitted: all data


def test_another_partition_count_routes_by_key():
    buf = records.build_batch(rows(50) + [(None, b"no key", [], 5000)], base_offset=0)
    out = convert(MessageSet("t", 1, 0, buf), Route("t", "t", 2, 5))
    got = decoded(out.chunks)
    for (topic, p), rs in got:
        for key, *_ in rs:
            assert p == (1 if key is None else (murmur2(key) & 0x7FFFFFFF) % 5)
    assert sorted((r for _tp, rs in got for r in rs), key=repr) == \
        sorted(rows(50) + [(None, b"no key", [], 5000)], key=repr)
    for _tp, rs in got:                                        # each key's records in order
        assert [r[3] for r in rs] == sorted(r[3] for r in rs)


def test_log_append_time_becomes_the_copies_create_time():
    batch = bytearray(records.build_batch(rows(3), base_offset=0))
    records.assign_offsets(batch, 0, log_append_time=9_999)     # what a LogAppendTime topic stores
    out = convert(MessageSet("t", 0, 0, bytes(batch)), SAME)
    assert [r[3] for _tp, rs in decoded(out.chunks) for r in rs] == [9_999] * 3


def test_selector_never_loops_back():
    s = TopicSelector(blacklist="tmp.*", source_alias="B", target_alias="A", prefix=True)
    assert [t for t in ("orders", "A.orders", "C.A.orders", "tmp1", "__consumer_offsets", "mm2.internal",
                        "B.orders") if s.selects(t)] == ["orders", "B.orders"]
