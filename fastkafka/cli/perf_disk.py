"""``fastkafka perf disk``: each log directory's linear write and read rate, then the broker on
those directories, its produce and fetch given as ratios of them.

Example::

    $ fastkafka perf disk --log-dirs /data1,/data2 --size-mb 1024 --flush-interval-messages 10000
"""
from __future__ import annotations

import argparse
import os
import sys

__all__ = ["add_arguments", "run_disk", "SWEEP"]

EPILOG = """examples:
  fastkafka perf disk --log-dirs /data --size-mb 1024
  fastkafka perf disk --log-dirs /data1,/data2 --size-mb 512 --flush-interval-messages 10000
  fastkafka perf disk --log-dirs /data --size-mb 256 --no-broker
  fastkafka perf disk --log-dirs /data --size-mb 256 --sweep

For each directory, a file of --size-mb is written 1 MiB at a time through the page cache with
fdatasync every flush interval and at the end (what a broker with that log.flush.interval.*
pays), then with O_DIRECT from an aligned buffer; it is read back with O_DIRECT and, buffered,
after posix_fadvise(DONTNEED) dropped its pages (an unprivileged cold read: dropping the whole
page cache needs root). Then `python -m fastkafka serve` runs with log.dirs set to the
directories (and the same flush interval) on a free loopback port: --size-mb is produced with
our producer (acks=1, 1 MiB batches) over two partitions per directory, the segments are dropped
from the page cache, and everything is fetched back. Produce is given as a ratio of the buffered
write rate (summed over the directories), fetch of the cold buffered read (the broker reads
through the page cache) and of O_DIRECT. With several directories the partitions' placement is
shown; directories on one device share it, which the output says. --sweep restarts the broker
for each log.flush.interval.messages/.ms setting and reports throughput and p99 latency.
MB is 2^20 bytes, as in Kafka's perf tools. The client runs on this machine: where the disk is
faster than it, a ratio below 1 is the client's limit (the broker's CPU seconds are shown)."""

# log.flush.interval.* settings the sweep compares (Kafka's default, never, comes first)
SWEEP = [{}, {"log.flush.interval.messages": 100_000}, {"log.flush.interval.messages": 10_000},
         {"log.flush.interval.messages": 1_000}, {"log.flush.interval.messages": 1},
         {"log.flush.interval.ms": 1000}, {"log.flush.interval.ms": 100}, {"log.flush.interval.ms": 10}]

_MB = 1 << 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EPILOG
    p.add_argument("--log-dirs", required=True, metavar="DIR[,DIR...]", help="the directories to measure")
    p.add_argument("--size-mb", type=int, default=1024, help="MiB written and read per directory (default 1024)")
    p.add_argument("--flush-interval-messages", type=int, default=None, metavar="N",
                   help="fdatasync every N records (of --record-size) -- log.flush.interval.messages")
    p.add_argument("--flush-interval-ms", type=int, default=None, metavar="MS",
                   help="fdatasync every MS ms -- log.flush.interval.ms")
    p.add_argument("--record-size", type=int, default=10_000, help="bytes per record the broker gets (default 10000)")
    p.add_argument("--rounds", type=int, default=1, help="repeat each disk pass, keep the median (default 1)")
    p.add_argument("--no-broker", dest="broker", action="store_false", help="measure the disks only")
    p.add_argument("--broker", dest="broker", action="store_true", default=True, help="(default) run the broker too")
    p.add_argument("--sweep", action="store_true", help="also sweep log.flush.interval.messages/.ms (first dir)")
    p.add_argument("--sweep-records", type=int, default=100_000, help="records per sweep point (default 100000)")


def _mbs(bps: float | None) -> str:
    return "n/a" if bps is None else f"{bps / _MB:.1f} MB/s"


def _flush_text(rates) -> str:
    parts = []
    if rates.flush_bytes is not None:
        parts.append(f"every {rates.flush_bytes / _MB:.1f} MiB")
    if rates.flush_ms is not None:
        parts.append(f"every {rates.flush_ms} ms")
    return " and ".join(parts + ["at the end"])


def _shared_devices(dirs: list[str]) -> list[list[str]]:
    by_dev: dict[int, list[str]] = {}
    for d in dirs:
        by_dev.setdefault(os.stat(d).st_dev, []).append(d)
    return [ds for ds in by_dev.values() if len(ds) > 1]


