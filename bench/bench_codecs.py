"""The codec libraries: cramjam (what fastkafka.compression uses) against the design stack's
python-snappy, python-lz4 and zstandard, on Kafka-shaped payloads, in the same run.

For each codec and size: compress and decompress throughput (MB/s of uncompressed bytes, best of
``--rounds`` alternating rounds of ~0.2 s loops) with the wire settings Kafka needs (raw snappy
blocks as xerial carries them, LZ4 frames with independent blocks and no content checksum, zstd
level 3), and the two-thread scaling of decompression (aggregate of two threads / one thread: ~2x
means the library releases the GIL). The safety column says whether the library can bound a
decompression's output before producing it (a bomb must not allocate more than max_size).

    .venv/bin/python bench/bench_codecs.py             # 16 KiB and 1 MiB payloads
"""
from __future__ import annotations

import argparse
import json
import random
import threading
import time

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


def rate(fn, nbytes: int, seconds: float = 0.2) -> float:
    n, began = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - began
        if el >= seconds:
            return n * nbytes / el


def two_thread_scaling(fn, nbytes: int) -> float:
    one = rate(fn, nbytes)
    rates = [0.0, 0.0]

    def run(i):
        rates[i] = rate(fn, nbytes)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(rates) / one


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="16384,1048576")
    args = ap.parse_args()
    print("| codec | size | library | compress MB/s | decompress MB/s | ratio | 2-thread decompress | "
          "bounded before output |")
    print("|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        data = payload(size)
        for codec, libs in codecs().items():
            blobs = {lib: c(data) for lib, (c, _, _) in libs.items()}
            for lib, (_, d, _) in libs.items():        # every library reads every other's output
                for blob in blobs.values():
                    assert bytes(d(blob, size)) == data, (codec, lib)
            best = {lib: [0.0, 0.0] for lib in libs}
            for _ in range(args.rounds):
                for lib, (c, d, _) in libs.items():
                    best[lib][0] = max(best[lib][0], rate(lambda: c(data), size))
                    best[lib][1] = max(best[lib][1], rate(lambda: d(blobs[lib], size), size))
            for lib, (c, d, bounded) in libs.items():
                scale = two_thread_scaling(lambda: d(blobs[lib], size), size)
                print(f"| {codec} | {size >> 10} KiB | {lib} | {best[lib][0] / 1e6:,.0f} | "
                      f"{best[lib][1] / 1e6:,.0f} | {size / len(blobs[lib]):.2f}x | {scale:.2f}x | "
                      f"{'yes' if bounded else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
