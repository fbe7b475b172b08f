"""Log storage benchmarks, each a ratio against a limit measured in the same run (DESIGN §9).

    .venv/bin/python bench/bench_log.py                 # all sections
    .venv/bin/python bench/bench_log.py append lookup   # some: append|kinds|lookup|recovery|start|flush

Sections:
  append    Log.append of ~1 MiB and 16 KiB batches (validate + CRC + stamp offsets + write +
            index) vs a plain os.write loop of the same bytes into a file in the same directory,
            and of 1-record batches (the fixed cost per call). Alternating rounds after a
            pre-warm round, best of N, files removed between rounds.
  kinds     16 KiB appends of idempotent batches (a producer id, sequences in order), to a
            compacted topic, and to a LogAppendTime topic, each vs plain 16 KiB appends of the
            same records (96 MiB of distinct batches for every kind) in the same rounds
            (alternating): what each kind costs over the plain path. Issue 13's targets:
            idempotent >= 0.9x, compacted >= 0.7x.
  lookup    random Log.read(offset, 1 MiB) over a 64 MiB log of 1 KiB batches in 8 MiB segments:
            lookups/s (target >= 500k/s); the limit is a loop of 61-byte os.pread calls (one batch header).
  recovery  unclean reopen of a 512 MiB log of 16 KiB batches (revalidate every CRC, rebuild
            indexes): GB/s (target >= 1 GB/s) vs the crc32c package over the same bytes.
  start     clean start (marker present) of a broker's 1,000 partitions, 256 KiB of 16 KiB batches
            each, by LogManager: with the active segments' tail check (last index entry to the end,
            CRC-32C) vs the same start with the check switched off in this process -- what a clean
            start cost before it was added. Alternating rounds after a warm-up, medians. Target:
            within 1.5x.
  flush     throughput with flush.messages M = 1, 10, 100, 1000 and flush.ms S = 1, 10, 100 vs no
            flush policy, 10-record batches of 1 KiB records; plotted to bench/flush_policy.png.
            (fdatasync is nearly free on this VM: DESIGN §9 — the ratios say what the policy's
            bookkeeping costs here, not what a real disk would.)
"""
import os
import random
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import crc32c as crc32c_pkg  # noqa: E402

from fastkafka.config import LogConfig  # noqa: E402
from fastkafka.log import Log  # noqa: E402
from fastkafka.log.manager import LogManager  # noqa: E402
from fastkafka.log.segment import LogSegment  # noqa: E402
from fastkafka.records import build_batch  # noqa: E402

