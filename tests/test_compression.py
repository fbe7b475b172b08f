"""fastkafka.compression against independent codec implementations, corrupt input and bombs."""
import gzip
import struct
import zlib

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings, strategies as st
from kafka import codec as kcodec

from fastkafka import compression as C
from fastkafka import errors

CODECS = [C.NONE, C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD]
COMPRESSED = [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD]

# Payloads that exercise literal runs, long matches and several xerial / lz4 blocks.
payloads = st.one_of(
    st.binary(max_size=2048),
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=64), st.integers(1, 3000)),
)
BIG = bytes(range(256)) * 1200 + b"\0" * 100_000  # > 4 xerial chunks, > 1 lz4 block


def test_codec_ids_and_names():
    assert (C.NONE, C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD) == (0, 1, 2, 3, 4)
    assert [C.codec_name(c) for c in CODECS] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert C.codec_id("GZip") == 1 and C.codec_id("uncompressed") == 0
    with pytest.raises(errors.UnsupportedCompressionError):
        C.codec_id("brotli")
    with pytest.raises(errors.UnsupportedCompressionError):
        C.codec_name(5)


@pytest.mark.parametrize("codec", [5, 7, -1])
def test_unknown_codec(codec):
    with pytest.raises(errors.UnsupportedCompressionError) as e:
        C.compress(codec, b"x")
    assert e.value.code == 76
    with pytest.raises(errors.UnsupportedCompressionError):
        C.decompress(codec, b"x")


