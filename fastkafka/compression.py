"""Kafka's compression codecs: gzip, snappy (raw + xerial framing), lz4 frame, zstd.

A record batch (or a legacy wrapper message) names its codec in the low three bits of its
attributes; the payload is the compressed concatenation of its records. This module turns
payloads into bytes and back, and nothing else: which codec a topic uses is the caller's policy.

Wire formats, and why each is written the way it is:

* **gzip (1)** - RFC 1952 members (zlib ``wbits=31``), what Java's ``GZIPOutputStream`` writes.
  Readers accept concatenated members, as Java's ``GZIPInputStream`` does.
* **snappy (2)** - Kafka's Java client writes snappy-java's *xerial* framing, not the snappy
  framing format: ``82 53 4E 41 50 50 59 00`` ("\\x82SNAPPY\\0"), int32 version 1, int32
  compatible version 1, then chunks of ``[int32 BE compressed length][raw snappy block]`` each
  holding up to 32 KiB of input. We write exactly that (old Java consumers cannot read anything
  else) and read xerial, a bare raw block (what some non-Java clients send), and the official
  snappy framing format.
* **lz4 (3)** - the standard LZ4 frame with *independent* blocks and no content checksum: Java's
  ``KafkaLZ4BlockInputStream`` refuses linked blocks. (Magic-0 messages carry a header checksum
  computed the broken pre-0.10 way; :mod:`fastkafka.legacy` fixes that up around these calls.)
* **zstd (4)** - zstd frames; readers accept several frames and frames whose header omits the
  content size (streamed frames, e.g. librdkafka's).

Every reader bounds its output by ``max_size`` *before* producing it: a payload that would
decompress to more is a decompression bomb and raises :class:`~fastkafka.errors.CompressionError`
having allocated at most ``max_size`` bytes. The codecs run in python-lz4 (lz4), cramjam (snappy,
zstd) and zlib, all of which release the GIL while they work; ``bench/bench_codecs.py`` measured
python-lz4 1.1x faster to compress and 1.3-1.4x faster to decompress than cramjam at equal settings.
zstd stays on cramjam: zstandard's one-shot reader stops after the first frame and its stream reader
does not report a truncated one, so it could not bound a multi-frame payload as safely.

Example::

    >>> from fastkafka import compression
    >>> blob = compression.compress(compression.SNAPPY, b"kafka" * 100)
    >>> blob[:8]
    b'\\x82SNAPPY\\x00'
    >>> compression.decompress(compression.SNAPPY, blob) == b"kafka" * 100
    True
    >>> compression.codec_id("zstd")
    4
"""
from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.frame

from . import errors

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

#: Codec id -> Kafka's ``compression.type`` name.
CODEC_NAMES: dict[int, str] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
#: Kafka's ``compression.type`` name -> codec id ("uncompressed" is the topic-level spelling of
#: "none"; "producer" is a policy the caller resolves, so it is not here).
CODEC_IDS: dict[str, int] = {name: cid for cid, name in CODEC_NAMES.items()}
CODEC_IDS["uncompressed"] = NONE

#: Default bound on one payload's decompressed size (a bigger one is treated as a bomb).
DEFAULT_MAX = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, compatible version
_XERIAL_VERSION = 1
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default; also keeps output byte-identical to Java's
_INT32 = struct.Struct(">i")
_SNAPPY_FRAMED_MAGIC = b"\xff\x06\x00\x00sNaPpY"

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_GZIP_MAGIC = b"\x1f\x8b"

# cramjam's *_into functions report a too-small output buffer with this message; anything else
# is corrupt input. Only an optimisation depends on it: an unrecognised message still ends in
# CompressionError, after growing the buffer up to max_size.
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_OVERFLOW = "failed to write whole buffer"
_FIRST_GUESS = 64 * 1024


def codec_id(name: str) -> int:
    """Codec id for a Kafka ``compression.type`` name (case-insensitive).

    >>> codec_id("LZ4")
    3
    """
    try:
        return CODEC_IDS[name.lower()]
    except KeyError:
        raise errors.UnsupportedCompressionError(f"unknown compression.type {name!r}") from None


def codec_name(codec: int) -> str:
    """Kafka's name for a codec id (``codec_name(2) == "snappy"``)."""
    try:
        return CODEC_NAMES[codec]
    except KeyError:
        raise errors.UnsupportedCompressionError(f"unknown compression codec {codec}") from None


# ----------------------------------------------------------------------------- compress

