"""The broker on the user's log directories, judged by what those disks do alone.

:class:`BrokerProcess` runs ``python -m fastkafka serve`` with ``log.dirs`` set to the given
directories on a free loopback port. :func:`broker_rates` produces ``size`` bytes to it and
fetches them back after dropping the segments from the page cache, so the fetch reads the disk
(as far as ``posix_fadvise`` can make it); the caller divides by :mod:`.disk`'s rates.
:func:`flush_sweep` restarts the broker for each ``log.flush.interval.messages`` /
``log.flush.interval.ms`` setting and measures throughput and p99 latency; :func:`jbod`
compares one directory with all of them.

The client is our own Python producer and fetcher in the same machine: where the disk is faster
than they are, a ratio below 1 is the client's limit, not the broker's (the report says which
process was busy: :attr:`BrokerRates.broker_cpu_s`).

Example (a real broker; a few seconds)::

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     r = broker_rates([d], 8 << 20, record_size=1000)
    >>> r.produce.records, r.consume.records
    (8388, 8388)
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from .consume import ConsumeResult, run_consume
from .disk import drop_cached
from .produce import ProduceResult, run_produce

__all__ = ["BrokerProcess", "BrokerRates", "broker_rates", "flush_interval", "flush_sweep", "jbod", "PRODUCER_PROPS"]

# Big batches and a short linger: the producer's per-request cost must not hide the disk's rate.
PRODUCER_PROPS = {"acks": "1", "batch.size": 1 << 20, "linger.ms": 5}
TOPIC = "perf-disk"


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class BrokerProcess:
    """``python -m fastkafka serve`` on 127.0.0.1:<free port> with ``log.dirs`` = ``log_dirs``
    and ``overrides`` (Kafka names); stopped with SIGTERM (a clean shutdown) on exit."""

    def __init__(self, log_dirs: list[str], overrides: dict | None = None, *, timeout_s: float = 60.0):
        self.log_dirs, self.overrides, self.timeout_s = list(log_dirs), dict(overrides or {}), timeout_s
        self.proc: subprocess.Popen | None = None
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> "BrokerProcess":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        props = {"listeners": f"PLAINTEXT://{self.bootstrap}", "log.dirs": ",".join(self.log_dirs)}
        props.update(self.overrides)
        argv = [sys.executable, "-m", "fastkafka", "serve", "--log-level", "WARNING"]
        for k, v in props.items():
            argv += ["--override", f"{k}={v}"]
        self._stderr = tempfile.TemporaryFile()       # a pipe nobody reads could fill and stall the broker
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self._stderr)
        deadline = time.monotonic() + self.timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the broker exited with {self.proc.returncode}: {self._err()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.__exit__()
                    raise TimeoutError(f"the broker did not listen on {self.bootstrap} in {self.timeout_s} s")
                time.sleep(0.05)

    def _err(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-2000:]

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.proc.pid)

    def __exit__(self, *exc) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(self.timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()
        self.proc = None


@dataclass
class BrokerRates:
    produce: ProduceResult
    consume: ConsumeResult
    partitions: dict            # log dir -> partition directories of the topic in it
    broker_cpu_s: float         # the broker's CPU seconds during produce + fetch
    client_cpu_s: float         # this process's (producer and fetcher threads) in the same time
    wall_s: float

    @property
    def produce_bps(self) -> float:
        return self.produce.bytes_per_s

    @property
    def fetch_bps(self) -> float:
        # the fetch time alone: leaders and offsets are found before it
        return self.consume.fetch_bytes_per_s


def _drop_segments(log_dirs: list[str], topic: str) -> None:
    for d in log_dirs:
        for path in glob.glob(os.path.join(d, f"{topic}-*", "*.log")):
            drop_cached(path)


def broker_rates(log_dirs: list[str], size: int, *, record_size: int = 10_000, partitions: int | None = None,
                 overrides: dict | None = None, producer_props: dict | None = None,
                 bootstrap: str | None = None) -> BrokerRates:
    """Produce ``size`` bytes (records of ``record_size``) over ``partitions`` partitions
    (default two per log dir, so JBOD spreads them), then fetch them all back cold. Starts a
    broker on ``log_dirs`` unless ``bootstrap`` names one already running on them."""
    parts = partitions or 2 * len(log_dirs)
    props = {"num.partitions": parts}
    props.update(overrides or {})
    n = max(1, size // record_size)
    cfg = dict(PRODUCER_PROPS)
    cfg.update(producer_props or {})

    def measure(server: str, cpu) -> BrokerRates:
        cfg["bootstrap.servers"] = server
        t0, c0, p0 = time.monotonic(), cpu(), time.process_time()
        produced = run_produce(cfg, TOPIC, n, record_size, out=None)
        _drop_segments(log_dirs, TOPIC)
        consumed = run_consume({"bootstrap.servers": server}, TOPIC, n)
        spread = {d: sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, f"{TOPIC}-*"))) for d in log_dirs}
        return BrokerRates(produced, consumed, spread, cpu() - c0, time.process_time() - p0, time.monotonic() - t0)

    if bootstrap is not None:
        return measure(bootstrap, lambda: 0.0)
    with BrokerProcess(log_dirs, props) as b:
        return measure(b.bootstrap, b.cpu_seconds)


def _fresh(parent: str, name: str) -> str:
    path = os.path.join(parent, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def flush_interval(setting: dict, record_size: int) -> tuple[int | None, int | None]:
    """The disk probe's (flush_bytes, flush_ms) for a broker's ``log.flush.interval.*`` setting.
    The probe writes 1 MiB blocks and checks after each, so it never syncs more often than a
    broker that flushes whole appends of 1 MiB batches."""
    messages = setting.get("log.flush.interval.messages")
    ms = setting.get("log.flush.interval.ms")
    return (None if messages is None else int(messages) * record_size), (None if ms is None else int(ms))


def flush_sweep(log_dir: str, settings: list[dict], *, num_records: int, record_size: int = 1000,
                latency_rate: float | None = None, rounds: int = 2) -> list[dict]:
    """For each broker ``settings`` entry (e.g. ``{"log.flush.interval.messages": 1000}``):
    the disk's buffered write rate with that flush interval (the limit), then a fresh broker on
    a fresh directory under ``log_dir``, ``num_records`` produced as fast as possible
    (throughput, and the p99 of that saturated run), then the same count capped at
    ``latency_rate`` records/s (default: half the first setting's rate) for the p99 of a broker
    that is not saturated. Rounds alternate the settings (every other one in reverse order);
    medians are kept."""
    import statistics

    from .disk import measure_log_dir
    runs: list[list[dict]] = [[] for _ in settings]
    for round_ in range(rounds):
        order = list(enumerate(settings))
        for i, setting in order if round_ % 2 == 0 else order[::-1]:    # drift hits both ends alike
            d = _fresh(log_dir, f"flush-sweep-{i}")
            try:
                flush_bytes, flush_ms = flush_interval(setting, record_size)
                disk = measure_log_dir(d, num_records * record_size, flush_bytes=flush_bytes, flush_ms=flush_ms)
                with BrokerProcess([d], setting) as b:
                    cfg = dict(PRODUCER_PROPS, **{"bootstrap.servers": b.bootstrap})
                    full = run_produce(cfg, TOPIC, num_records, record_size, out=None)
                    if latency_rate is None:
                        latency_rate = full.records_per_s / 2
                    capped = run_produce(cfg, TOPIC, num_records, record_size, throughput=latency_rate, out=None)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            runs[i].append({"records_per_s": full.records_per_s, "mb_per_s": full.bytes_per_s / (1 << 20),
                            "disk_write_mb_per_s": disk.write_buffered / (1 << 20),
                            "p99_ms_saturated": full.histogram.percentile_ms(0.99),
                            "p50_ms_capped": capped.histogram.percentile_ms(0.5),
                            "p99_ms_capped": capped.histogram.percentile_ms(0.99),
                            "capped_rate": latency_rate})
    out = []
    for setting, rs in zip(settings, runs):
        row = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        row["ratio"] = row["mb_per_s"] / row["disk_write_mb_per_s"]
        row["setting"] = setting
        row["rounds"] = rs
        out.append(row)
    return out


def jbod(log_dirs: list[str], size: int, *, record_size: int = 10_000, rounds: int = 2) -> dict:
    """Produce/fetch on the first directory alone and on all of them (same bytes, two
    partitions per directory in use), alternating; the medians and where the partitions went."""
    import statistics
    one, many = [], []
    for _ in range(rounds):
        for dirs, acc in (([log_dirs[0]], one), (log_dirs, many)):
            subdirs = [_fresh(d, "jbod") for d in dirs]
            try:
                acc.append(broker_rates(subdirs, size, record_size=record_size))
            finally:
                for d in subdirs:
                    shutil.rmtree(d, ignore_errors=True)

    def med(rs, attr):
        return statistics.median(getattr(r, attr) for r in rs)
    return {"one_dir": {"produce_bps": med(one, "produce_bps"), "fetch_bps": med(one, "fetch_bps")},
            "all_dirs": {"produce_bps": med(many, "produce_bps"), "fetch_bps": med(many, "fetch_bps"),
                         "partitions": {os.path.dirname(d): len(p) for d, p in many[-1].partitions.items()}}}
