"""Record batch v2 on bad bytes: defined errors (Validation.error or a raised CorruptRecordError /
VarintError), never a crash, a hang or an allocation sized by a lying field."""
import struct

import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from kafka.record.default_records import DefaultRecordBatch as KpBatch

from fastkafka import errors, records
from fastkafka._core import records as core
from fastkafka._core.crc32c import crc32c
from fastkafka.records import build_batch

INPUTS = [(b"k%d" % i, b"v" * (i + 1), [("h", b"x")] if i % 2 else [], 1000 + i) for i in range(5)]
BATCH = build_batch(INPUTS, base_offset=10)
SIZE = len(BATCH)


def recrc(buf: bytearray) -> bytearray:
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return buf


def with_stream(stream: bytes, count: int, last_delta: int = None, codec: int = 0) -> bytes:
    """A batch around a hand-made record stream, with a correct CRC."""
    buf = bytearray(61) + stream
    core.finish_batch(buf, record_count=count, last_offset_delta=count - 1 if last_delta is None
                      else last_delta, base_timestamp=0, max_timestamp=0, compression=codec)
    return bytes(buf)


def record(body: bytes) -> bytes:
    """Frame a record body with its zigzag length varint (bodies here are < 64 bytes)."""
    assert len(body) < 64
    return bytes([len(body) << 1]) + body


GOOD_BODY = b"\x00\x00\x00" + b"\x02k" + b"\x02v" + b"\x00"   # attrs, tsDelta, offDelta, key, value, 0 headers


def assert_clean_error(v, code=2):
    assert v.error is not None
    assert isinstance(v.error, errors.CorruptRecordError)
    assert v.error_code == code == errors.code_of(v.error)
    assert str(v.error)


# ------------------------------------------------------------------ framing

def test_truncated_at_every_length():
    data = BATCH + BATCH
    for cut in range(len(data) + 1):
        part = data[:cut]
        v = core.validate(part)
        whole = cut // SIZE
        assert v.valid_bytes == whole * SIZE
        assert v.batch_count == whole
        if cut % SIZE:
            assert_clean_error(v)
            assert v.truncated and v.error_position == whole * SIZE
            assert "position %d" % (whole * SIZE) in str(v.error)
        else:
            assert v.error is None
        cols = core.decode_columns(part)       # quietly stops at the partial batch
        assert cols.count == whole * 5 and cols.valid_bytes == whole * SIZE
        assert len(list(records.iter_batches(part))) == whole
        assert len(core.batch_index(part)) == whole


@pytest.mark.parametrize("length,truncated", [(0x7FFFFFFF, True), (-1, False), (-0x80000000, False),
                                              (0, False), (48, False), (SIZE, True)])
def test_bad_batch_length(length, truncated):
    buf = bytearray(BATCH)
    struct.pack_into(">i", buf, 8, length)
    v = core.validate(bytes(BATCH) + bytes(buf))
    assert v.valid_bytes == SIZE and v.batch_count == 1 and v.last_offset == 14
    assert_clean_error(v)
    assert v.truncated == truncated
    assert v.error_position == SIZE
    with pytest.raises(errors.CorruptRecordError) if not truncated else _nothing():
        core.decode_columns(bytes(buf))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("magic", [0, 1, 3, 255])
def test_unknown_magic(magic):
    buf = bytearray(BATCH)
    buf[16] = magic
    v = core.validate(bytes(buf))
    assert_clean_error(v)
    assert v.valid_bytes == 0 and not v.truncated
    assert "magic %d" % (magic if magic < 128 else magic - 256) in str(v.error)
    assert core.magic_of(bytes(buf)) == (magic if magic < 128 else magic - 256)


def test_bad_crc_detected_and_located():
    for pos in (17, 21, 40, 61, SIZE - 1):
        buf = bytearray(BATCH + BATCH)
        buf[SIZE + pos] ^= 0x40
        v = core.validate(bytes(buf))
        assert v.valid_bytes == SIZE and v.batch_count == 1
        assert_clean_error(v)
        assert "CRC-32C" in str(v.error) and str(SIZE) in str(v.error)
        with pytest.raises(errors.CorruptRecordError):
            core.decode_columns(bytes(buf))
        with pytest.raises(errors.CorruptRecordError):
            list(records.iter_batches(bytes(buf)))
    # outside the CRC: baseOffset and partitionLeaderEpoch may change freely
    buf = bytearray(BATCH)
    buf[3] ^= 1
    buf[13] ^= 1
    assert core.validate(bytes(buf)).error is None
    # without CRC checking a flipped value byte passes the walk
    buf = bytearray(BATCH)
    buf[-1] ^= 1
    assert core.validate(bytes(buf), check_crc=False).error is None


