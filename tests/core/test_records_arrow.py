"""Arrow columns -> record stream (records_arrow) and the columnar murmur2 (client_hash).

Parity: for the same rows, the stream records_arrow writes is byte-identical to the one
records_build.encode_records writes from Python tuples, and batches finished from it read back
with kafka-python's independent decoder to the rows we started from.
"""
import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch

from fastkafka._core.client_hash import murmur2, murmur2_positive_column
from fastkafka._core.records_arrow import ArrowColumns, ArrowRecordsBuilder
from fastkafka._core.records_build import encode_records, finish_batch

TS = 1_700_000_000_123
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def spec(arr):
    v, o, d = arr.buffers()[:3]
    return (v, o, d, arr.offset, len(arr))


def columns(keys, values, headers=None, key_type=pa.binary()):
    k = pa.array(keys, key_type) if keys is not None else None
    v = pa.array(values, pa.binary())
    h = None
    if headers is not None:
        arr = pa.array([None if hs is None else [{"key": a, "value": b} for a, b in hs]
                        for hs in headers], HEADER_TYPE)
        h = (spec(arr)[:2] + (None, arr.offset, len(arr)), spec(arr.values.field(0)),
             spec(arr.values.field(1)))
    return ArrowColumns(spec(k) if k is not None else None, spec(v), h)


def rows_of(keys, values, headers=None):
    n = len(values)
    keys = keys if keys is not None else [None] * n
    headers = headers if headers is not None else [None] * n
    return [(k if k is None else (k.encode() if isinstance(k, str) else k), v, list(h or []), TS)
            for k, v, h in zip(keys, values, headers)]


def encode_arrow(cols, order, **kw):
    b = ArrowRecordsBuilder(**kw)
    assert b.append(cols, np.asarray(order, np.int64), 0, len(order), TS, 1 << 30) == len(order)
    return b.finish()


def sample(n=40):
    rnd = random.Random(7)
    keys = [None if i % 5 == 0 else b"key-%d" % i for i in range(n)]
    values = [None if i % 7 == 3 else (b"" if i % 11 == 4 else bytes(rnd.randrange(256)
              for _ in range(rnd.randrange(1, 300)))) for i in range(n)]
    headers = [None if i % 6 == 1 else [("h%d" % j, None if (i + j) % 4 == 0 else b"hv%d" % j)
                                        for j in range(i % 3)] for i in range(n)]
    return keys, values, headers


def test_stream_matches_records_build_byte_for_byte():
    keys, values, headers = sample()
    got = encode_arrow(columns(keys, values, headers), range(len(values)))
    want = encode_records(rows_of(keys, values, headers), 0)
    assert bytes(got[0]) == bytes(want[0])
    assert got[1:] == want[1:] == (len(values), len(values) - 1, TS, TS)


def test_row_order_is_the_given_order_and_string_keys_are_utf8():
    keys = ["ä", None, "ccc", "dd"]
    values = [b"1", b"2", None, b""]
    order = [3, 0, 2]
    got = encode_arrow(columns(keys, values, key_type=pa.string()), order)
    want = encode_records([rows_of(keys, values)[i] for i in order], 0)
    assert bytes(got[0]) == bytes(want[0])


def test_kafka_python_reads_a_finished_batch():
    keys, values, headers = sample()
    buf, n, last, base_ts, max_ts = encode_arrow(columns(keys, values, headers), range(len(values)))
    finish_batch(buf, record_count=n, last_offset_delta=last, base_timestamp=base_ts,
                 max_timestamp=max_ts, producer_id=9, producer_epoch=1, base_sequence=4)
    batch = KpBatch(bytes(buf))
    assert batch.validate_crc() and batch.producer_id == 9 and batch.base_sequence == 4
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == [(i, TS, k, v, list(h or [])) for i, (k, v, h) in enumerate(zip(*sample()))]


def test_large_values_and_sliced_arrays():
    big = [b"x" * (3 << 20), b"y" * 70_000, b"z"]
    v = pa.array([b"skip"] + big, pa.binary()).slice(1)        # non-zero array offset
    k = pa.array([None, b"k1", None, b"k3"], pa.binary()).slice(1)
    cols = ArrowColumns(spec(k), spec(v))
    buf, n, *_ = encode_arrow(cols, [0, 1, 2])
    batch_rows = encode_records([(b"k1", big[0], [], TS), (None, big[1], [], TS),
                                 (b"k3", big[2], [], TS)], 0)
    assert n == 3 and bytes(buf) == bytes(batch_rows[0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=40)),
                          st.one_of(st.none(), st.binary(max_size=200)),
                          st.lists(st.tuples(st.text(max_size=8),
                                             st.one_of(st.none(), st.binary(max_size=20))),
                                   max_size=3)), min_size=1, max_size=30))
