"""CRC-32C throughput: fastkafka._core.crc32c against google-crc32c and the crc32c package.

Run:  .venv/bin/python bench/bench_crc32c.py [--rounds 7] [--budget 0.02] [--sweep]

Every implementation is timed on the same buffer in the same run, rounds alternating between
implementations so a noisy neighbour hurts them all alike; each figure is the best round.
A second table times each hardware engine this machine has, forced, in a C loop
(crc32c_repeat: no Python call in the figure), so old and new engines meet in one process.
--sweep does that for the best two engines at 64 B-4 KiB.
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
HW_ENGINES = fk.engines()[1:]
TOP2 = HW_ENGINES[-2:] if len(HW_ENGINES) >= 2 else ()


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


def measure(rounds, budget, sizes=SIZES, impls=IMPLS):
    best = {}
    for label, size in sizes:
        data = os.urandom(size)
        for _ in range(rounds):
            for name, fn in impls:
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


def engine_seconds(name, data, budget):
    """Time of one pass of engine `name` over `data`, looped in C by crc32c_repeat."""
    reps = max(1, int(budget * 20e9 / (len(data) + 64)))  # ~budget at 20 GB/s
    start = time.perf_counter()
    fk.crc32c_repeat(data, reps, name)
    return (time.perf_counter() - start) / reps


def engine_table(rounds, budget, sizes, engines):
    """Per-pass ns of each engine at each size, best of `rounds` alternating rounds."""
    best = {}
    for label, size in sizes:
        data = os.urandom(size)
        for _ in range(rounds):
            for name in engines:
                t = engine_seconds(name, data, budget)
                best[label, name] = min(best.get((label, name), t), t)
    print("| size | " + " | ".join(f"{e} ns (GB/s)" for e in engines) + " |"
          + (f" {TOP2[1]} vs {TOP2[0]} |" if TOP2 else ""))
    print("|---" * (len(engines) + 1 + bool(TOP2)) + "|")
    for label, size in sizes:
        cells = [f"{best[label, e] * 1e9:.1f} ({size / best[label, e] / 1e9:.1f})" for e in engines]
        ratio = f" {best[label, TOP2[0]] / best[label, TOP2[1]]:.2f}x |" if TOP2 else ""
        print(f"| {label} | " + " | ".join(cells) + " |" + ratio)


def sweep(rounds, budget):
    if not TOP2:
        print("fewer than two hardware engines: nothing to sweep")
        return
    sizes = [(f"{n} B", n) for n in (64, 128, 192, 256, 320, 384, 448, 512, 768, 1024, 2048, 4096)]
    engine_table(rounds, budget, sizes, TOP2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--budget", type=float, default=0.02, help="seconds per timed loop")
    parser.add_argument("--sweep", action="store_true", help="only the 64 B-4 KiB engine sweep")
    args = parser.parse_args()

    print(f"engine: {fk.engine()}   available: {', '.join(fk.engines())}   "
          f"python {platform.python_version()}   {os.cpu_count()} cpus   "
          f"best of {args.rounds} rounds")
    if args.sweep:
        sweep(args.rounds, args.budget)
        return
    best = measure(args.rounds, args.budget)
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
    if HW_ENGINES:
        print("\nEach engine forced, looped in C (no Python call in the figures):")
        engine_table(args.rounds, args.budget, SIZES, HW_ENGINES)
    speedup = two_thread_speedup(args.budget * 10)
    print("\n2 threads / 1 thread aggregate throughput at 1 MiB: "
          + ", ".join(f"{n} {s:.2f}x" for n, s in speedup.items()))


if __name__ == "__main__":
    main()
