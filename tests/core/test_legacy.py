"""Legacy message sets (magic 0/1) against kafka-python's and aiokafka's record classes, and the
v0/v1 <-> v2 conversions against kafka-python's v2 reader/builder."""
import struct
import zlib

import crc32c
import lz4.frame
import pytest
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioBuilder
from aiokafka.record.memory_records import MemoryRecords as AioRecords
from hypothesis import given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpBuilder
from kafka.record.memory_records import MemoryRecords as KpRecords

from fastkafka import errors, legacy
from fastkafka._core import legacy as core

CODECS = [legacy.NONE, legacy.GZIP, legacy.SNAPPY, legacy.LZ4]

blobs = st.one_of(st.none(), st.binary(max_size=40))
messages = st.lists(st.tuples(blobs, blobs, st.integers(0, 2**41)), min_size=1, max_size=12)


def kp_read(buf):
    """(offset, timestamp, key, value) of every record kafka-python finds."""
    out, recs = [], KpRecords(bytes(buf))
    while (batch := recs.next_batch()) is not None:
        out += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    return out


def aio_read(buf):
    out, recs = [], AioRecords(bytes(buf))
    while (batch := recs.next_batch()) is not None:
        out += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    return out


def ours(buf):
    return [(m.offset, m.timestamp, m.key, m.value) for m in legacy.iter_messages(buf)]


def expected(msgs, magic, base_offset):
    return [(base_offset + i, ts if magic == 1 else None, k, v) for i, (k, v, ts) in enumerate(msgs)]


def _none_ts(rows):
    return [(o, None if t == -1 else t, k, v) for o, t, k, v in rows]


# --------------------------------------------------------------------------- build vs clients

@settings(max_examples=40, deadline=None)
@given(msgs=messages, magic=st.sampled_from([0, 1]), base=st.integers(0, 2**40))
def test_uncompressed_bytes_identical_to_kafka_python(msgs, magic, base):
    kp = KpBuilder(magic, 0, 1 << 20)
    for i, (k, v, ts) in enumerate(msgs):
        kp.append(base + i, ts if magic == 1 else None, k, v)
    assert legacy.build_message_set(msgs, magic, base_offset=base) == bytes(kp.build())


@settings(max_examples=30, deadline=None)
@given(msgs=messages, magic=st.sampled_from([0, 1]), codec=st.sampled_from(CODECS),
       base=st.integers(0, 2**40))
def test_clients_read_what_we_build(msgs, magic, codec, base):
    wire = legacy.build_message_set(msgs, magic, codec, base_offset=base)
    want = expected(msgs, magic, base)
    assert ours(wire) == [(o, -1 if t is None else t, k, v) for o, t, k, v in want]
    if not (codec == legacy.LZ4 and magic == 0):  # neither client reads Kafka 0.8's lz4 without xxhash
        assert kp_read(wire) == want
        assert aio_read(wire) == want


@settings(max_examples=30, deadline=None)
@given(msgs=messages, magic=st.sampled_from([0, 1]), codec=st.sampled_from(CODECS),
       base=st.integers(0, 2**40))
def test_we_read_what_clients_build(msgs, magic, codec, base):
    if codec == legacy.LZ4 and magic == 0:
        return
    for builder in (KpBuilder, AioBuilder):
        b = builder(magic, codec, 1 << 20)
        for i, (k, v, ts) in enumerate(msgs):
            b.append(base + i, ts if magic == 1 else None, k, v)
        wire = bytes(b.build())
        got = _none_ts(ours(wire))
        assert got == kp_read(wire)  # same reading of the same bytes, offsets included
        # Producers leave a magic-1 wrapper's offset at 0 (the broker assigns offsets), so only
        # uncompressed and magic-0 sets carry the offsets that were appended.
        want = expected(msgs, magic, base)
        assert [r[1:] for r in got] == [r[1:] for r in want]
        if codec == legacy.NONE or magic == 0:
            assert got == want
        assert [r[1:] for r in v2_rows(legacy.to_v2(wire))] == [
            (-1 if t is None else t, k, v, []) for _, t, k, v in want]
        info = legacy.validate(wire)
        assert info.error is None and info.valid_bytes == len(wire) and info.magic == magic