@settings(max_examples=40, deadline=None)
@given(data=payloads, codec=st.sampled_from(CODECS))
def test_round_trip(codec, data):
    blob = C.compress(codec, data)
    assert isinstance(blob, bytes)
    assert C.decompress(codec, blob) == data
    assert C.decompress(codec, memoryview(blob)) == data
    assert C.decompress(codec, blob, max_size=len(data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_any_bytes_like_input(codec):
    for kind in (bytes, bytearray, memoryview, lambda b: memoryview(bytearray(b))):
        blob = C.compress(codec, kind(BIG[:5000]))
        assert C.decompress(codec, kind(blob)) == BIG[:5000]


@pytest.mark.parametrize("codec", COMPRESSED)
def test_round_trip_big_and_levels(codec):
    levels = {C.GZIP: [1, 9], C.SNAPPY: [None], C.LZ4: [0, 9], C.ZSTD: [1, 10]}[codec]
    for level in levels:
        blob = C.compress(codec, BIG, level=level)
        assert len(blob) < len(BIG) // 3
        assert C.decompress(codec, blob) == BIG


def test_one_byte_over_max_size_is_a_bomb():
    for codec in CODECS:
        blob = C.compress(codec, BIG)
        assert C.decompress(codec, blob, max_size=len(BIG)) == BIG
        with pytest.raises(errors.CompressionError):
            C.decompress(codec, blob, max_size=len(BIG) - 1)


# --------------------------------------------------------------------------- gzip

@settings(max_examples=25, deadline=None)
@given(data=payloads)
def test_gzip_parity(data):
    assert gzip.decompress(C.compress(C.GZIP, data)) == data
    assert kcodec.gzip_decode(C.compress(C.GZIP, data)) == data
    assert C.decompress(C.GZIP, gzip.compress(data)) == data
    assert C.decompress(C.GZIP, kcodec.gzip_encode(data)) == data


def test_gzip_header_and_concatenated_members():
    blob = C.compress(C.GZIP, b"abc")
    assert blob[:3] == b"\x1f\x8b\x08"  # RFC 1952 member, deflate
    assert C.decompress(C.GZIP, gzip.compress(b"one") + gzip.compress(b"two")) == b"onetwo"
    with pytest.raises(errors.CompressionError):
        C.decompress(C.GZIP, gzip.compress(b"one") + gzip.compress(b"two"), max_size=5)
    with pytest.raises(errors.CompressionError):
        C.decompress(C.GZIP, gzip.compress(b"one") + b"junk")


# --------------------------------------------------------------------------- snappy

@settings(max_examples=25, deadline=None)
@given(data=payloads)
def test_snappy_xerial_parity_with_kafka_python(data):
    ours = C.compress(C.SNAPPY, data)
    # Same framing, same 32 KiB chunking: byte-identical to Java's / kafka-python's output.
    assert ours == kcodec.snappy_encode(data, xerial_compatible=True)
    if data:  # kafka-python takes a header-only stream for a raw block
        assert kcodec.snappy_decode(ours) == data
    assert C.decompress(C.SNAPPY, kcodec.snappy_encode(data, xerial_compatible=True, xerial_blocksize=4096)) == data


@settings(max_examples=25, deadline=None)
@given(data=payloads)
def test_snappy_reads_raw_and_framed(data):
    assert C.decompress(C.SNAPPY, snappy.compress(data)) == data
    assert C.decompress(C.SNAPPY, kcodec.snappy_encode(data, xerial_compatible=False)) == data
    if data:  # python-snappy writes nothing at all, not even the stream identifier, for b""
        assert C.decompress(C.SNAPPY, _framed(data)) == data


def _framed(data):
    import io
    out = io.BytesIO()
    snappy.stream_compress(io.BytesIO(data), out)
    return out.getvalue()


def test_snappy_xerial_header():
    blob = C.compress(C.SNAPPY, BIG)
    magic, version, compat = struct.unpack_from(">8sii", blob)
    assert (magic, version, compat) == (b"\x82SNAPPY\x00", 1, 1)
    n, = struct.unpack_from(">i", blob, 16)
    assert snappy.uncompress(blob[20:20 + n]) == BIG[:32 * 1024]


def test_snappy_empty_xerial_stream():
    assert C.decompress(C.SNAPPY, C.compress(C.SNAPPY, b"")) == b""
    assert C.compress(C.SNAPPY, b"") == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


# --------------------------------------------------------------------------- lz4

@settings(max_examples=25, deadline=None)
@given(data=payloads)
def test_lz4_parity(data):
    ours = C.compress(C.LZ4, data)
    assert lz4.frame.decompress(ours) == data
    assert kcodec.lz4_decode(ours) == data
    assert C.decompress(C.LZ4, lz4.frame.compress(data)) == data
    assert C.decompress(C.LZ4, lz4.frame.compress(data, store_size=False, content_checksum=True)) == data
    assert C.decompress(C.LZ4, lz4.frame.compress(data, block_linked=True, store_size=False)) == data
    assert C.decompress(C.LZ4, kcodec.lz4_encode(data)) == data


def test_lz4_frame_flags_are_what_java_reads():
    blob = C.compress(C.LZ4, BIG)
    assert blob[:4] == b"\x04\x22\x4d\x18"
    flg = blob[4]
    assert flg >> 6 == 1          # version 01
    assert flg & 0x20             # independent blocks: KafkaLZ4BlockInputStream rejects linked ones
    assert not flg & 0x03         # reserved bits clear
    assert 4 <= (blob[5] >> 4) & 7 <= 7 and blob[5] & 0x8F == 0


def test_lz4_declared_size_too_big_is_refused_before_decompressing():
    blob = lz4.frame.compress(b"a" * 100_000, store_size=True)
    with pytest.raises(errors.CompressionError, match="max_size"):
        C.decompress(C.LZ4, blob, max_size=99_999)


# --------------------------------------------------------------------------- zstd

@settings(max_examples=25, deadline=None)
@given(data=payloads)
def test_zstd_parity(data):
    ours = C.compress(C.ZSTD, data)
    assert zstandard.ZstdDecompressor().decompressobj().decompress(ours) == data
    assert kcodec.zstd_decode(ours) == data
    assert C.decompress(C.ZSTD, zstandard.ZstdCompressor().compress(data)) == data
    assert C.decompress(C.ZSTD, kcodec.zstd_encode(data)) == data


@settings(max_examples=15, deadline=None)
@given(data=payloads)
def test_zstd_streamed_frames_without_content_size(data):
    cctx = zstandard.ZstdCompressor(write_content_size=False, write_checksum=True)
    c = cctx.compressobj()
    streamed = c.compress(data) + c.flush()
    assert zstandard.get_frame_parameters(streamed).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert C.decompress(C.ZSTD, streamed) == data
    # Two concatenated frames decode to the concatenation.
    assert C.decompress(C.ZSTD, streamed + zstandard.ZstdCompressor().compress(b"tail")) == data + b"tail"


def test_zstd_declared_size_too_big_is_refused():
    blob = zstandard.ZstdCompressor(write_content_size=True).compress(b"z" * 50_000)
    with pytest.raises(errors.CompressionError, match="max_size"):
        C.decompress(C.ZSTD, blob, max_size=49_999)


# --------------------------------------------------------------------------- corrupt input

@pytest.mark.parametrize("codec", COMPRESSED)
def test_truncated_payload_raises(codec):
    blob = C.compress(codec, BIG)
    for cut in (0, 1, 5, len(blob) // 2, len(blob) - 1):
        with pytest.raises(errors.CompressionError):
            C.decompress(codec, blob[:cut])


@pytest.mark.parametrize("codec", COMPRESSED)
def test_garbage_raises_corrupt_record_error(codec):
    for junk in (b"\xff" * 64, b"hello world, not compressed", bytes(range(200))):
        with pytest.raises(errors.CorruptRecordError):
            C.decompress(codec, junk)


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(COMPRESSED), data=st.binary(min_size=1, max_size=300),
       flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=4))
def test_bit_flips_never_escape_as_other_exceptions(codec, data, flips):
    blob = bytearray(C.compress(codec, data))
    for where, mask in flips:
        blob[where % len(blob)] ^= mask
    try:
        out = C.decompress(codec, bytes(blob), max_size=4096)
    except errors.CompressionError:
        return
    assert isinstance(out, bytes) and len(out) <= 4096


def test_snappy_xerial_bad_chunk_length():
    blob = bytearray(C.compress(C.SNAPPY, b"abc" * 100))
    struct.pack_into(">i", blob, 16, 10_000)
    with pytest.raises(errors.CompressionError, match="overruns"):
        C.decompress(C.SNAPPY, bytes(blob))
    struct.pack_into(">i", blob, 16, -5)
    with pytest.raises(errors.CompressionError):
        C.decompress(C.SNAPPY, bytes(blob))


# --------------------------------------------------------------------------- bombs

GIB = 1 << 30
MIB = 1 << 20


def _zeros_stream(compressobj_compress, finish, total=GIB, chunk=16 * MIB):
    zeros = bytes(chunk)
    parts = [compressobj_compress(zeros) for _ in range(total // chunk)]
    parts.append(finish())
    return b"".join(p for p in parts if p)


@pytest.fixture(scope="module")
def bombs():
    """1 GiB of zeros in each codec, built by streaming (never 1 GiB in memory)."""
    gz = zlib.compressobj(1, zlib.DEFLATED, 31)
    lz = lz4.frame.LZ4FrameCompressor(block_linked=False)
    zs = zstandard.ZstdCompressor(level=1).compressobj()
    # snappy blocks hold 64 KiB of zeros in ~3 KiB, so 1 GiB is ~50 MB of chunks: reuse one chunk.
    chunk = snappy.compress(bytes(32 * 1024))
    xerial = (b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
              + (struct.pack(">i", len(chunk)) + chunk) * (GIB // (32 * 1024)))
    lz_head = lz.begin()
    return {
        C.GZIP: _zeros_stream(gz.compress, gz.flush),
        C.LZ4: lz_head + _zeros_stream(lz.compress, lz.flush),
        C.ZSTD: _zeros_stream(zs.compress, zs.flush),
        C.SNAPPY: xerial,
    }


def _vm_size_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))


def test_bombs_are_refused_without_allocating_the_output(bombs):
    """Each 1 GiB bomb, max_size=1 MiB, in a forked child whose address space may grow by at
    most 256 MiB: decompressing first and checking afterwards would die of MemoryError/abort."""
    import os
    import resource
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            limit = (_vm_size_kib() + 256 * 1024) * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            verdicts = []
            for codec in COMPRESSED:
                try:
                    C.decompress(codec, bombs[codec], max_size=MIB)
                    verdicts.append("returned")
                except errors.CompressionError as exc:
                    verdicts.append("refused" if "max_size" in str(exc) else f"other: {exc}")
                except BaseException as exc:  # MemoryError: the bound did not hold
                    verdicts.append(type(exc).__name__)
            os.write(write_end, ",".join(verdicts).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        report = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), f"child died (signal {os.WTERMSIG(status)}): allocation past the bound?"
    assert report.split(",") == ["refused"] * len(COMPRESSED), report


def test_raw_snappy_bomb_refused_from_preamble():
    # A raw block whose varint preamble claims 1 GiB: refused before any output is made.
    claim = bytearray()
    n = GIB
    while n >= 0x80:
        claim.append((n & 0x7F) | 0x80)
        n >>= 7
    claim.append(n)
    with pytest.raises(errors.CompressionError, match="max_size"):
        C.decompress(C.SNAPPY, bytes(claim) + b"\x00" * 16, max_size=MIB)
