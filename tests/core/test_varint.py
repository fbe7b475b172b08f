"""Varints: golden bytes, a pure-Python reference, kafka-python parity, malformed input."""
import doctest
import mmap
import warnings

import pytest
from hypothesis import given, settings, strategies as st

with warnings.catch_warnings():  # kafka-python's import warns about importlib.resources
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record import util as kafka_python

from fastkafka._core import varint as fk
from fastkafka.errors import CorruptRecordError, VarintError

INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
UINT32 = (0, (1 << 32) - 1)


# --- pure-Python reference (protobuf's rules, written from the spec) ------------------------

def ref_encode_unsigned(u):
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def ref_zigzag(v):
    return 2 * v if v >= 0 else -2 * v - 1


def ref_unzigzag(z):
    return z >> 1 if z % 2 == 0 else -((z + 1) >> 1)


def ref_decode_unsigned(buf, pos, bits):
    """(value, new_pos), or "truncated" / "overlong" as strings."""
    max_bytes = (bits + 6) // 7
    value = 0
    for i in range(max_bytes):
        if pos >= len(buf):
            return "truncated"
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return (value, pos) if value < (1 << bits) else "overlong"
    return "overlong"


# --- golden bytes -----------------------------------------------------------------------

GOLDEN_VARINT = [
    (0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (-65, "8101"),
    (INT32[1], "feffffff0f"), (INT32[0], "ffffffff0f"),
]
GOLDEN_VARLONG = GOLDEN_VARINT[:7] + [
    (INT32[1], "feffffff0f"), (INT64[1], "feffffffffffffffff01"),
    (INT64[0], "ffffffffffffffffff01"),
]
GOLDEN_UVARINT = [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"),
                  (16384, "808001"), (UINT32[1], "ffffffff0f")]

KINDS = {
    "varint": (fk.encode_varint, fk.decode_varint, fk.size_varint, GOLDEN_VARINT),
    "varlong": (fk.encode_varlong, fk.decode_varlong, fk.size_varlong, GOLDEN_VARLONG),
    "uvarint": (fk.encode_uvarint, fk.decode_uvarint, fk.size_uvarint, GOLDEN_UVARINT),
}
CASES = [(kind, value, hexed) for kind, (*_, golden) in KINDS.items() for value, hexed in golden]


@pytest.mark.parametrize("kind,value,hexed", CASES)
def test_golden_bytes(kind, value, hexed):
    encode, decode, size, _ = KINDS[kind]
    assert encode(value).hex() == hexed
    assert size(value) == len(hexed) // 2
    assert decode(bytes.fromhex(hexed)) == (value, len(hexed) // 2)
    # Decoding at an offset inside a larger buffer, followed by unrelated bytes.
    assert decode(b"\xaa\xbb" + bytes.fromhex(hexed) + b"\xcc", 2) == (value, 2 + len(hexed) // 2)


# --- round trips and parity -----------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(v=st.integers(*INT32))
def test_varint_round_trip_and_reference(v):
    encoded = fk.encode_varint(v)
    assert encoded == ref_encode_unsigned(ref_zigzag(v))
    assert fk.size_varint(v) == len(encoded) <= 5
    assert fk.decode_varint(encoded) == (v, len(encoded))


@settings(max_examples=300, deadline=None)
@given(v=st.integers(*INT64))
def test_varlong_round_trip_reference_and_kafka_python(v):
    encoded = fk.encode_varlong(v)
    assert encoded == ref_encode_unsigned(ref_zigzag(v))
    theirs = bytearray()
    kafka_python.encode_varint(v, theirs.append)
    assert encoded == bytes(theirs)
    assert fk.size_varlong(v) == len(encoded) == kafka_python.size_of_varint(v) <= 10
    assert fk.decode_varlong(encoded) == (v, len(encoded))
    assert kafka_python.decode_varint(encoded, 0) == (v, len(encoded))


@settings(max_examples=300, deadline=None)
@given(u=st.integers(*UINT32))
def test_uvarint_round_trip_and_reference(u):
    encoded = fk.encode_uvarint(u)
    assert encoded == ref_encode_unsigned(u)
    assert fk.size_uvarint(u) == len(encoded) <= 5
    assert fk.decode_uvarint(encoded) == (u, len(encoded))


@settings(max_examples=400, deadline=None)
@given(buf=st.binary(max_size=12), pos=st.integers(0, 12))
def test_decoders_agree_with_reference_on_arbitrary_bytes(buf, pos):
    # Any byte string, valid or not: same value or same kind of error as the reference.
    pos = min(pos, len(buf))
    for decode, bits, signed in ((fk.decode_uvarint, 32, False), (fk.decode_varint, 32, True),
                                 (fk.decode_varlong, 64, True)):
        expected = ref_decode_unsigned(buf, pos, bits)
        if isinstance(expected, str):
            with pytest.raises(VarintError, match=expected):
                decode(buf, pos)
        else:
            value, end = expected
            assert decode(buf, pos) == ((ref_unzigzag(value) if signed else value), end)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.integers(*INT64), max_size=20))
def test_sequence_of_varlongs(values):
    buf = b"".join(fk.encode_varlong(v) for v in values)
    pos, out = 0, []
    while pos < len(buf):
        v, pos = fk.decode_varlong(buf, pos)
        out.append(v)
    assert out == values and pos == len(buf)


# --- malformed input ------------------------------------------------------------------------

MALFORMED = [
    ("varint", "", "truncated"),
    ("varint", "80", "truncated"),
    ("varint", "ffffffff", "truncated"),
    ("varint", "ffffffffff01", "overlong"),     # 6 bytes
    ("varint", "ffffffff1f", "overlong"),       # 5th byte carries bit 32
    ("varint", "8080808010", "overlong"),
    ("uvarint", "ffffffff10", "overlong"),
    ("uvarint", "8080808080", "overlong"),
    ("varlong", "ffffffffffffffffff", "truncated"),
    ("varlong", "ffffffffffffffffff8001", "overlong"),  # 11 bytes
    ("varlong", "ffffffffffffffffff02", "overlong"),    # 10th byte carries bit 64
    ("varlong", "80808080808080808080", "overlong"),
]


@pytest.mark.parametrize("kind,hexed,problem", MALFORMED)
def test_malformed_raises_varint_error(kind, hexed, problem):
    decode = KINDS[kind][1]
    with pytest.raises(VarintError, match=problem) as info:
        decode(bytes.fromhex(hexed))
    # It maps to CORRUPT_MESSAGE so a handler answers with Kafka error code 2.
    assert isinstance(info.value, CorruptRecordError) and info.value.code == 2


def test_non_minimal_encodings_that_fit_are_accepted():
    # Kafka's Java reader accepts these; rejecting them would refuse batches Kafka accepts.
    assert fk.decode_varint(b"\x80\x00") == (0, 2)
    assert fk.decode_varlong(bytes.fromhex("80808080808080808000")) == (0, 10)


def test_bad_position():
    with pytest.raises(ValueError):
        fk.decode_varint(b"\x00", -1)
    with pytest.raises(ValueError):
        fk.decode_varint(b"\x00", 2)
    with pytest.raises(VarintError, match="truncated"):
        fk.decode_varint(b"\x00", 1)


@pytest.mark.parametrize("kind,bounds", [("varint", INT32), ("varlong", INT64),
                                         ("uvarint", UINT32)])
def test_out_of_range_values_to_encode(kind, bounds):
    encode, _, size, _ = KINDS[kind]
    lo, hi = bounds
    for bad in (lo - 1, hi + 1, 1 << 200, -(1 << 200)):
        with pytest.raises(OverflowError):
            encode(bad)
        with pytest.raises(OverflowError):
            size(bad)
    with pytest.raises(TypeError):
        encode(1.0)
    with pytest.raises(TypeError):
        encode("1")


def test_buffer_kinds(tmp_path):
    data = bytes.fromhex("00ac02feffffffffffffffff01")
    path = tmp_path / "varints"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        for buf in (data, bytearray(data), memoryview(data), m):
            assert fk.decode_uvarint(buf, 1) == (300, 3)
            assert fk.decode_varlong(buf, 3) == (INT64[1], 13)
    with pytest.raises(BufferError):
        fk.decode_varint(memoryview(data)[::2])


def test_docstring_examples():
    results = doctest.testmod(fk)
    assert results.attempted >= 5 and results.failed == 0
