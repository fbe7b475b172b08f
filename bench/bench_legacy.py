"""Legacy message set (magic 0/1) helpers for bench/test_bench_legacy.py: the input sets and
kafka-python's pure-Python reader, the reference the conversions are compared with. The figures
(to_v2 and down_convert against a plain copy of the same buffer) are that module's:

    .venv/bin/python -m pytest bench/test_bench_legacy.py -p no:cacheprovider
"""
from kafka.record.memory_records import MemoryRecords

from fastkafka import legacy


def message_set(size: int, count: int) -> bytes:
    """``count`` uncompressed magic-1 messages of ``size``-byte values (codec speed would hide the
    per-message work)."""
    msgs = [(b"key-%d" % i, bytes([i % 251]) * size, 1_600_000_000_000 + i) for i in range(count)]
    return legacy.build_message_set(msgs, 1)


def kp_iterate(buf):
    recs = MemoryRecords(buf)
    while (batch := recs.next_batch()) is not None:
        for _ in batch:
            pass
