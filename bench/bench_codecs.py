"""Codec helpers for bench/test_bench_codecs.py: Kafka-shaped payloads and, per codec, the
libraries compared (cramjam and the design stack's python-snappy, python-lz4 and zstandard) with
the wire settings Kafka needs (raw snappy blocks as xerial carries them, LZ4 frames with
independent blocks and no content checksum, zstd level 3) and whether each can bound a
decompression's output before producing it (a bomb must not allocate more than max_size).
The figures are that module's:

    .venv/bin/python -m pytest bench/test_bench_codecs.py -p no:cacheprovider
"""
from __future__ import annotations

import json
import random
import threading

import cramjam
import lz4.frame
import snappy
import zstandard


def payload(size: int) -> bytes:
    """JSON-ish records, the compressibility of typical event data (~3-5x)."""
    rng = random.Random(size)
    out = bytearray()
    while len(out) < size:
        out += json.dumps({"user": rng.randrange(10**6), "event": rng.choice(["view", "click", "buy"]),
                           "ts": 1_700_000_000_000 + rng.randrange(10**9),
                           "item": f"sku-{rng.randrange(5000):05d}", "price": rng.random() * 100}).encode()
    return bytes(out[:size])


def codecs():
    """name -> (library -> (compress, decompress(blob, size), bounded?))"""
    local = threading.local()      # zstandard's (de)compressor objects are not thread-safe

    def zstd_c(d):
        if not hasattr(local, "zc"):
            local.zc, local.zd = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
        return local.zc.compress(d)

    def zstd_d(b, n):
        if not hasattr(local, "zd"):
            local.zc, local.zd = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
        return local.zd.decompress(b, max_output_size=n)

    def lz4_d(b, n):              # bounded: at most n bytes come out, eof says it was all
        d = lz4.frame.LZ4FrameDecompressor()
        out = d.decompress(b, max_length=n)
        assert d.eof
        return out

    def cj_lz4(d):
        c = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        c.compress(d)
        return bytes(c.finish())

    def cj_into(fn):
        def dec(blob, size):
            out = bytearray(size)
            fn(blob, out)
            return out
        return dec

    return {
        "snappy (raw block)": {
            "cramjam": (lambda d: bytes(cramjam.snappy.compress_raw(d)),
                        cj_into(cramjam.snappy.decompress_raw_into), True),
            "python-snappy": (snappy.compress, lambda b, n: snappy.uncompress(b), False),
        },
        "lz4 (frame, independent blocks)": {
            "cramjam": (cj_lz4, cj_into(cramjam.lz4.decompress_into), True),
            "python-lz4": (lambda d: lz4.frame.compress(d, block_linked=False, content_checksum=False),
                           lz4_d, True),
        },
        "zstd (level 3)": {
            "cramjam": (lambda d: bytes(cramjam.zstd.compress(d, level=3)),
                        cj_into(cramjam.zstd.decompress_into), True),
            "zstandard": (zstd_c, zstd_d, True),
        },
    }