def test_decode_columns_reports_a_crc_mismatch_before_any_record_problem():
    """decode_columns checks each batch's CRC right before its records; the error must still be
    the first CRC mismatch of the input, even one after a batch whose records are bad, and a
    framing error after a bad CRC must not hide it."""
    bad_record = bytearray(BATCH)
    bad_record[61] = 0x7F                                  # first record's length: past the batch
    recrc(bad_record)
    bad_crc = bytearray(BATCH)
    bad_crc[SIZE - 1] ^= 0x40
    bad_magic = bytearray(BATCH)
    bad_magic[16] = 1
    for data, where in [(bytes(bad_record + bad_crc), SIZE), (bytes(BATCH + bad_crc + bad_magic), SIZE),
                        (bytes(bad_crc + bad_record), 0)]:
        with pytest.raises(errors.CorruptRecordError, match=f"CRC-32C mismatch in batch at position {where}:"):
            core.decode_columns(data)
    with pytest.raises(errors.CorruptRecordError, match="batch at position 0: "):   # CRC not checked
        core.decode_columns(bytes(bad_record + bad_crc), check_crc=False)
    with pytest.raises(errors.CorruptRecordError, match=f"unsupported magic 1 at position {SIZE}"):
        core.decode_columns(bytes(bad_record + bad_magic))


def test_header_count_and_offset_delta_checks():
    buf = bytearray(BATCH)
    struct.pack_into(">i", buf, 57, -1)
    assert "recordCount" in str(core.validate(bytes(recrc(buf))).error)
    struct.pack_into(">i", buf, 57, 0x7FFFFFFF)    # can't fit: uncompressed records are >= 7 bytes
    v = core.validate(bytes(recrc(buf)))
    assert_clean_error(v)
    buf = bytearray(BATCH)
    struct.pack_into(">i", buf, 23, -3)
    assert "lastOffsetDelta" in str(core.validate(bytes(recrc(buf))).error)


def test_huge_record_count_in_compressed_batch_is_bounded():
    data = bytearray(build_batch(INPUTS, compression=4))
    struct.pack_into(">i", data, 57, 0x7FFFFFFF)
    data = bytes(recrc(data))
    assert core.validate(data).error is None          # a header walk cannot know
    with pytest.raises(errors.CorruptRecordError, match="recordCount|record count"):
        records.decode_columns(data)
    with pytest.raises(errors.CorruptRecordError):
        next(records.iter_batches(data)).records()


# ------------------------------------------------------------------ record framing

BAD_STREAMS = {
    # name: (stream, recordCount)
    "overlong varint key length": (record(b"\x00\x00\x00" + b"\x80\x80\x80\x80\x80\x01" + b"\x00\x00"), 1),
    "overlong record length": (b"\xff\xff\xff\xff\xff\x7f" + GOOD_BODY, 1),
    "record longer than stream": (bytes([60 << 1]) + GOOD_BODY, 1),
    "record shorter than fields": (bytes([(len(GOOD_BODY) - 2) << 1]) + GOOD_BODY + b"\x00\x00", 1),
    "record longer than fields": (record(GOOD_BODY + b"\x00"), 1),
    "negative record length": (b"\x01" + GOOD_BODY, 1),
    "key past record": (record(b"\x00\x00\x00" + b"\x40k" + b"\x02v\x00"), 1),
    "negative header count": (record(b"\x00\x00\x00\x00\x00\x01"), 1),
    "huge header count": (record(b"\x00\x00\x00\x00\x00\xfe\xff\xff\xff\x0f"), 1),
    "null header key": (record(b"\x00\x00\x00\x00\x00\x02\x01\x00"), 1),
    "count too high": (record(GOOD_BODY), 2),
    "count too low": (record(GOOD_BODY) * 2, 1),
    "empty stream": (b"", 1),
    "offset delta repeats": (record(GOOD_BODY) * 2, 2),
}