def compress(codec: int, data, level: int | None = None) -> bytes:
    """Compress ``data`` (any bytes-like) with ``codec`` in the format Kafka clients read.

    ``level`` is the codec's own level (gzip 1-9, lz4 0-16, zstd 1-22); ``None`` picks the
    codec's default (gzip 6 like Java, lz4's fast mode like librdkafka, zstd 3 like Kafka).

    >>> decompress(GZIP, compress(GZIP, b"abc"))
    b'abc'
    """
    if codec == GZIP:
        c = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _xerial_encode(data)
    if codec == LZ4:
        return lz4.frame.compress(data, compression_level=level or 0, block_linked=False,
                                  content_checksum=False)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    if codec == NONE:
        return bytes(data)
    raise errors.UnsupportedCompressionError(f"unknown compression codec {codec}")


def _xerial_encode(data) -> bytes:
    view = memoryview(data).cast("B")
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_VERSION)]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + _XERIAL_BLOCK]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


# ----------------------------------------------------------------------------- decompress

def decompress(codec: int, data, max_size: int = DEFAULT_MAX) -> bytes:
    """Decompress a Kafka payload, refusing to produce more than ``max_size`` bytes.

    Raises :class:`~fastkafka.errors.CompressionError` for corrupt or truncated input and for
    output beyond ``max_size`` (detected without allocating more than ``max_size``), and
    :class:`~fastkafka.errors.UnsupportedCompressionError` for an unknown codec.

    >>> decompress(ZSTD, compress(ZSTD, b"x" * 10), max_size=10)
    b'xxxxxxxxxx'
    """
    if codec == GZIP:
        return _gzip_decode(data, max_size)
    if codec == SNAPPY:
        return _snappy_decode(data, max_size)
    if codec == LZ4:
        return _lz4_decode(data, max_size)
    if codec == ZSTD:
        return _bounded(cramjam.zstd.decompress_into, "zstd", data, max_size, _zstd_declared_size(data))
    if codec == NONE:
        if len(data) > max_size:
            raise _bomb("none", max_size)
        return bytes(data)
    raise errors.UnsupportedCompressionError(f"unknown compression codec {codec}")


def _bomb(name: str, max_size: int) -> errors.CompressionError:
    return errors.CompressionError(f"{name} payload decompresses to more than max_size={max_size} bytes")


def _gzip_decode(data, max_size: int) -> bytes:
    out = []
    budget = max_size
    rest = memoryview(data).cast("B")
    while True:
        # 47 = 32 (auto-detect the header) + 15: also accepts a bare zlib stream, which a few
        # non-Java clients produce for "gzip".
        d = zlib.decompressobj(47)
        try:
            chunk = d.decompress(rest, budget + 1)  # +1: a single extra byte proves overflow
        except zlib.error as exc:
            raise errors.CompressionError(f"corrupt gzip payload: {exc}") from None
        if len(chunk) > budget:
            raise _bomb("gzip", max_size)
        if not d.eof:
            raise errors.CompressionError("truncated gzip payload")
        out.append(chunk)
        budget -= len(chunk)
        rest = d.unused_data
        if not rest:
            return out[0] if len(out) == 1 else b"".join(out)
        if rest[:2] != _GZIP_MAGIC:
            raise errors.CompressionError("trailing bytes after gzip member")