def test_wrapper_layout_magic1():
    wire = legacy.build_message_set([(b"a", b"1", 10), (b"b", b"2", 30), (None, b"3", 20)], 1,
                                    legacy.GZIP, base_offset=100)
    [(offset, magic, attributes, timestamp, key, value)] = core.decode(wire)
    assert (offset, magic, attributes, timestamp, key) == (102, 1, legacy.GZIP, 30, None)
    inner = core.decode(zlib.decompress(value, 31))
    assert [m[0] for m in inner] == [0, 1, 2]  # relative inner offsets


def test_wrapper_layout_magic0_and_log_append_time():
    wire = legacy.build_message_set([(b"a", b"1", None), (b"b", b"2", None)], 0, legacy.SNAPPY, base_offset=7)
    [(offset, _, attributes, timestamp, key, value)] = core.decode(wire)
    assert (offset, attributes, timestamp) == (8, legacy.SNAPPY, -1)
    assert [m[0] for m in core.decode(legacy._compression.decompress(2, value))] == [7, 8]  # absolute
    wire = legacy.build_message_set([(b"a", b"1", 5)], 1, legacy.LZ4, timestamp_type=legacy.LOG_APPEND_TIME)
    assert core.decode(wire)[0][2] == legacy.LZ4 | 0x08
    assert [m.timestamp_type for m in legacy.iter_messages(wire)] == [legacy.LOG_APPEND_TIME]


def test_magic1_log_append_time_wrapper_timestamp_wins():
    kp = KpBuilder(1, 1, 1 << 20)
    kp.append(0, 5, None, b"x")
    wire = bytearray(kp.build())
    # Stamp the wrapper as LogAppendTime at t=999 the way a broker would, fixing its CRC.
    wire[17] |= 0x08
    struct.pack_into(">q", wire, 18, 999)
    struct.pack_into(">I", wire, 12, zlib.crc32(wire[16:]))
    assert [(m.timestamp, m.timestamp_type) for m in legacy.iter_messages(bytes(wire))] == [(999, 1)]


def test_zstd_and_bad_magic_rejected():
    with pytest.raises(errors.UnsupportedCompressionError):
        legacy.build_message_set([(None, b"x", 1)], 1, legacy.ZSTD)
    with pytest.raises(ValueError):
        legacy.build_message_set([(None, b"x", 1)], 2)
    wire = bytearray(legacy.build_message_set([(None, b"x", 1)], 1))
    wire[17] |= legacy.ZSTD
    struct.pack_into(">I", wire, 12, zlib.crc32(wire[16:]))
    with pytest.raises(errors.UnsupportedCompressionError):
        list(legacy.iter_messages(bytes(wire)))
    with pytest.raises(errors.UnsupportedCompressionError):
        legacy.to_v2(bytes(wire))


# --------------------------------------------------------------------------- lz4 on magic 0

def test_xxh32_matches_lz4_frame_header_checksums():
    # liblz4 computes HC = (xxh32(descriptor) >> 8) & 0xFF; check ours on its headers.
    for kwargs in ({}, {"store_size": False}, {"content_checksum": True}, {"block_size": lz4.frame.BLOCKSIZE_MAX4MB}):
        frame = lz4.frame.compress(b"abc" * 100, **kwargs)
        expected_hc, stored = core.lz4_header_checksum(frame, False)
        assert expected_hc == stored
    assert core.xxh32_digest(b"") == 0x02CC5D05
    assert core.xxh32_digest(b"a" * 40, 1) != core.xxh32_digest(b"a" * 40, 0)