BENCH_DIR = os.environ.get("FASTKAFKA_BENCH_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".tmp"))


def make_batch(n_records: int, record_size: int) -> bytearray:
    ts = 1_700_000_000_000
    val = os.urandom(record_size)
    return bytearray(build_batch([(b"key-%06d" % i, val, [], ts + i) for i in range(n_records)]))


def fresh_dir(name: str) -> str:
    d = os.path.join(BENCH_DIR, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


# --- append ---
def run_log_append(buf: bytearray, total: int) -> float:
    d = fresh_dir("append-0")
    log = Log(d, LogConfig(), clean_shutdown=True)
    n = total // len(buf)
    t0 = time.perf_counter()
    for _ in range(n):
        log.append(buf)
    dt = time.perf_counter() - t0
    log.close()
    shutil.rmtree(d)
    return n * len(buf) / dt


def run_os_write(buf: bytearray, total: int) -> float:
    d = fresh_dir("oswrite-0")
    fd = os.open(os.path.join(d, "00000000000000000000.log"), os.O_WRONLY | os.O_CREAT, 0o644)
    data = bytes(buf)
    n = total // len(buf)
    t0 = time.perf_counter()
    for _ in range(n):
        os.write(fd, data)
    dt = time.perf_counter() - t0
    os.close(fd)
    shutil.rmtree(d)
    return n * len(buf) / dt


def bench_append(rounds: int = 5, total: int = 256 << 20) -> list[str]:
    rows = []
    # the 1-record row shows the fixed cost per call (Python policy + validate), not bandwidth
    for label, n, size, nbytes in (("~1 MiB", 1000, 1024, total), ("16 KiB", 16, 1000, total),
                                   ("1-record", 1, 10, 16 << 20)):
        buf = make_batch(n, size)
        run_log_append(buf, nbytes)          # pre-warm: page cache and allocator
        run_os_write(buf, nbytes)
        best_log = best_os = 0.0
        for _ in range(rounds):
            best_log = max(best_log, run_log_append(buf, nbytes))
            best_os = max(best_os, run_os_write(buf, nbytes))
        per_call = f"{len(buf) / best_log * 1e6:.2f} vs {len(buf) / best_os * 1e6:.2f} us/call"
        rows.append(f"| append {label} batches ({len(buf)} B; {per_call}) | {best_log / 1e9:.3f} GB/s | "
                    f"os.write {best_os / 1e9:.3f} GB/s | {best_log / best_os:.2f}x | "
                    f"{'>= 0.8x' if n > 1 else '-'} |")
    return rows


def keyed_batches(count: int, idempotent: bool, n_records: int = 16, record_size: int = 1000) -> list[bytearray]:
    """``count`` distinct batches of keyed records (built outside the timing), of one producer
    with consecutive sequences when ``idempotent``: the same bytes but for the producer fields,
    so the two differ only in what the append path does with them (not in cache footprint)."""
    ts = 1_700_000_000_000
    val = os.urandom(record_size)
    out = []
    for k in range(count):
        records = [(b"key-%06d" % i, val, [], ts + i) for i in range(n_records)]
        producer = dict(producer_id=1000, producer_epoch=0, base_sequence=k * n_records) if idempotent else {}
        out.append(bytearray(build_batch(records, **producer)))
    return out


def run_appends(bufs: list[bytearray], **cfg) -> float:
    d = fresh_dir("kinds-0")
    log = Log(d, LogConfig().with_overrides(**cfg), clean_shutdown=True)
    t0 = time.perf_counter()
    for b in bufs:
        log.append(b)
    dt = time.perf_counter() - t0
    log.close()
    shutil.rmtree(d)
    return sum(len(b) for b in bufs) / dt


def bench_kinds(rounds: int = 7, total: int = 96 << 20) -> list[str]:
    plain = make_batch(16, 1000)
    count = total // len(plain)
    plain_bufs = keyed_batches(count, idempotent=False)
    idem = keyed_batches(count, idempotent=True)
    kinds = {"idempotent (producer id, sequences)": lambda: run_appends(idem),
             "compacted topic (keys counted in the walk)": lambda: run_appends(plain_bufs, cleanup_policy=("compact",)),
             "LogAppendTime topic (maxTimestamp + CRC rewritten)":
                 lambda: run_appends(plain_bufs, message_timestamp_type="LogAppendTime")}
    run_appends(plain_bufs)                  # pre-warm
    best = {k: 0.0 for k in kinds}
    best_plain = 0.0
    for r in range(rounds):
        order = list(kinds.items())
        if r % 2:
            order.reverse()
        for name, run in order:
            best[name] = max(best[name], run())
            best_plain = max(best_plain, run_appends(plain_bufs))
    targets = {"idempotent (producer id, sequences)": ">= 0.9x", "compacted topic (keys counted in the walk)": ">= 0.7x"}
    return [f"| append 16 KiB, {name} ({len(plain) / best[name] * 1e6:.2f} us/call) | {best[name] / 1e9:.3f} GB/s | "
            f"plain {best_plain / 1e9:.3f} GB/s | {best[name] / best_plain:.2f}x | {targets.get(name, '-')} |"
            for name in kinds]


# --- lookup ---
def bench_lookup(n_lookups: int = 300_000) -> list[str]:
    d = fresh_dir("lookup-0")
    log = Log(d, LogConfig(segment_bytes=8 << 20), clean_shutdown=True)
    buf = make_batch(1, 900)
    while log.size < 64 << 20:
        log.append(buf)
    leo = log.log_end_offset
    rng = random.Random(1)
    offsets = [rng.randrange(leo) for _ in range(n_lookups)]
    read = log.read
    for off in offsets[:20_000]:       # pre-warm: open files, map indexes
        read(off, 1 << 20)
    best_rate = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        for off in offsets:
            read(off, 1 << 20)
        best_rate = max(best_rate, n_lookups / (time.perf_counter() - t0))

    # the limit: one 61-byte pread (a batch header) per lookup, the least any lookup must do
    fd = os.open(log.segments[0].log_path, os.O_RDONLY)
    size = log.segments[0].size - 61
    positions = [rng.randrange(size) for _ in range(n_lookups)]
    pread = os.pread
    call_rate = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        for p in positions:
            pread(fd, 61, p)
        call_rate = max(call_rate, n_lookups / (time.perf_counter() - t0))
    os.close(fd)
    segs = len(log.segments)
    log.close()
    shutil.rmtree(d)
    return [f"| random read() lookups ({leo} offsets, {segs} segments) | {best_rate / 1e3:.0f}k/s | "
            f"os.pread 61 B {call_rate / 1e3:.0f}k/s | {best_rate / call_rate:.2f}x | >= 500k/s |"]


# --- recovery ---
def bench_recovery(total: int = 512 << 20) -> list[str]:
    d = fresh_dir("recovery-0")
    log = Log(d, LogConfig(), clean_shutdown=True)
    buf = make_batch(16, 1000)
    while log.size < total:
        log.append(buf)
    log.close()
    size = log.size
    with open(log.segments[0].log_path, "rb") as f:
        data = f.read()
    rates, crc_rate = [], 0.0
    for _ in range(3):
        for p in os.listdir(d):            # indexes are rebuilt too
            if p.endswith("index"):
                os.unlink(os.path.join(d, p))
        t0 = time.perf_counter()
        again = Log(d, LogConfig(), clean_shutdown=False, recovery_point=0)
        rates.append(size / (time.perf_counter() - t0))
        assert again.log_end_offset == log.log_end_offset and again.recovered_bytes_dropped == 0
        again.close()
        t0 = time.perf_counter()
        crc32c_pkg.crc32c(data)
        crc_rate = max(crc_rate, len(data) / (time.perf_counter() - t0))
    shutil.rmtree(d)
    best_rate = max(rates)
    return [f"| recovery revalidation + index rebuild ({size >> 20} MiB, 16 KiB batches) | "
            f"{best_rate / 1e9:.2f} GB/s | crc32c pkg {crc_rate / 1e9:.2f} GB/s | "
            f"{best_rate / crc_rate:.2f}x | >= 1 GB/s |"]


# --- clean start ---
def timed_start(d: str, n_partitions: int) -> float:
    t0 = time.perf_counter()
    mgr = LogManager({"log.dirs": d}, start_scheduler=False)
    dt = time.perf_counter() - t0
    assert len(mgr.logs()) == n_partitions
    mgr.shutdown()
    return dt


def bench_start(n_partitions: int = 1000, per_partition: int = 256 << 10, rounds: int = 7) -> list[str]:
    d = fresh_dir("start")
    mgr = LogManager({"log.dirs": d}, start_scheduler=False)
    buf = make_batch(16, 1000)
    for p in range(n_partitions):
        lg = mgr.get_or_create_log("t", p)
        while lg.size < per_partition:
            lg.append(buf)
    mgr.shutdown()
    checked = LogSegment.recover_tail
    times = {"checked": [], "unchecked": []}
    timed_start(d, n_partitions)                     # warm the page cache
    for _ in range(rounds):
        for name in times:
            LogSegment.recover_tail = checked if name == "checked" else (lambda self: 0)
            times[name].append(timed_start(d, n_partitions))
    LogSegment.recover_tail = checked
    shutil.rmtree(d)
    on, off = sorted(times["checked"])[rounds // 2], sorted(times["unchecked"])[rounds // 2]
    return [f"| clean start of {n_partitions} partitions ({per_partition >> 10} KiB each), tail checked | "
            f"{on * 1e3:.0f} ms | unchecked {off * 1e3:.0f} ms | {on / off:.2f}x | <= 1.5x |"]


# --- flush policy ---
def run_policy(buf: bytearray, total: int, **cfg) -> tuple[float, int]:
    d = fresh_dir("flush-0")
    log = Log(d, LogConfig().with_overrides(**cfg), clean_shutdown=True)
    n = total // len(buf)
    t0 = time.perf_counter()
    for _ in range(n):
        log.append(buf)
    dt = time.perf_counter() - t0
    syncs = log.active_segment.file().sync_count
    log.close()
    shutil.rmtree(d)
    return n * len(buf) / dt, syncs


def bench_flush(total: int = 256 << 20, rounds: int = 3) -> list[str]:
    buf = make_batch(10, 1024)
    policies = [("none", {})] + [(f"M={m}", {"flush_messages": m}) for m in (1, 10, 100, 1000)] + \
               [(f"S={s} ms", {"flush_ms": s}) for s in (1, 10, 100)]
    run_policy(buf, total)
    best = {name: (0.0, 0) for name, _ in policies}
    for _ in range(rounds):
        for name, cfg in policies:
            rate, syncs = run_policy(buf, total, **cfg)
            if rate > best[name][0]:
                best[name] = (rate, syncs)
    base = best["none"][0]
    rows = [f"| flush {name} | {rate / 1e9:.2f} GB/s | no policy {base / 1e9:.2f} GB/s | "
            f"{rate / base:.2f}x | {syncs} fdatasyncs |" for name, (rate, syncs) in best.items() if name != "none"]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        names = list(best)
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.bar(names, [best[n][0] / 1e9 for n in names], color=["grey"] + ["C0"] * 4 + ["C1"] * 3)
        ax.set_ylabel("append throughput, GB/s")
        ax.set_title("Log.append vs flush policy (M = flush.messages, S = flush.ms)", fontsize=10)
        for i, n in enumerate(names):
            ax.text(i, best[n][0] / 1e9, f"{best[n][0] / base:.2f}x", ha="center", va="bottom", fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(os.path.dirname(os.path.abspath(__file__)), "flush_policy.png"), dpi=100)
    except ImportError:
        rows.append("(matplotlib missing: no plot)")
    return rows


SECTIONS = {"append": bench_append, "kinds": bench_kinds, "lookup": bench_lookup, "recovery": bench_recovery, "start": bench_start, "flush": bench_flush}


def main(argv: list[str]) -> None:
    chosen = argv or list(SECTIONS)
    os.makedirs(BENCH_DIR, exist_ok=True)
    print("| what | fastkafka | limit (same run) | ratio | target |")
    print("|---|---|---|---|---|")
    try:
        for name in chosen:
            for row in SECTIONS[name]():
                print(row, flush=True)
    finally:
        shutil.rmtree(BENCH_DIR, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