@pytest.mark.parametrize("name", sorted(BAD_STREAMS))
def test_bad_record_framing(name):
    stream, count = BAD_STREAMS[name]
    data = with_stream(stream, count, last_delta=max(count - 1, 0))
    header_ok = core.validate(data)
    if header_ok.error is None:
        v = core.validate_records(data)
        assert_clean_error(v, code=87)
        assert v.valid_bytes == 0 and v.error_position >= 61
    else:                                             # e.g. count vs bytes bound at header level
        assert_clean_error(header_ok)
    exc = errors.VarintError if "overlong" in name else errors.CorruptRecordError
    if name != "offset delta repeats":                # decoders don't police offset order
        with pytest.raises(exc):
            core.decode_records(stream, 0, 0, count)
        with pytest.raises(exc):
            core.decode_columns(data, check_crc=True)
    # the independent implementation agrees the batch is broken (or can't read it)
    if name not in ("count too low", "offset delta repeats", "record longer than fields",
                    "huge header count"):
        with pytest.raises(Exception):
            list(KpBatch(data))


def test_good_hand_made_stream_is_accepted():
    data = with_stream(record(GOOD_BODY), 1)
    assert core.validate_records(data).error is None
    assert [(r.key, r.value) for r in core.decode_records(record(GOOD_BODY), 0, 0, 1)] == [(b"k", b"v")]
    assert [(r.key, r.value) for r in KpBatch(data)] == [(b"k", b"v")]


def test_negative_lengths_below_minus_one_mean_null_like_java():
    # Java's DefaultRecord (and kafka-python) read any negative key/value length as null
    stream = record(b"\x00\x00\x00" + b"\x09" + b"\x02v" + b"\x02" + b"\x02h\x05")
    data = with_stream(stream, 1)
    assert core.validate_records(data).error is None
    (r,) = core.decode_records(stream, 0, 0, 1)
    assert (r.key, r.value, r.headers) == (None, b"v", [("h", None)])
    assert [(x.key, x.value, x.headers) for x in KpBatch(data)] == [(None, b"v", [("h", None)])]
    cols = core.decode_columns(data)
    assert cols.key_null_count == 1 and cols.header_value_null_count == 1


def test_non_utf8_header_key():
    stream = record(b"\x00\x00\x00\x00\x00\x02" + b"\x02\xff" + b"\x00")
    with pytest.raises(errors.CorruptRecordError, match="UTF-8"):
        core.decode_records(stream, 0, 0, 1)


def test_compressed_batch_needs_its_stream():
    data = build_batch(INPUTS, compression=1)
    for missing in (None, [], [None], {}, (None,)):
        with pytest.raises(errors.CorruptRecordError, match="decompressed"):
            core.decode_columns(data, missing)
    garbage = bytearray(data[:61]) + b"\x1f\x8bnot gzip at all"
    struct.pack_into(">i", garbage, 8, len(garbage) - 12)
    garbage = bytes(recrc(garbage))
    assert core.validate(garbage).error is None
    with pytest.raises(errors.CorruptRecordError):
        records.decode_columns(garbage)


# ------------------------------------------------------------------ fuzz

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 2 * SIZE - 1), st.integers(0, 255)), max_size=6),
       st.integers(0, 2 * SIZE), st.booleans())
def test_mutations_never_crash(flips, cut, fix_crc):
    buf = bytearray(BATCH + BATCH)
    for pos, val in flips:
        buf[pos] = val
    if fix_crc and len(buf) >= SIZE:
        size = struct.unpack_from(">i", buf, 8)[0] + 12
        if 61 <= size <= len(buf):
            struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:size])))
    data = bytes(buf[:cut])
    for check in (core.validate(data), core.validate_records(data), core.validate(data, check_crc=False)):
        assert 0 <= check.valid_bytes <= len(data)
        assert (check.error is None) == (check.valid_bytes == len(data))
        assert check.error is None or isinstance(check.error, errors.CorruptRecordError)
    core.batch_index(data)
    for fn in (lambda: records.decode_columns(data, check_crc=False),
               lambda: [b.records() for b in records.iter_batches(data, check_crc=False)],
               lambda: core.decode_records(data[61:], 0, 0, 5)):
        try:
            fn()
        except (errors.CorruptRecordError, errors.UnsupportedCompressionError):
            pass  # codec ids 5-7 in a mutated attributes field are UNSUPPORTED_COMPRESSION_TYPE


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_crash(data):
    v = core.validate_records(data)
    assert v.error is None or isinstance(v.error, errors.CorruptRecordError)
    for fn in (lambda: core.decode_columns(data, check_crc=False),
               lambda: core.decode_records(data, 0, 0, 3)):
        try:
            fn()
        except errors.CorruptRecordError:
            pass