def test_magic0_lz4_written_with_kafka_08_checksum():
    wire = legacy.build_message_set([(b"k", b"v" * 200, None)], 0, legacy.LZ4)
    frame = core.decode(wire)[0][5]
    hc_pos = 6 + (8 if frame[4] & 0x08 else 0)
    assert frame[hc_pos] == (core.xxh32_digest(frame[:hc_pos]) >> 8) & 0xFF  # magic bytes included
    assert frame[hc_pos] != (core.xxh32_digest(frame[4:hc_pos]) >> 8) & 0xFF
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(frame)  # a standard reader rejects it, as 0.10+ readers of magic 1 would
    fixed = core.lz4_set_header_checksum(frame, False)
    assert core.decode(lz4.frame.decompress(fixed))[0][4:] == (b"k", b"v" * 200)
    assert ours(wire) == [(0, -1, b"k", b"v" * 200)]
    # A standard-checksum frame in a magic-0 wrapper (what librdkafka may send) is read as well.
    inner = core.encode([(b"k", b"x", None)], 0, 0, 0)
    std = core.encode([(None, lz4.frame.compress(inner, block_linked=False), None)], 0, 0, legacy.LZ4)
    assert ours(std) == [(0, -1, b"k", b"x")]
    assert ours(legacy.down_convert(legacy.to_v2(wire), 0)) == [(0, -1, b"k", b"v" * 200)]


def test_magic0_lz4_parity_with_kafka_python():
    # kafka-python needs the xxhash package (a test dependency) for Kafka 0.8's lz4: missing, fail by name.
    import xxhash  # noqa: F401
    wire = legacy.build_message_set([(b"k", b"v", None)], 0, legacy.LZ4)
    assert kp_read(wire) == [(0, None, b"k", b"v")]
    kp = KpBuilder(0, legacy.LZ4, 1 << 20)
    for i in range(3):
        kp.append(5 + i, None, b"k", b"v%d" % i * 50)
    theirs = bytes(kp.build())
    assert ours(theirs) == [(5 + i, -1, b"k", b"v%d" % i * 50) for i in range(3)]
    assert kp_read(legacy.down_convert(legacy.to_v2(theirs), 0)) == [(i, None, b"k", b"v%d" % i * 50) for i in range(3)]


# --------------------------------------------------------------------------- validate / corrupt

def test_truncated_tail_is_skipped_not_an_error():
    wire = legacy.build_message_set([(b"a", b"1", 1), (b"b", b"2", 2)], 1)
    for cut in range(1, 36):  # the first entry is 36 bytes
        part = wire + wire[:cut]
        info = legacy.validate(part)
        assert info.truncated and info.error is None and info.valid_bytes == len(wire)
        assert ours(part) == ours(wire)
        assert kp_read(legacy.down_convert(legacy.to_v2(part), 1)) == [(0, 1, b"a", b"1"), (1, 2, b"b", b"2")]


def test_bad_crc_detected():
    wire = bytearray(legacy.build_message_set([(b"a", b"hello", 1)], 1))
    wire[-1] ^= 1
    info = legacy.validate(bytes(wire))
    assert isinstance(info.error, errors.CorruptRecordError) and "CRC" in str(info.error)
    assert info.error_position == 0 and info.valid_bytes == 0 and not info.truncated
    assert legacy.validate(bytes(wire), check_crc=False).error is None
    with pytest.raises(errors.CorruptRecordError, match="CRC"):
        list(legacy.iter_messages(bytes(wire)))
    with pytest.raises(errors.CorruptRecordError, match="CRC"):
        legacy.to_v2(bytes(wire))


@pytest.mark.parametrize("size", [-1, -100, 0, 13])
def test_negative_and_tiny_message_size(size):
    wire = bytearray(legacy.build_message_set([(b"a", b"1", 1)], 0))
    struct.pack_into(">i", wire, 8, size)
    info = legacy.validate(bytes(wire))
    assert info.error is not None and "messageSize" in str(info.error)
    with pytest.raises(errors.CorruptRecordError):
        legacy.to_v2(bytes(wire))


