"""Record batch v2: parity with kafka-python's and aiokafka's independent implementations.

Both directions, every codec: batches we build parse with theirs to the same records, batches they
build parse with ours; uncompressed batches built from identical inputs are byte-identical.
"""
import struct

import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from aiokafka.record.default_records import (DefaultRecordBatch as AioBatch,
                                             DefaultRecordBatchBuilder as AioBuilder)
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import (DefaultRecordBatch as KpBatch,
                                          DefaultRecordBatchBuilder as KpBuilder)
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

from fastkafka import records
from fastkafka._core import records as core
from fastkafka.records import Record, build_batch, iter_batches

CODECS = [0, 1, 2, 3, 4]
HEADER = struct.Struct(">qiibIhiqqqhii")


def sample(n=20, size=100):
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else b"key-%d" % i
        value = None if i % 7 == 3 else (b"value-%05d-" % i) * (size // 12 + 1)
        headers = [("h%d" % j, None if (i + j) % 4 == 0 else b"hv%d" % j) for j in range(i % 3)]
        out.append((key, value, headers, 1_700_000_000_000 + i * 3 - (i % 4)))
    return out


def as_tuples(recs):
    return [(r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in recs]


def expected(inputs, base_offset=0):
    return [(base_offset + i, ts, k, v, list(h)) for i, (k, v, h, ts) in enumerate(inputs)]


def their_builder(cls, inputs, codec, producer=(-1, -1, -1), transactional=False):
    b = cls(2, codec, transactional, producer[0], producer[1], producer[2], 1 << 24)
    for i, (k, v, h, ts) in enumerate(inputs):
        assert b.append(i, timestamp=ts, key=k, value=v, headers=h) is not None
    return bytes(b.build())


# ------------------------------------------------------------------ ours -> theirs

@pytest.mark.parametrize("codec", CODECS)
def test_ours_parse_with_kafka_python(codec):
    inputs = sample()
    data = build_batch(inputs, compression=codec, base_offset=1000, producer_id=42,
                       producer_epoch=3, base_sequence=17)
    batch = KpBatch(data)
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert (batch.base_offset, batch.producer_id, batch.producer_epoch, batch.base_sequence) == \
        (1000, 42, 3, 17)
    assert batch.max_timestamp == max(ts for *_, ts in inputs)
    assert batch.first_timestamp == inputs[0][3]
    assert as_tuples(list(batch)) == expected(inputs, 1000)
    # MemoryRecords walks a buffer of several batches
    mr = KpMemoryRecords(data + data)
    seen = 0
    while mr.has_next():
        b = mr.next_batch()
        assert b.validate_crc() and b.base_offset == 1000
        seen += 1
    assert seen == 2


@pytest.mark.parametrize("codec", CODECS)
def test_ours_parse_with_aiokafka(codec):
    inputs = sample()
    data = build_batch(inputs, compression=codec, base_offset=7)
    batch = AioBatch(data)
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert as_tuples(list(batch)) == expected(inputs, 7)
    mr = AioMemoryRecords(data + data)
    batches = []
    while mr.has_next():
        batches.append(mr.next_batch())
    assert [b.base_offset for b in batches] == [7, 7]


# ------------------------------------------------------------------ theirs -> ours

@pytest.mark.parametrize("builder", [KpBuilder, AioBuilder], ids=["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS)
def test_theirs_parse_with_ours(builder, codec):
    inputs = sample()
    data = their_builder(builder, inputs, codec, producer=(9, 1, 100), transactional=True)
    v = core.validate(data, records=True)
    assert v.error is None and v.batch_count == 1 and v.record_count == len(inputs)
    (batch,) = list(iter_batches(data))
    assert batch.compression == codec
    assert batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 100)
    assert as_tuples(batch.records()) == expected(inputs)
    cols = records.decode_columns(data)
    assert list(cols.offsets) == list(range(len(inputs)))
    assert list(cols.timestamps) == [ts for *_, ts in inputs]


# kafka-python writes partitionLeaderEpoch 0, aiokafka -1 (as Java's producer); both baseOffset 0
@pytest.mark.parametrize("builder,epoch", [(KpBuilder, 0), (AioBuilder, -1)],
                         ids=["kafka-python", "aiokafka"])
def test_uncompressed_bytes_identical(builder, epoch):
    inputs = sample(50)
    theirs = their_builder(builder, inputs, 0, producer=(5, 2, 30))
    ours = build_batch(inputs, producer_id=5, producer_epoch=2, base_sequence=30,
                       partition_leader_epoch=epoch)
    assert ours == theirs


# ------------------------------------------------------------------ hypothesis round trips

keys = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)), max_size=3)
timestamps = st.integers(min_value=0, max_value=2**50)
record_inputs = st.lists(st.tuples(keys, keys, headers, timestamps), min_size=1, max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_inputs, st.integers(min_value=0, max_value=2**62), st.sampled_from([0, 0, 0, 1, 4]))
def test_round_trip_hypothesis(inputs, base_offset, codec):
    data = build_batch(inputs, base_offset=base_offset, compression=codec,
                       partition_leader_epoch=0)
    want = expected(inputs, base_offset)
    (batch,) = list(iter_batches(data))
    assert as_tuples(batch.records()) == want
    assert as_tuples(list(AioBatch(data))) == want
    if codec == 0:
        assert build_batch(inputs, partition_leader_epoch=0) == their_builder(KpBuilder, inputs, 0)
    cols = records.decode_columns(data)
    assert list(cols.offsets) == [w[0] for w in want]
    assert list(cols.timestamps) == [w[1] for w in want]
    kd, ko = cols.key_data, cols.key_offsets
    vbits = cols.value_validity
    for i, (_o, _t, k, v, hs) in enumerate(want):
        key_null = cols.key_validity is not None and not (cols.key_validity[i >> 3] >> (i & 7)) & 1
        assert key_null == (k is None)
        if k is not None:
            assert kd[ko[i]:ko[i + 1]] == k
        is_null = vbits is not None and not (vbits[i >> 3] >> (i & 7)) & 1
        assert is_null == (v is None)
        if v is not None:
            assert cols.value_data[cols.value_offsets[i]:cols.value_offsets[i + 1]] == v
        assert cols.header_offsets[i + 1] - cols.header_offsets[i] == len(hs)


