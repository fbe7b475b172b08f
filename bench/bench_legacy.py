"""Legacy conversion throughput: to_v2 (Produce v0-v2) and down_convert (Fetch v0-v3).

Limits measured in the same run on the same bytes: kafka-python's pure-Python legacy reader
(MemoryRecords over the same message set; what the conversion replaces per record), and a
plain copy of the buffer (bytes(bytearray)), the floor for any transformation that writes a
new buffer. Uncompressed only, so codec speed does not hide the per-message work.

Run: .venv/bin/python bench/bench_legacy.py
"""
import time

from kafka.record.memory_records import MemoryRecords

from fastkafka import legacy


def best(fn, rounds=7, min_time=0.02):
    out = []
    for _ in range(rounds):
        n, t0 = 0, time.perf_counter()
        while (t := time.perf_counter() - t0) < min_time:
            fn()
            n += 1
        out.append(t / n)
    return min(out)


def kp_iterate(buf):
    recs = MemoryRecords(buf)
    while (batch := recs.next_batch()) is not None:
        for _ in batch:
            pass


def main():
    print("| record value | messages | to_v2 MB/s | down_convert v1 MB/s | copy MB/s | to_v2 / copy | "
          "to_v2 / kafka-python read |")
    print("|---|---|---|---|---|---|---|")
    for size, count in ((100, 10_000), (1000, 2_000)):
        msgs = [(b"key-%d" % i, bytes([i % 251]) * size, 1_600_000_000_000 + i) for i in range(count)]
        wire = legacy.build_message_set(msgs, 1)
        v2 = legacy.to_v2(wire)
        mutable = bytearray(wire)
        t_v2 = best(lambda: legacy.to_v2(wire))
        t_down = best(lambda: legacy.down_convert(v2, 1))
        t_copy = best(lambda: bytes(mutable))
        t_kp = best(lambda: kp_iterate(wire), rounds=3)
        mb = len(wire) / 1e6
        print(f"| {size} B | {count} | {mb / t_v2:.0f} | {mb / t_down:.0f} | {mb / t_copy:.0f} | "
              f"{t_copy / t_v2:.3f}x | {t_kp / t_v2:.0f}x faster |")


if __name__ == "__main__":
    main()
