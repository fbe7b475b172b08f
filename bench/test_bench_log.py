"""Log storage, each figure against a limit in the same run: Log.append vs os.write of the same
bytes; idempotent / compacted / LogAppendTime appends vs plain ones; random Log.read lookups vs a
61-byte pread each; unclean recovery vs the crc32c package over the same bytes; a clean start
with the tail check vs without; flush policies vs none (fdatasync is nearly free on this VM:
DESIGN §9 -- those ratios say what the policy's bookkeeping costs here, not what a disk would)."""
import os
import shutil

import crc32c as crc32c_pkg
import pytest
from bench_log import (BENCH_DIR, appends_seconds, broker_logs, close_log, drop_indexes, keyed_batches,
                       lookup_log, make_batch, open_log, os_write_seconds, policy_seconds, pread_headers,
                       random_offsets, recover, recovery_log, start)
from benchkit import SelfTimed, compare, pick

from fastkafka.log.segment import LogSegment

TOTAL = pick(128 << 20, 1 << 20)


@pytest.fixture(autouse=True, scope="module")
def bench_dir():
    os.makedirs(BENCH_DIR, exist_ok=True)
    yield
    shutil.rmtree(BENCH_DIR, ignore_errors=True)


@pytest.mark.parametrize("label,n,size,total", [("~1 MiB", 1000, 1024, TOTAL), ("16 KiB", 16, 1000, TOTAL),
                                                ("1-record", 1, 10, pick(16 << 20, 64 << 10))],
                         ids=["1MiB", "16KiB", "1record"])
def test_append(benchmark, label, n, size, total):
    buf = make_batch(n, size)
    count = total // len(buf)

    def append(log, _d):
        for _ in range(count):
            log.append(buf)
    benchmark.group = "log"
    compare(benchmark, append, {"os.write": SelfTimed(lambda: os_write_seconds(buf, total))},
            what=f"Log.append {label} batches ({len(buf)} B)", amount=count * len(buf), unit="GB/s", scale=1e9,
            prepare=lambda: open_log("append-0"), cleanup=close_log, goal=">= 0.8x" if n > 1 else "")


KINDS = {"idempotent (producer id, sequences)": ({}, True, ">= 0.9x"),
         "compacted topic": ({"cleanup_policy": ("compact",)}, False, ">= 0.7x"),
         "LogAppendTime topic": ({"message_timestamp_type": "LogAppendTime"}, False, "")}


@pytest.mark.parametrize("kind", list(KINDS), ids=["idempotent", "compacted", "logappendtime"])
def test_append_kind(benchmark, kind):
    cfg, idempotent, goal = KINDS[kind]
    count = pick(96 << 20, 1 << 20) // len(make_batch(16, 1000))
    plain = keyed_batches(count, idempotent=False)
    bufs = keyed_batches(count, idempotent=True) if idempotent else plain

    def append(log, _d):
        for b in bufs:
            log.append(b)
    benchmark.group = "log"
    compare(benchmark, append, {"plain 16 KiB appends": SelfTimed(lambda: appends_seconds(plain))},
            what=f"Log.append 16 KiB, {kind}", amount=sum(map(len, bufs)), unit="GB/s", scale=1e9, n_rounds=7,
            prepare=lambda: open_log("kinds-1", **cfg), cleanup=close_log, goal=goal)


def test_lookup(benchmark):
    log, d = lookup_log(pick(64 << 20, 1 << 20))
    n = pick(200_000, 2_000)
    offsets = random_offsets(n, log.log_end_offset)
    seg = log.segments[0]
    positions = random_offsets(n, seg.size - 61, seed=2)
    read = log.read

    def lookups():
        for off in offsets:
            read(off, 1 << 20)
    lookups()     # open files, map indexes
    benchmark.group = "log"
    try:
        compare(benchmark, lookups, {"os.pread 61 B": SelfTimed(lambda: pread_headers(seg.log_path, positions))},
                what=f"random Log.read lookups ({log.log_end_offset} offsets, {len(log.segments)} segments)",
                amount=n, unit="k lookups/s", scale=1e3, n_rounds=3, goal=">= 500k/s")
    finally:
        close_log(log, d)


def test_recovery(benchmark):
    d, size, leo = recovery_log(pick(256 << 20, 1 << 20))
    with open(os.path.join(d, sorted(f for f in os.listdir(d) if f.endswith(".log"))[0]), "rb") as f:
        data = f.read()
    benchmark.group = "log"
    try:
        compare(benchmark, lambda: recover(d, leo), {"crc32c pkg": lambda: crc32c_pkg.crc32c(data)},
                what=f"recovery: revalidation + index rebuild ({size >> 20} MiB, 16 KiB batches)",
                amount=size, unit="GB/s", scale=1e9, n_rounds=3, prepare=lambda: drop_indexes(d), goal=">= 1 GB/s")
    finally:
        shutil.rmtree(d)


def test_clean_start(benchmark):
    n = pick(1000, 10)
    d = broker_logs(n, pick(256 << 10, 32 << 10))
    checked = LogSegment.recover_tail

    def unchecked():
        LogSegment.recover_tail = lambda self: 0
        try:
            start(d, n)
        finally:
            LogSegment.recover_tail = checked
    start(d, n)                      # warm the page cache
    benchmark.group = "log"
    try:
        compare(benchmark, lambda: start(d, n), {"tail check off": unchecked},
                what=f"clean start of {n} partitions, active segments' tail checked", unit="ms", scale=1e3,
                per_time=False, n_rounds=7, goal="<= 1.5x")
    finally:
        shutil.rmtree(d)


POLICIES = [(f"flush.messages={m}", {"flush_messages": m}) for m in (1, 10, 100, 1000)] + \
           [(f"flush.ms={s}", {"flush_ms": s}) for s in (1, 10, 100)]


@pytest.mark.parametrize("name,cfg", POLICIES, ids=[p[0] for p in POLICIES])
def test_flush_policy(benchmark, name, cfg):
    buf = make_batch(10, 1024)
    total = pick(64 << 20, 256 << 10)
    count = total // len(buf)
    syncs = []

    def append(log, _d):
        for _ in range(count):
            log.append(buf)
        syncs.append(log.active_segment.file().sync_count)
    benchmark.group = "log flush policy"
    compare(benchmark, append, {"no flush policy": SelfTimed(lambda: policy_seconds(buf, total)[0])},
            what=f"Log.append 10 x 1 KiB batches, {name}", amount=count * len(buf), unit="GB/s", scale=1e9,
            n_rounds=3, prepare=lambda: open_log("flush-1", **cfg), cleanup=close_log)
    benchmark.extra_info["others"]["fdatasyncs a round"] = max(syncs)