def test_bad_key_length_and_magic():
    wire = bytearray(legacy.build_message_set([(b"abc", b"1", 1)], 1))
    struct.pack_into(">i", wire, 26, 1000)  # keyLength past the message
    struct.pack_into(">I", wire, 12, zlib.crc32(wire[16:]))
    assert "key/value" in str(legacy.validate(bytes(wire)).error)
    struct.pack_into(">i", wire, 26, -2)
    struct.pack_into(">I", wire, 12, zlib.crc32(wire[16:]))
    assert legacy.validate(bytes(wire)).error is not None
    wire[16] = 2
    assert "magic" in str(legacy.validate(bytes(wire)).error)


def test_nested_wrapper_rejected():
    inner = legacy.build_message_set([(None, b"x", 1)], 1, legacy.GZIP)
    wrapper = core.encode([(None, legacy._compression.compress(legacy.GZIP, inner), 1)], 1, 0, legacy.GZIP)
    with pytest.raises(errors.CorruptRecordError):
        list(legacy.iter_messages(wrapper))
    with pytest.raises(errors.CorruptRecordError):
        legacy.to_v2(wrapper)


def test_decompression_bomb_in_wrapper():
    wire = legacy.build_message_set([(None, bytes(1 << 20), 1)], 1, legacy.GZIP)
    with pytest.raises(errors.CompressionError):
        legacy.to_v2(wire, max_size=1000)
    with pytest.raises(errors.CompressionError):
        list(legacy.iter_messages(wire, max_size=1000))


@settings(max_examples=80, deadline=None)
@given(msgs=messages, magic=st.sampled_from([0, 1]), codec=st.sampled_from(CODECS),
       flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=3))
def test_corruption_never_escapes_as_another_exception(msgs, magic, codec, flips):
    wire = bytearray(legacy.build_message_set(msgs, magic, codec))
    for where, mask in flips:
        wire[where % len(wire)] ^= mask
    legacy.validate(bytes(wire))
    for convert in (lambda b: list(legacy.iter_messages(b)), legacy.to_v2):
        try:
            convert(bytes(wire))
        except errors.CorruptRecordError:
            pass


# --------------------------------------------------------------------------- conversions

def v2_rows(buf):
    """(offset, timestamp, key, value, headers) via kafka-python's v2 reader, CRCs checked."""
    out, recs = [], KpRecords(bytes(buf))
    while (batch := recs.next_batch()) is not None:
        assert batch.magic == 2 and batch.validate_crc()
        out += [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    return out


@settings(max_examples=40, deadline=None)
@given(msgs=messages, magic=st.sampled_from([0, 1]), codec=st.sampled_from(CODECS),
       base=st.integers(0, 2**40))
def test_to_v2_keeps_records_and_codec(msgs, magic, codec, base):
    v2 = legacy.to_v2(legacy.build_message_set(msgs, magic, codec, base_offset=base))
    assert v2_rows(v2) == [(i, ts if magic == 1 else -1, k, v, []) for i, (k, v, ts) in enumerate(msgs)]
    batch = KpRecords(v2).next_batch()
    assert batch.compression_type == codec and batch.base_offset == 0
    assert batch.producer_id == -1 and batch.last_offset_delta == len(msgs) - 1
    assert batch.max_timestamp == (max(m[2] for m in msgs) if magic == 1 else -1)
    assert KpRecords(v2).next_batch().records_count == len(msgs)


def test_to_v2_mixed_set_makes_contiguous_batches():
    a = legacy.build_message_set([(None, b"1", 1), (None, b"2", 2)], 1)
    b = legacy.build_message_set([(None, b"3", 3), (None, b"4", 4)], 1, legacy.SNAPPY)
    c = legacy.build_message_set([(None, b"5", 5)], 1)
    v2 = legacy.to_v2(a + b + c)
    assert [(o, v) for o, _, _, v, _ in v2_rows(v2)] == [(0, b"1"), (1, b"2"), (2, b"3"), (3, b"4"), (4, b"5")]
    assert legacy.to_v2(b"") == b""


def _v2(records, codec=0, base_offset=0, log_append_time=None):
    b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 22)
    for i, (k, v, ts, headers) in enumerate(records):
        b.append(i, ts, k, v, headers)
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    if log_append_time is not None:
        struct.pack_into(">h", buf, 21, struct.unpack_from(">h", buf, 21)[0] | 0x08)
        struct.pack_into(">q", buf, 35, log_append_time)
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


