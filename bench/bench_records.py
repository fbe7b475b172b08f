"""Record batch v2 helpers for bench/test_bench_records.py: the inputs (batches built with
``records.build_batch``, offsets stamped) and the reference implementations the figures are
compared with (aiokafka's Cython builder and reader, kafka-python's). The figures are that module's:

    .venv/bin/python -m pytest bench/test_bench_records.py -p no:cacheprovider
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder  # noqa: E402

from fastkafka._core import records as core  # noqa: E402


def make_records(n, size, ts=1_700_000_000_000):
    return [(b"key-%06d" % i, (b"%08d" % i) * (size // 8), [], ts + i) for i in range(n)]


def stamped(parts):
    """Batches joined as a log holds them: offsets assigned from 0."""
    data = bytearray(b"".join(parts))
    core.assign_offsets(data, 0)
    return bytes(data)


def reference_build(builder_cls, recs):
    """One v2 batch of ``recs`` with aiokafka's or kafka-python's builder (same arguments as ours)."""
    b = builder_cls(2, 0, False, -1, -1, -1, 1 << 24)
    for i, (k, v, h, ts) in enumerate(recs):
        b.append(i, ts, k, v, h)
    return b.build()


def iterate(memory_records_cls, data):
    """Read offset/timestamp/key/value of every record with a client's record classes."""
    n = 0
    mr = memory_records_cls(data)
    while mr.has_next():
        for r in mr.next_batch():
            r.offset, r.timestamp, r.key, r.value
            n += 1
    return n


__all__ = ["AioBuilder", "KpBuilder", "make_records", "stamped", "reference_build", "iterate"]
