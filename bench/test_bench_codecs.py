"""Codecs: fastkafka.compression (Kafka's wire form: xerial snappy, LZ4 frames, zstd) against the
design stack's library at the same settings (python-snappy, python-lz4, zstandard: the limit) and
cramjam beside it, compress and decompress, MB/s of uncompressed bytes; and the two-thread
scaling of fastkafka's decompression (~2x means the GIL is released)."""

import pytest
from bench_codecs import codecs, payload
from benchkit import compare, pick, split_across_threads

from fastkafka import compression

CODECS = {"snappy (raw block)": ("snappy", "python-snappy"), "lz4 (frame, independent blocks)": ("lz4", "python-lz4"),
          "zstd (level 3)": ("zstd", "zstandard")}
SIZES = [16 << 10, 1 << 20]


def _case(codec_label, size):
    name, stack = CODECS[codec_label]
    data = payload(pick(size, 4096))
    libs = codecs()[codec_label]
    cid = compression.codec_id(name)
    blob = compression.compress(cid, data)
    assert compression.decompress(cid, blob) == data
    return cid, data, blob, libs, stack


@pytest.mark.parametrize("size", SIZES, ids=["16KiB", "1MiB"])
@pytest.mark.parametrize("codec_label", list(CODECS), ids=list(c[0] for c in CODECS.values()))
def test_decompress(benchmark, codec_label, size):
    cid, data, blob, libs, stack = _case(codec_label, size)
    blobs = {lib: c(data) for lib, (c, _, _) in libs.items()}
    n = len(data)
    benchmark.group = "codecs"
    compare(benchmark, lambda: compression.decompress(cid, blob),
            {f"{lib} decompress": (lambda d=d, b=blobs[lib]: d(b, n)) for lib, (_, d, _) in
             sorted(libs.items(), key=lambda kv: kv[0] != stack)},
            what=f"decompress {codec_label} {n >> 10} KiB (ratio {n / len(blob):.1f}x)", amount=n, unit="MB/s",
            scale=1e6, inner=pick(max(1, (2 << 20) // n), 1), n_rounds=5,
            bounded={lib: b for lib, (_, _, b) in libs.items()})


@pytest.mark.parametrize("size", SIZES, ids=["16KiB", "1MiB"])
@pytest.mark.parametrize("codec_label", list(CODECS), ids=list(c[0] for c in CODECS.values()))
def test_compress(benchmark, codec_label, size):
    cid, data, blob, libs, stack = _case(codec_label, size)
    n = len(data)
    benchmark.group = "codecs"
    compare(benchmark, lambda: compression.compress(cid, data),
            {f"{lib} compress": (lambda c=c: c(data)) for lib, (c, _, _) in
             sorted(libs.items(), key=lambda kv: kv[0] != stack)},
            what=f"compress {codec_label} {n >> 10} KiB", amount=n, unit="MB/s", scale=1e6,
            inner=pick(max(1, (1 << 20) // n), 1), n_rounds=5)


@pytest.mark.parametrize("codec_label", list(CODECS), ids=list(c[0] for c in CODECS.values()))
def test_decompress_two_threads(benchmark, codec_label):
    cid, data, blob, _, _ = _case(codec_label, 1 << 20)
    calls = pick(64, 2)

    def work(k):
        for _ in range(k):
            compression.decompress(cid, blob)

    two = split_across_threads(work, calls)
    benchmark.group = "codecs"
    compare(benchmark, two, {"one thread": lambda: work(calls)},
            what=f"decompress {codec_label} {len(data) >> 10} KiB, two threads vs one", amount=len(data) * calls,
            unit="MB/s", scale=1e6, n_rounds=3)
