"""CRC-32C throughput: fastkafka._core.crc32c against google-crc32c (the limit: the fastest
hardware-accelerated C extension), the crc32c package and a memcpy of the same bytes, one
Python call per buffer; each hardware engine forced and looped in C against a memcpy; and two
threads against one (> 1 only if the GIL is released)."""
import os

import pytest
from bench_crc32c import HW_ENGINES, IMPLS, SIZES, calls_for, engine_pass
from benchkit import compare, pick, split_across_threads


@pytest.mark.parametrize("label,size", SIZES, ids=[s[0].replace(" ", "") for s in SIZES])
def test_crc32c(benchmark, label, size):
    data = os.urandom(size)
    copy = bytearray(data)
    ours = IMPLS["fastkafka"]
    benchmark.group = "crc32c"
    compare(benchmark, lambda: ours(data),
            {"google-crc32c": lambda: IMPLS["google-crc32c"](data), "crc32c pkg": lambda: IMPLS["crc32c"](data),
             "fastkafka sw": lambda: IMPLS["fastkafka sw"](data), "memcpy": lambda: bytes(copy)},
            what=f"CRC-32C {label} (one Python call)", amount=size, unit="GB/s", scale=1e9,
            inner=pick(calls_for(size), 10), n_rounds=7)


@pytest.mark.parametrize("engine", HW_ENGINES)
@pytest.mark.parametrize("label,size", SIZES[1:], ids=[s[0].replace(" ", "") for s in SIZES[1:]])
def test_crc32c_engine(benchmark, engine, label, size):
    data = os.urandom(size)
    copy = bytearray(data)
    reps = pick(calls_for(size, 0.02), 10)
    benchmark.group = "crc32c engines"

    def memcpy():
        for _ in range(reps):
            bytes(copy)
    compare(benchmark, lambda: engine_pass(engine, data, reps), {"memcpy": memcpy},
            what=f"CRC-32C engine {engine} {label} (looped in C)", amount=size * reps, unit="GB/s", scale=1e9,
            n_rounds=7)


def test_crc32c_two_threads(benchmark):
    data = os.urandom(1 << 20)
    calls = pick(400, 4)
    fn = IMPLS["fastkafka"]

    def work(n):
        for _ in range(n):
            fn(data)

    two = split_across_threads(work, calls)
    benchmark.group = "crc32c"
    compare(benchmark, two, {"one thread": lambda: work(calls)},
            what="CRC-32C 1 MiB, two threads vs one (aggregate)", amount=len(data) * calls, unit="GB/s",
            scale=1e9, n_rounds=5)