# ------------------------------------------------------------------ header, Record, control

def test_read_header_matches_struct():
    data = build_batch(sample(3), base_offset=77, producer_id=8, producer_epoch=2,
                       base_sequence=5, partition_leader_epoch=9, is_transactional=True)
    fields = HEADER.unpack_from(data)
    h = core.read_header(data)
    assert (h.base_offset, h.batch_length, h.partition_leader_epoch, h.magic, h.crc, h.attributes,
            h.last_offset_delta, h.base_timestamp, h.max_timestamp, h.producer_id,
            h.producer_epoch, h.base_sequence, h.record_count) == fields
    assert h.size == len(data) and h.last_offset == 79 and h.next_offset == 80
    assert h.is_transactional and not h.is_control and h.compression == 0
    with pytest.raises(records.errors.CorruptRecordError):
        core.read_header(data[:60])
    assert core.magic_of(data) == 2 and core.magic_of(data[:16]) == -1


def test_record_objects_keep_offsets_with_gaps():
    recs = [Record(100, 5, b"a", b"1"), Record(103, 6, None, b"2", [("x", b"y")]),
            Record(None, 7, b"c", None)]
    data = build_batch(recs, base_offset=100)
    h = core.read_header(data)
    assert h.last_offset_delta == 4 and h.record_count == 3
    got = next(iter_batches(data)).records()
    assert [r.offset for r in got] == [100, 103, 104]
    assert got[1] == Record(103, 6, None, b"2", [("x", b"y")])
    assert [r.offset for r in KpBatch(data)] == [100, 103, 104]
    with pytest.raises(ValueError):
        build_batch([Record(5, 1, None, b""), Record(5, 1, None, b"")], base_offset=0)
    with pytest.raises(ValueError):
        build_batch([])


def test_none_timestamp_is_now_and_base_timestamp_override():
    import time
    before = time.time_ns() // 1_000_000
    h = core.read_header(build_batch([(None, b"v", None, None)]))
    assert before <= h.base_timestamp == h.max_timestamp <= time.time_ns() // 1_000_000
    data = build_batch([(None, b"v", [], 1000), (None, b"w", [], 900)], base_timestamp=500)
    h = core.read_header(data)
    assert (h.base_timestamp, h.max_timestamp) == (500, 1000)
    assert [r.timestamp for r in next(iter_batches(data)).records()] == [1000, 900]