def setting_text(setting: dict) -> str:
    """``{"log.flush.interval.ms": 10}`` -> ``flush.ms=10``; ``{}`` -> Kafka's default."""
    if not setting:
        return "default (OS flushes)"
    return ", ".join(f"{k.replace('log.flush.interval.', 'flush.')}={v}" for k, v in setting.items())


def run_disk(args, out=None) -> int:
    from fastkafka.perf.disk import measure_log_dirs
    from fastkafka.perf.on_disk import broker_rates, flush_sweep
    out = out or sys.stdout

    dirs = [os.path.abspath(d) for d in args.log_dirs.split(",") if d]
    for d in dirs:
        if not os.path.isdir(d):
            raise ValueError(f"--log-dirs: {d} is not a directory")
    size = args.size_mb * _MB
    flush_bytes = None if args.flush_interval_messages is None else args.flush_interval_messages * args.record_size
    disks = measure_log_dirs(dirs, size, flush_bytes=flush_bytes, flush_ms=args.flush_interval_ms, rounds=args.rounds)
    for r in disks:
        print(f"log dir {r.path}: {r.size // _MB} MiB, fdatasync {_flush_text(r)}", file=out)
        print(f"  write: buffered+fdatasync {_mbs(r.write_buffered)}, O_DIRECT {_mbs(r.write_direct)}", file=out)
        print(f"  read:  O_DIRECT {_mbs(r.read_direct)}, buffered after posix_fadvise(DONTNEED) {_mbs(r.read_cold)}"
              + (f" ({r.direct_error})" if r.direct_error else ""), file=out)
    shared = _shared_devices(dirs)
    for group in shared:
        print(f"note: {', '.join(group)} are on one device: their rates share it, the sum overstates it", file=out)
    if args.broker:
        overrides = {}
        if args.flush_interval_messages is not None:
            overrides["log.flush.interval.messages"] = args.flush_interval_messages
        if args.flush_interval_ms is not None:
            overrides["log.flush.interval.ms"] = args.flush_interval_ms
        b = broker_rates(dirs, size, record_size=args.record_size, overrides=overrides)
        write = sum(r.write_buffered for r in disks)
        cold = sum(r.read_cold for r in disks)
        direct = None if any(r.read_direct is None for r in disks) else sum(r.read_direct for r in disks)
        total = "the sum of the dirs' " if len(dirs) > 1 else ""
        print(f"broker on {','.join(dirs)}: {b.produce.records} records of {args.record_size} B, "
              f"{sum(map(len, b.partitions.values()))} partitions, {setting_text(overrides)}", file=out)
        print(f"  produce {_mbs(b.produce_bps)} = {b.produce_bps / write:.2f}x of {total}buffered+fdatasync write "
              f"({_mbs(write)}); p99 {b.produce.histogram.percentile_ms(0.99):.0f} ms", file=out)
        print(f"  fetch   {_mbs(b.fetch_bps)} = {b.fetch_bps / cold:.2f}x of {total}cold buffered read ({_mbs(cold)})"
              + ("" if direct is None else f", {b.fetch_bps / direct:.2f}x of O_DIRECT read ({_mbs(direct)})"),
              file=out)
        if len(dirs) > 1:
            print("  partitions per log dir: " + ", ".join(f"{d} {len(p)}" for d, p in b.partitions.items()),
                  file=out)
        print(f"  CPU seconds in {b.wall_s:.2f} s of produce + fetch: broker {b.broker_cpu_s:.2f}, "
              f"client {b.client_cpu_s:.2f} (on this machine, {os.cpu_count()} cores)", file=out)
    if args.sweep:
        rows = flush_sweep(dirs[0], SWEEP, num_records=args.sweep_records, record_size=1000, rounds=1)
        print(f"flush sweep on {dirs[0]} ({args.sweep_records} records of 1000 B; p99 capped at "
              f"{rows[0]['capped_rate']:.0f} records/s):", file=out)
        for row in rows:
            print(f"  {setting_text(row['setting']):<28} {row['records_per_s']:>10.0f} records/s "
                  f"{row['mb_per_s']:>8.1f} MB/s  p99 {row['p99_ms_saturated']:>6.0f} ms saturated, "
                  f"{row['p99_ms_capped']:>6.1f} ms capped; {row['ratio']:.2f}x of the disk's write "
                  f"with that flush ({row['disk_write_mb_per_s']:.1f} MB/s)", file=out)
    out.flush()
    return 0
