"""CRC-32C throughput: fastkafka._core.crc32c against google-crc32c and the crc32c package.

Run:  .venv/bin/python bench/bench_crc32c.py [--rounds 7] [--budget 0.02]

Every implementation is timed on the same buffer in the same run, rounds alternating between
implementations so a noisy neighbour hurts them all alike; each figure is the best round.
Ratios (ours / theirs) are what to compare across runs, not the GB/s (DESIGN §9).
"""
import argparse
import os
import platform
import sys
import threading
import time

import crc32c as crc32c_pkg
import google_crc32c

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from fastkafka._core import crc32c as fk  # noqa: E402

SIZES = [("100 B", 100), ("16 KiB", 16 << 10), ("1 MiB", 1 << 20)]
IMPLS = [
    ("fastkafka", fk.crc32c),
    ("google-crc32c", google_crc32c.value),
    ("crc32c", crc32c_pkg.crc32c),
    ("fastkafka sw", fk.crc32c_sw),
]


def seconds_per_call(fn, data, budget):
    """Mean time of one call over a loop sized to take about `budget` seconds."""
    reps = 1
    while True:
        start = time.perf_counter()
        for _ in range(reps):
            fn(data)
        elapsed = time.perf_counter() - start
        if elapsed >= budget:
            return elapsed / reps
        reps *= 2 if elapsed < budget / 8 else max(2, int(budget / max(elapsed, 1e-9)) + 1)


def measure(rounds, budget):
    best = {}
    for label, size in SIZES:
        data = os.urandom(size)
        for _ in range(rounds):
            for name, fn in IMPLS:
                t = seconds_per_call(fn, data, budget)
                best[label, name] = min(best.get((label, name), t), t)
    return best


def two_thread_speedup(budget):
    """Aggregate 1 MiB throughput of two threads over one: > 1 only if the GIL is released."""
    data = os.urandom(1 << 20)
    rows = {}
    for name, fn in IMPLS[:3]:
        one = seconds_per_call(fn, data, budget)
        calls = max(4, int(budget / one))

        def work():
            for _ in range(calls):
                fn(data)

        threads = [threading.Thread(target=work) for _ in range(2)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        two = (time.perf_counter() - start) / (2 * calls)
        rows[name] = one / two
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--budget", type=float, default=0.02, help="seconds per timed loop")
    args = parser.parse_args()

    best = measure(args.rounds, args.budget)
    print(f"engine: {fk.engine()}   python {platform.python_version()}   "
          f"{os.cpu_count()} cpus   best of {args.rounds} rounds")
    columns = " | ".join(n + " GB/s" for n, _ in IMPLS)
    header = f"| size | {columns} | vs google-crc32c | vs crc32c |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for label, size in SIZES:
        gbs = {name: size / best[label, name] / 1e9 for name, _ in IMPLS}
        ours = best[label, "fastkafka"]
        print(f"| {label} | " + " | ".join(f"{gbs[n]:.2f}" for n, _ in IMPLS)
              + f" | {best[label, 'google-crc32c'] / ours:.2f}x"
              + f" | {best[label, 'crc32c'] / ours:.2f}x |")
    speedup = two_thread_speedup(args.budget * 10)
    print("\n2 threads / 1 thread aggregate throughput at 1 MiB: "
          + ", ".join(f"{n} {s:.2f}x" for n, s in speedup.items()))


if __name__ == "__main__":
    main()
