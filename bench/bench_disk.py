"""The user's disks as the limit (issue 18 item 2): each log dir's write and read rate, the
broker on those dirs as ratios of them, a log.flush.interval sweep (throughput and p99 latency,
plotted to bench/disk_flush_sweep.png) and JBOD (one dir against all of them).

    .venv/bin/python bench/bench_disk.py [--log-dirs D1,D2] [--size-mb 512] [--sweep-records 200000] [--rounds 2]

The measuring is fastkafka.perf's (what ``fastkafka perf disk`` runs); this script picks the
sizes, alternates rounds and prints the markdown for bench/RESULTS.md. Directories default to
FASTKAFKA_BENCH_DIR (bench/.tmp)/disk-a and disk-b, removed afterwards.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from fastkafka.cli.perf_disk import SWEEP, setting_text  # noqa: E402
from fastkafka.perf.disk import measure_log_dirs  # noqa: E402
from fastkafka.perf.on_disk import broker_rates, flush_sweep, jbod  # noqa: E402

BENCH_DIR = os.environ.get("FASTKAFKA_BENCH_DIR", os.path.join(HERE, ".tmp"))
RAM_DIR = "/dev/shm"
CAPPED_RATE = 100_000      # records/s (~95 MB/s of 1000 B) for the sweep's p99: every setting sustains it
MB = 1 << 20


def run(log_dirs: list[str], size_mb: int, sweep_records: int, rounds: int) -> dict:
    """Every figure, limits first, each section alternating what it compares over ``rounds``."""
    size = size_mb * MB
    disks = measure_log_dirs(log_dirs, size, rounds=rounds)
    # the same broker and client on a RAM directory, alternating with the disk: what they do
    # when the disk costs nothing, so the disk's share of the gap shows
    broker, ram = [], []
    for _ in range(rounds):
        broker.append(broker_rates([log_dirs[0]], size))
        with tempfile.TemporaryDirectory(dir=RAM_DIR) as d:
            ram.append(broker_rates([d], size))
    broker.sort(key=lambda b: b.produce_bps)
    b = broker[len(broker) // 2]
    ram_produce = statistics.median(x.produce_bps for x in ram)
    ram_fetch = statistics.median(x.fetch_bps for x in ram)
    d0 = disks[0]
    out = {
        "disks": [{"path": d.path, "write_buffered": d.write_buffered / MB, "write_direct": (d.write_direct or 0) / MB,
                   "read_direct": (d.read_direct or 0) / MB, "read_cold": d.read_cold / MB} for d in disks],
        "broker": {"produce": b.produce_bps / MB, "fetch": b.fetch_bps / MB,
                   "produce_ratio": b.produce_bps / d0.write_buffered, "fetch_ratio_cold": b.fetch_bps / d0.read_cold,
                   "fetch_ratio_direct": b.fetch_bps / d0.read_direct if d0.read_direct else None,
                   "p99_ms": b.produce.histogram.percentile_ms(0.99), "broker_cpu_s": b.broker_cpu_s,
                   "client_cpu_s": b.client_cpu_s, "wall_s": b.wall_s,
                   "ram_produce": ram_produce / MB, "ram_fetch": ram_fetch / MB,
                   "produce_vs_ram": b.produce_bps / ram_produce, "fetch_vs_ram": b.fetch_bps / ram_fetch},
        "sweep": flush_sweep(log_dirs[0], SWEEP, num_records=sweep_records, rounds=rounds,
                             latency_rate=CAPPED_RATE),
    }
    if len(log_dirs) > 1:
        out["jbod"] = jbod(log_dirs, size, rounds=rounds)
        out["jbod"]["sum_write"] = sum(d.write_buffered for d in disks) / MB
        out["jbod"]["same_device"] = len({os.stat(d).st_dev for d in log_dirs}) == 1
    for row in out["sweep"]:
        row.pop("rounds")
    return out


def plot(sweep: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [setting_text(r["setting"]).replace("default (OS flushes)", "default") for r in sweep]
    fig, ax = plt.subplots(figsize=(10, 5))
    x = range(len(sweep))
    ax.bar(x, [r["mb_per_s"] for r in sweep], color="#4c72b0", label="produce MB/s (saturated)")
    ax.plot(x, [r["disk_write_mb_per_s"] for r in sweep], "k_", markersize=30, mew=2,
            label="disk: buffered write + fdatasync at that interval")
    ax.set_ylabel("MB/s")
    ax.set_xticks(list(x), labels, rotation=20, ha="right")
    ax2 = ax.twinx()
    ax2.plot(x, [r["p99_ms_capped"] for r in sweep], "o-", color="#c44e52", label=f"p99 ms at {CAPPED_RATE} records/s")
    ax2.set_ylabel("p99 latency, ms")
    ax2.set_yscale("log")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.set_title("log.flush.interval.* against produce throughput and p99 latency (1000 B records)")
    fig.legend(h1 + h2, l1 + l2, loc="lower center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=100)


def markdown(r: dict, cmd: str) -> str:
    lines = [f"Command: `{cmd}`", "", "| log dir | buffered write + fdatasync | O_DIRECT write | O_DIRECT read | "
             "buffered read after fadvise(DONTNEED) |", "|---|---|---|---|---|"]
    for d in r["disks"]:
        lines.append(f"| {d['path']} | {d['write_buffered']:.0f} MB/s | {d['write_direct']:.0f} MB/s | "
                     f"{d['read_direct']:.0f} MB/s | {d['read_cold']:.0f} MB/s |")
    b = r["broker"]
    lines += ["", f"Broker on the first dir: produce {b['produce']:.0f} MB/s = **{b['produce_ratio']:.2f}x** of "
              f"the buffered write; fetch (segments dropped from the cache first) {b['fetch']:.0f} MB/s = "
              f"**{b['fetch_ratio_cold']:.2f}x** of the cold buffered read"
              + (f", {b['fetch_ratio_direct']:.2f}x of O_DIRECT read" if b["fetch_ratio_direct"] else "")
              + f"; produce p99 {b['p99_ms']:.0f} ms (saturated); CPU s in {b['wall_s']:.2f} s: broker "
              f"{b['broker_cpu_s']:.2f}, client {b['client_cpu_s']:.2f}.", "",
              f"The same broker and client on {RAM_DIR} (RAM, alternating): produce {b['ram_produce']:.0f} MB/s, "
              f"fetch {b['ram_fetch']:.0f} MB/s; on the disk = **{b['produce_vs_ram']:.2f}x** / "
              f"**{b['fetch_vs_ram']:.2f}x** of that.", "",
              "| log.flush.interval | produce records/s | MB/s | disk limit MB/s | ratio | p99 saturated ms "
              "| p50 / p99 capped ms |", "|---|---|---|---|---|---|---|"]
    for row in r["sweep"]:
        lines.append(f"| {setting_text(row['setting'])} | {row['records_per_s']:.0f} | {row['mb_per_s']:.0f} | "
                     f"{row['disk_write_mb_per_s']:.0f} | {row['ratio']:.2f}x | {row['p99_ms_saturated']:.0f} | "
                     f"{row['p50_ms_capped']:.1f} / {row['p99_ms_capped']:.1f} |")
    lines.append(f"\n(capped: {r['sweep'][0]['capped_rate']:.0f} records/s, a rate every setting sustains)")
    if "jbod" in r:
        j = r["jbod"]
        lines += ["", f"JBOD: one dir produce {j['one_dir']['produce_bps'] / MB:.0f} MB/s, fetch "
                  f"{j['one_dir']['fetch_bps'] / MB:.0f} MB/s; all dirs produce {j['all_dirs']['produce_bps'] / MB:.0f}"
                  f" MB/s, fetch {j['all_dirs']['fetch_bps'] / MB:.0f} MB/s (partitions per dir: "
                  f"{j['all_dirs']['partitions']}); sum of the dirs' buffered write {j['sum_write']:.0f} MB/s"
                  + (" -- the dirs are one device here, so the sum is not a real limit" if j["same_device"] else "")
                  + "."]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log-dirs", default=None, help="comma-separated (default: two dirs under FASTKAFKA_BENCH_DIR)")
    p.add_argument("--size-mb", type=int, default=512)
    p.add_argument("--sweep-records", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--json", default=None, help="also write the figures here")
    args = p.parse_args(argv)
    made = []
    if args.log_dirs:
        dirs = [os.path.abspath(d) for d in args.log_dirs.split(",")]
    else:
        dirs = [os.path.join(BENCH_DIR, "disk-a"), os.path.join(BENCH_DIR, "disk-b")]
        made = dirs
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    try:
        r = run(dirs, args.size_mb, args.sweep_records, args.rounds)
    finally:
        for d in made:
            shutil.rmtree(d, ignore_errors=True)
    plot(r["sweep"], os.path.join(HERE, "disk_flush_sweep.png"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1, default=str)
    print(markdown(r, "python bench/bench_disk.py " + " ".join(argv if argv is not None else sys.argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
