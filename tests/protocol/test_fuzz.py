"""Hostile input: only our own exceptions escape the request decoders, and fast."""
import random
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fastkafka import errors
from fastkafka.protocol import APIS, SUPPORTED, ProtocolError, codec_for, decode_request, \
    encode_request, parse_request

from .samples import sample

ALLOWED = (ProtocolError, errors.UnsupportedVersionError)
VERSIONS = [(k, v) for k, (lo, hi) in SUPPORTED.items() for v in range(lo, hi + 1)]


def _valid_frames():
    rng = random.Random(7)
    out = []
    for key, v in VERSIONS:
        obj = sample(APIS[key].request_struct, v, rng)
        out.append(bytes(encode_request(key, v, rng.randint(0, 99), obj, "fuzz"))[4:])
    return out


VALID = _valid_frames()


def _decode_quietly(payload):
    try:
        parse_request(payload)
    except ALLOWED:
        pass


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key_version=st.sampled_from(VERSIONS), blob=st.binary(max_size=120))
def test_random_bodies(key_version, blob):
    try:
        decode_request(*key_version, blob)
    except ALLOWED:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_frames_with_any_header(blob):
    _decode_quietly(blob)


@settings(max_examples=600, deadline=None)
@given(index=st.integers(0, len(VALID) - 1), data=st.data())
def test_mutated_valid_requests(index, data):
    frame = bytearray(VALID[index])
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "truncate", "insert", "int32"]))
        pos = data.draw(st.integers(0, max(len(frame) - 1, 0)))
        if op == "flip" and frame:
            frame[pos] ^= data.draw(st.integers(1, 255))
        elif op == "truncate":
            del frame[pos:]
        elif op == "insert":
            frame[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        elif len(frame) >= pos + 4:       # a length/count field turned hostile
            frame[pos:pos + 4] = struct.pack(">i", data.draw(st.sampled_from(
                [-2, -1, 0x7FFFFFFF, 0x10000000, -0x80000000])))
    _decode_quietly(bytes(frame))


def test_valid_frames_decode():
    for payload in VALID:
        header, req = parse_request(payload)
        assert type(req) is APIS[header.api_key].request


@pytest.mark.parametrize("count", [0x7FFFFFFF, 0x1000000])
def test_huge_declared_counts_fail_fast(count):
    # Produce v3: transactional_id null, acks, timeout, then a topic array claiming `count` items
    body = b"\xff\xff" + struct.pack(">hii", 1, 1000, count) + b"\x00\x01t"
    start = time.thread_time()     # this thread's CPU: a loaded machine's waits do not count
    with pytest.raises(ProtocolError, match="exceeds|needs"):
        decode_request(0, 3, body)
    # a string / bytes length larger than what remains
    with pytest.raises(ProtocolError):
        decode_request(11, 0, b"\x7f\xff" + b"g" * 10)
    with pytest.raises(ProtocolError):   # records length beyond the buffer
        decode_request(0, 0, struct.pack(">hiii", 1, 0, 1, 1) + b"t" + struct.pack(">iii", 1, 0,
                                                                                   count))
    assert time.thread_time() - start < 0.1


def test_primitive_array_count_checked_before_unpacking():
    # OffsetFetch v1: group "g", one topic "t" whose []int32 claims 2**31-1 partitions
    body = b"\x00\x01g" + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">i", 0x7FFFFFFF)
    with pytest.raises(ProtocolError, match="int32"):
        decode_request(9, 1, body)
    # DeleteGroups v0: []string claiming 2**30 names in 4 bytes
    with pytest.raises(ProtocolError, match="array"):
        decode_request(42, 0, struct.pack(">i", 1 << 30) + b"\x00\x01g")


def test_unknown_api_and_version():
    with pytest.raises(errors.UnsupportedVersionError):
        decode_request(0, 99, b"")
    with pytest.raises(ProtocolError, match="unknown api key"):
        codec_for(9999, 0)
    with pytest.raises(ProtocolError):
        parse_request(b"\x00\x00\x00")          # shorter than a header