def _snappy_decode(data, max_size: int) -> bytes:
    view = memoryview(data).cast("B")
    if view[:len(_SNAPPY_FRAMED_MAGIC)] == _SNAPPY_FRAMED_MAGIC:
        # The official snappy framing format: no Kafka client is known to send it, but it is
        # unambiguous and cheap to accept.
        return _bounded(cramjam.snappy.decompress_into, "snappy", view, max_size, None)
    if view[:8] != XERIAL_MAGIC:
        return _snappy_raw(view, max_size)
    if len(view) < _XERIAL_HEADER.size:
        raise errors.CompressionError("truncated xerial snappy header")
    # Pass 1: frame the chunks and sum their declared (varint preamble) sizes, so a bomb is
    # refused before anything is decompressed and the output is allocated exactly once.
    blocks = []
    total = 0
    pos = _XERIAL_HEADER.size
    end = len(view)
    while pos < end:
        if pos + 4 > end:
            raise errors.CompressionError("truncated xerial snappy chunk length")
        (n,) = _INT32.unpack_from(view, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise errors.CompressionError(f"xerial snappy chunk of {n} bytes overruns the payload")
        block = view[pos:pos + n]
        pos += n
        size = _snappy_raw_len(block)
        total += size
        if total > max_size:
            raise _bomb("snappy", max_size)
        blocks.append((block, size))
    out = bytearray(total)
    outview = memoryview(out)
    at = 0
    for block, size in blocks:
        _snappy_raw_into(block, outview[at:at + size], size)
        at += size
    return bytes(out)


def _snappy_raw_len(block) -> int:
    try:
        return cramjam.snappy.decompress_raw_len(block)
    except Exception as exc:  # cramjam raises its own DecompressionError / ValueError
        raise errors.CompressionError(f"corrupt snappy block: {exc}") from None


def _snappy_raw_into(block, out, size: int) -> None:
    if size == 0:  # cramjam refuses an empty output buffer; the only valid empty block is b"\0"
        if len(block) != 1:
            raise errors.CompressionError("corrupt snappy block: bytes after an empty preamble")
        return
    try:
        written = cramjam.snappy.decompress_raw_into(block, out)
    except Exception as exc:
        raise errors.CompressionError(f"corrupt snappy block: {exc}") from None
    if written != size:
        raise errors.CompressionError(f"snappy block produced {written} bytes, declared {size}")


def _snappy_raw(view, max_size: int) -> bytes:
    size = _snappy_raw_len(view)
    if size > max_size:
        raise _bomb("snappy", max_size)
    out = bytearray(size)
    _snappy_raw_into(view, out, size)
    return bytes(out)


def _lz4_decode(data, max_size: int) -> bytes:
    """One or more LZ4 frames, at most ``max_size`` bytes out. python-lz4 stops producing at
    ``max_length``, so each frame is drained in steps: the declared content size (else a guess),
    then doubling. A frame that still has output at ``max_size`` is a bomb; one that wants more
    input was truncated. (A large ``max_length`` up front would cost its allocation every call.)"""
    parts, total, rest = [], 0, data
    while True:
        declared = _lz4_declared_size(rest)
        if declared is not None and declared > max_size - total:
            raise _bomb("lz4", max_size)
        d = lz4.frame.LZ4FrameDecompressor()
        step = declared if declared else max(_FIRST_GUESS, 4 * len(rest))
        try:
            chunk = d.decompress(rest, max_length=min(step, max_size - total))
            while True:
                parts.append(chunk)
                total += len(chunk)
                if d.eof:
                    break
                if total >= max_size:
                    if d.decompress(b"", max_length=1):
                        raise _bomb("lz4", max_size)
                    raise errors.CompressionError("corrupt lz4 payload: truncated frame")
                chunk = d.decompress(b"", max_length=min(max(step, total), max_size - total))
                if not chunk and d.needs_input:
                    raise errors.CompressionError("corrupt lz4 payload: truncated frame")
        except RuntimeError as exc:
            raise errors.CompressionError(f"corrupt lz4 payload: {exc}") from None
        rest = d.unused_data
        if not rest:
            return parts[0] if len(parts) == 1 else b"".join(parts)


def _lz4_declared_size(data) -> int | None:
    """Content size from an LZ4 frame header (FLG bit 3), if the writer recorded it."""
    head = bytes(data[:14])
    if len(head) < 14 or head[:4] != _LZ4_MAGIC or not head[4] & 0x08:
        return None
    return int.from_bytes(head[6:14], "little")


def _zstd_declared_size(data) -> int | None:
    """Frame_Content_Size of the first zstd frame, if its header carries one."""
    head = bytes(data[:18])
    if len(head) < 6 or head[:4] != _ZSTD_MAGIC:
        return None
    fhd = head[4]
    fcs_flag = fhd >> 6
    single_segment = (fhd >> 5) & 1
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3]
    width = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or len(head) < pos + width:
        return None
    size = int.from_bytes(head[pos:pos + width], "little")
    return size + 256 if width == 2 else size


def _bounded(decompress_into, name: str, data, max_size: int, declared: int | None) -> bytes:
    """Decompress into a buffer that grows by doubling up to ``max_size``.

    cramjam stops as soon as the buffer is full, so an overflowing attempt costs no more than
    the bytes it wrote; the doubling keeps the total work under twice the final output. A
    declared size that turns out too small is simply a first guess that was wrong.
    """
    if declared is not None and declared > max_size:
        raise _bomb(name, max_size)
    size = declared if declared is not None else max(_FIRST_GUESS, 4 * len(data))
    size = min(max(size, 1), max_size) if max_size > 0 else 0
    while True:
        out = bytearray(size)
        try:
            written = decompress_into(data, out)
        except Exception as exc:
            if _OVERFLOW not in str(exc):
                raise errors.CompressionError(f"corrupt {name} payload: {exc}") from None
            if size >= max_size:
                raise _bomb(name, max_size) from None
            size = min(size * 2, max_size)
            continue
        return bytes(memoryview(out)[:written])


__all__ = ["NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD", "CODEC_NAMES", "CODEC_IDS", "DEFAULT_MAX",
           "XERIAL_MAGIC", "codec_id", "codec_name", "compress", "decompress"]
