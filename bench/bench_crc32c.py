"""CRC-32C helpers for bench/test_bench_crc32c.py: the implementations compared and the C-looped
engine timing. The figures (fastkafka vs google-crc32c, the crc32c package and a memcpy of the
same bytes; each hardware engine forced; two threads vs one) are that module's:

    .venv/bin/python -m pytest bench/test_bench_crc32c.py -p no:cacheprovider
"""
import os
import sys

import crc32c as crc32c_pkg
import google_crc32c

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from fastkafka._core import crc32c as fk  # noqa: E402

SIZES = [("100 B", 100), ("16 KiB", 16 << 10), ("1 MiB", 1 << 20)]
IMPLS = {
    "fastkafka": fk.crc32c,
    "google-crc32c": google_crc32c.value,
    "crc32c": crc32c_pkg.crc32c,
    "fastkafka sw": fk.crc32c_sw,
}
HW_ENGINES = fk.engines()[1:]


def calls_for(size: int, seconds: float = 0.005) -> int:
    """Calls of one CRC over ``size`` bytes that take about ``seconds`` at ~30 GB/s + 60 ns a call."""
    return max(1, int(seconds / (60e-9 + size / 30e9)))


def engine_pass(name: str, data: bytes, reps: int) -> None:
    """``reps`` passes of engine ``name`` over ``data``, looped in C (no Python call per pass)."""
    fk.crc32c_repeat(data, reps, name)