def test_bytes_like_inputs_and_type_errors():
    data = build_batch([(bytearray(b"k"), memoryview(b"val"), [("h", bytearray(b"x"))], 1)])
    assert as_tuples(next(iter_batches(data)).records()) == [(0, 1, b"k", b"val", [("h", b"x")])]
    strided = memoryview(b"a-b-c-")[::2]                  # not contiguous: copied
    data = build_batch([(None, strided, (h for h in [("g", strided)]), 1)])
    assert as_tuples(next(iter_batches(data)).records()) == [(0, 1, None, b"abc", [("g", b"abc")])]
    with pytest.raises(TypeError):
        build_batch([("str-key", b"v", [], 1)])
    with pytest.raises(TypeError):
        build_batch([(None, b"v", [(1, b"x")], 1)])
    with pytest.raises(records.errors.UnsupportedCompressionError):
        build_batch([(None, b"v", [], 1)], compression=6)


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch(commit):
    data = records.build_control_batch(commit, 11, 4, coordinator_epoch=6,
                                                            base_offset=50, timestamp=123)
    (batch,) = list(iter_batches(data))
    assert batch.is_control and batch.is_transactional
    assert records.control_record(batch) == (0, 1 if commit else 0)
    kp = KpBatch(data)
    assert kp.is_control_batch and kp.validate_crc()
    (marker,) = list(kp)
    assert marker.type == (1 if commit else 0)
    assert struct.unpack(">hi", batch.records()[0].value) == (0, 6)
    # consumers never see control records in columns unless asked
    assert records.decode_columns(data).count == 0
    assert records.decode_columns(data, include_control=True).count == 1
    assert records.control_record(next(iter_batches(build_batch([(None, b"", [], 1)])))) is None


def test_columns_to_arrow():
    import pyarrow as pa
    inputs = sample(30)
    data = build_batch(inputs[:10], compression=3) + build_batch(inputs[10:], base_offset=10)
    rb = records.columns_to_arrow(records.decode_columns(data))
    assert rb.num_rows == 30
    assert rb.column("key").to_pylist() == [k for k, *_ in inputs]
    assert rb.column("value").to_pylist() == [v for _, v, *_ in inputs]
    assert rb.column("offset").to_pylist() == list(range(30))
    assert rb.column("headers").to_pylist() == [[{"key": hk, "value": hv} for hk, hv in h]
                                               for _, _, h, _ in inputs]
    assert rb.column("timestamp").cast(pa.int64()).to_pylist() == [ts for *_, ts in inputs]


@pytest.mark.parametrize("module", ["fastkafka.records", "fastkafka._core.records",
                                    "fastkafka._core.records_build", "fastkafka._core.records_read"])
def test_docstring_examples(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(record_inputs, st.sampled_from([0, 0, 1, 2, 3, 4]), st.booleans()),
                min_size=1, max_size=5))
def test_columns_equal_records_over_mixed_batches(spec):
    """decode_columns over several batches (mixed codecs, control batches, LogAppendTime) agrees
    with the Record path batch by batch."""
    parts = []
    for inputs, codec, control in spec:
        parts.append(records.build_control_batch(True, 1, 0, timestamp=5) if control else
                     build_batch(inputs, compression=codec))
    data = bytearray(b"".join(parts))
    core.assign_offsets(data, 1000, log_append_time=-1 if len(spec) % 2 else 77)
    data = bytes(data)
    want = [r for b in iter_batches(data) if not b.is_control for r in b.records()]
    cols = records.decode_columns(data)
    assert cols.count == len(want) and cols.batch_count == len(spec)
    assert list(cols.offsets) == [r.offset for r in want]
    assert list(cols.timestamps) == [r.timestamp for r in want]
    hk, hv = cols.header_key_offsets, cols.header_value_offsets

    def valid(bitmap, i):
        return bitmap is None or bool(bitmap[i >> 3] >> (i & 7) & 1)
    assert cols.key_null_count == sum(r.key is None for r in want)
    assert cols.value_null_count == sum(r.value is None for r in want)
    for i, r in enumerate(want):
        assert cols.key_data[cols.key_offsets[i]:cols.key_offsets[i + 1]] == (r.key or b"")
        assert cols.value_data[cols.value_offsets[i]:cols.value_offsets[i + 1]] == (r.value or b"")
        assert (valid(cols.key_validity, i), valid(cols.value_validity, i)) == (r.key is not None,
                                                                              r.value is not None)
        got_headers = [cols.header_key_data[hk[j]:hk[j + 1]].decode()
                       for j in range(cols.header_offsets[i], cols.header_offsets[i + 1])]
        assert got_headers == [k for k, _ in r.headers]
        assert [cols.header_value_data[hv[j]:hv[j + 1]] for j in range(cols.header_offsets[i],
                cols.header_offsets[i + 1])] == [v or b"" for _, v in r.headers]
    with_control = records.decode_columns(data, include_control=True)
    assert with_control.count == cols.count + sum(1 for *_, c in spec if c)