def test_parity_with_records_build_hypothesis(rows):
    keys, values, headers = (list(x) for x in zip(*rows))
    got = encode_arrow(columns(keys, values, headers), range(len(rows)))
    want = encode_records(rows_of(keys, values, headers), 0)
    assert bytes(got[0]) == bytes(want[0])


def test_max_bytes_splits_streams_and_offset_deltas_restart():
    values = [b"v" * 100] * 50
    cols = columns(None, values)
    order = np.arange(50, dtype=np.int64)
    b = ArrowRecordsBuilder(reserve=0)
    pos, sizes, counts = 0, [], []
    while pos < 50:
        pos = b.append(cols, order, pos, 50, TS, 1000)
        buf, n, last, *_ = b.finish()
        sizes.append(len(buf))
        counts.append(n)
        assert last == n - 1
    assert sum(counts) == 50 and len(counts) > 1 and max(sizes) <= 1000
    # one oversized record still goes (alone) into an empty stream
    assert b.append(cols, order, 0, 50, TS, 10) == 1


def test_appends_from_two_batches_continue_offset_deltas():
    c1, c2 = columns([b"a"], [b"1"]), columns(None, [b"2", b"3"])
    b = ArrowRecordsBuilder(reserve=61)
    b.append(c1, np.array([0]), 0, 1, TS, 1 << 20)
    b.append(c2, np.array([1, 0]), 0, 2, TS + 5, 1 << 20)
    buf, n, last, base, mx = b.finish()
    want = encode_records([(b"a", b"1", [], TS), (None, b"3", [], TS + 5),
                           (None, b"2", [], TS + 5)], 0, reserve=61)
    assert bytes(buf) == bytes(want[0]) and (n, last, base, mx) == (3, 2, TS, TS + 5)


def test_bad_inputs_raise():
    cols = columns(None, [b"a", b"b"])
    b = ArrowRecordsBuilder()
    with pytest.raises(IndexError):
        b.append(cols, np.array([0, 2]), 0, 2, TS, 1 << 20)
    with pytest.raises(IndexError):
        b.append(cols, np.array([0]), 0, 2, TS, 1 << 20)
    hk = pa.array([None], pa.string())
    lst = pa.array([[0]], pa.list_(pa.int8()))   # one header entry whose key is null
    hv = pa.array([b"x"], pa.binary())
    v = pa.array([b"a"], pa.binary())
    bad = ArrowColumns(None, spec(v), (spec(lst)[:2] + (None, 0, 1), spec(hk), spec(hv)))
    with pytest.raises(ValueError, match="header key is null"):
        ArrowRecordsBuilder().append(bad, np.array([0]), 0, 1, TS, 1 << 20)
    offsets = np.array([0, 5, 2], np.int32).tobytes()     # decreasing offsets
    with pytest.raises(ValueError, match="out of order"):
        ArrowColumns(None, (None, offsets, b"abcde", 0, 2))
    with pytest.raises(ValueError, match="offsets buffer shorter"):
        ArrowColumns(None, (None, np.array([0, 1], np.int32).tobytes(), b"a", 0, 2))
    with pytest.raises(ValueError, match="differ in length"):
        ArrowColumns(spec(pa.array([b"k"])), spec(pa.array([b"a", b"b"])))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=30)), max_size=40), st.integers(0, 5))
def test_murmur2_column_matches_per_key(keys, cut):
    arr = pa.array(keys, pa.binary()).slice(min(cut, len(keys)))
    out = np.empty(len(arr), np.int32)
    murmur2_positive_column(spec(arr), out)
    want = [-1 if k is None else murmur2(k) & 0x7FFFFFFF for k in arr.to_pylist()]
    assert out.tolist() == want


def test_murmur2_column_known_vector_and_short_out():
    arr = pa.array(["21"])
    out = np.empty(1, np.int32)
    murmur2_positive_column(spec(arr), out)
    assert out[0] == -973932308 & 0x7FFFFFFF    # Kafka's own test vector for "21"
    with pytest.raises(ValueError, match="out holds"):
        murmur2_positive_column(spec(pa.array(["a", "b"])), np.empty(1, np.int32))
