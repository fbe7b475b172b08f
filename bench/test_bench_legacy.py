"""Legacy conversion: to_v2 (Produce v0-v2) and down_convert (Fetch v0-v3), MB/s of legacy
input, against a plain copy of the same buffer (the floor of any rewrite; cache-resident, so an
optimistic limit) with kafka-python's reader of the same set beside it."""
import pytest
from bench_legacy import kp_iterate, message_set
from benchkit import compare, pick

from fastkafka import legacy

CASES = [(100, 10_000), (1000, 2_000)]


@pytest.mark.parametrize("size,count", CASES, ids=["100B", "1000B"])
def test_to_v2(benchmark, size, count):
    count = pick(count, 50)
    wire = message_set(size, count)
    mutable = bytearray(wire)
    benchmark.group = "legacy"
    compare(benchmark, lambda: legacy.to_v2(wire),
            {"copy": lambda: bytes(mutable), "kafka-python read": lambda: kp_iterate(wire)},
            what=f"to_v2 {count} x {size} B magic-1 messages", amount=len(wire), unit="MB/s", scale=1e6,
            inner=pick(10, 1), n_rounds=7)


@pytest.mark.parametrize("size,count", CASES, ids=["100B", "1000B"])
def test_down_convert(benchmark, size, count):
    count = pick(count, 50)
    wire = message_set(size, count)
    v2 = legacy.to_v2(wire)
    mutable = bytearray(wire)
    benchmark.group = "legacy"
    compare(benchmark, lambda: legacy.down_convert(v2, 1), {"copy": lambda: bytes(mutable)},
            what=f"down_convert to v1, {count} x {size} B", amount=len(wire), unit="MB/s", scale=1e6,
            inner=pick(10, 1), n_rounds=7)