@settings(max_examples=30, deadline=None)
@given(msgs=messages, magic=st.sampled_from([0, 1]), codec=st.sampled_from(CODECS),
       base=st.integers(0, 2**40))
def test_down_convert_read_by_clients(msgs, magic, codec, base):
    v2 = _v2([(k, v, ts, [("h", b"x")]) for k, v, ts in msgs], codec, base)
    old = legacy.down_convert(v2, magic)
    want = expected(msgs, magic, base)
    assert _none_ts(ours(old)) == want
    if not (codec == legacy.LZ4 and magic == 0):
        assert kp_read(old) == want and aio_read(old) == want
    if KpRecords(v2).next_batch().compression_type:  # kafka-python skips codecs that do not pay
        assert len(core.decode(old)) == 1  # one wrapper per batch
        assert core.decode(old)[0][0] == base + len(msgs) - 1


@settings(max_examples=30, deadline=None)
@given(msgs=messages, codec=st.sampled_from(CODECS))
def test_round_trip_v1_v2_v1(msgs, codec):
    wire = legacy.build_message_set(msgs, 1, codec)
    again = legacy.down_convert(legacy.to_v2(wire), 1)
    assert ours(again) == ours(wire)
    if codec == legacy.NONE:
        assert again == wire


def test_down_convert_drops_control_partial_and_keeps_log_append_time():
    a = _v2([(b"k", b"a", 10, [])], base_offset=5)
    control = bytearray(_v2([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", 11, [])], base_offset=6))
    struct.pack_into(">h", control, 21, 0x20 | 0x10)
    struct.pack_into(">I", control, 17, crc32c.crc32c(bytes(control[21:])))
    lat = _v2([(None, b"c", 12, []), (None, b"d", 13, [])], legacy.GZIP, base_offset=7, log_append_time=777)
    tail = _v2([(None, b"partial", 14, [])], base_offset=9)
    old = legacy.down_convert(a + bytes(control) + lat + tail[:-3], 1)
    assert [(m.offset, m.timestamp, m.timestamp_type, m.value) for m in legacy.iter_messages(old)] == [
        (5, 10, 0, b"a"), (7, 777, 1, b"c"), (8, 777, 1, b"d")]
    assert kp_read(old) == [(5, 10, b"k", b"a"), (7, 777, None, b"c"), (8, 777, None, b"d")]


def test_down_convert_errors():
    v2 = bytearray(_v2([(None, b"x", 1, [])]))
    with pytest.raises(errors.UnsupportedCompressionError):
        legacy.down_convert(_v2([(None, b"x" * 1000, 1, [])], legacy.ZSTD), 1)
    v2[-1] ^= 1
    with pytest.raises(errors.CorruptRecordError, match="CRC"):
        legacy.down_convert(bytes(v2), 0)
    with pytest.raises(ValueError):
        legacy.down_convert(bytes(v2), 2)
    assert legacy.down_convert(b"", 1) == b""


@pytest.mark.parametrize("codec", CODECS)
def test_large_sets_take_the_nogil_paths(codec):
    msgs = [(b"key-%d" % i, bytes([i % 251]) * (i % 300), 1_600_000_000_000 + i) for i in range(2000)]
    wire = legacy.build_message_set(msgs, 1, codec, base_offset=10)
    assert legacy.validate(wire).error is None
    v2 = legacy.to_v2(wire)
    assert [r[1:4] for r in v2_rows(v2)] == [(ts, k, v) for k, v, ts in msgs]
    again = legacy.down_convert(v2, 1)
    assert kp_read(again) == [(i, ts, k, v) for i, (k, v, ts) in enumerate(msgs)]
