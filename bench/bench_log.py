"""Log storage helpers for bench/test_bench_log.py: the batches, the logs under test and the
limits' own timed loops (os.write, os.pread, a CRC pass). The figures (append vs os.write, the
append kinds vs plain appends, lookups vs pread, recovery vs a CRC pass, clean start with and
without the tail check, flush policies vs none) are that module's:

    .venv/bin/python -m pytest bench/test_bench_log.py -p no:cacheprovider

Files go under FASTKAFKA_BENCH_DIR (default bench/.tmp), removed between rounds.
"""
import os
import random
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fastkafka.config import LogConfig  # noqa: E402
from fastkafka.log import Log  # noqa: E402
from fastkafka.log.manager import LogManager  # noqa: E402
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


def open_log(name: str, **cfg) -> tuple[Log, str]:
    d = fresh_dir(name)
    return Log(d, LogConfig().with_overrides(**cfg) if cfg else LogConfig(), clean_shutdown=True), d


def close_log(log: Log, d: str) -> None:
    log.close()
    shutil.rmtree(d)


def os_write_seconds(buf: bytearray, total: int) -> float:
    """The append limit: a plain os.write loop of the same bytes into a file in the same directory."""
    d = fresh_dir("oswrite-0")
    fd = os.open(os.path.join(d, "00000000000000000000.log"), os.O_WRONLY | os.O_CREAT, 0o644)
    data = bytes(buf)
    t0 = time.perf_counter()
    for _ in range(total // len(buf)):
        os.write(fd, data)
    dt = time.perf_counter() - t0
    os.close(fd)
    shutil.rmtree(d)
    return dt


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


def appends_seconds(bufs: list[bytearray], **cfg) -> float:
    """Seconds to append ``bufs`` to a fresh log (opening and removing it untimed)."""
    log, d = open_log("kinds-0", **cfg)
    t0 = time.perf_counter()
    for b in bufs:
        log.append(b)
    dt = time.perf_counter() - t0
    close_log(log, d)
    return dt


def lookup_log(total: int) -> tuple[Log, str]:
    """A log of ``total`` bytes of 1 KiB batches in 8 MiB segments."""
    log, d = open_log("lookup-0", segment_bytes=8 << 20)
    buf = make_batch(1, 900)
    while log.size < total:
        log.append(buf)
    return log, d


def pread_headers(path: str, positions: list[int]) -> float:
    """The lookup limit: one 61-byte pread (a batch header) per lookup, the least any lookup does."""
    fd = os.open(path, os.O_RDONLY)
    pread = os.pread
    t0 = time.perf_counter()
    for p in positions:
        pread(fd, 61, p)
    dt = time.perf_counter() - t0
    os.close(fd)
    return dt


def random_offsets(n: int, below: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(below) for _ in range(n)]


def recovery_log(total: int) -> tuple[str, int, int]:
    """A closed log of ``total`` bytes of 16 KiB batches: (dir, size, log end offset)."""
    log, d = open_log("recovery-0")
    buf = make_batch(16, 1000)
    while log.size < total:
        log.append(buf)
    log.close()
    return d, log.size, log.log_end_offset


def drop_indexes(d: str) -> None:
    """So an unclean reopen rebuilds them too."""
    for p in os.listdir(d):
        if p.endswith("index"):
            os.unlink(os.path.join(d, p))


def recover(d: str, leo: int) -> None:
    """Unclean reopen: every CRC revalidated, indexes rebuilt."""
    again = Log(d, LogConfig(), clean_shutdown=False, recovery_point=0)
    assert again.log_end_offset == leo and again.recovered_bytes_dropped == 0
    again.close()


def broker_logs(n_partitions: int, per_partition: int) -> str:
    """A cleanly shut down LogManager directory of ``n_partitions`` partitions of 16 KiB batches."""
    d = fresh_dir("start")
    mgr = LogManager({"log.dirs": d}, start_scheduler=False)
    buf = make_batch(16, 1000)
    for p in range(n_partitions):
        lg = mgr.get_or_create_log("t", p)
        while lg.size < per_partition:
            lg.append(buf)
    mgr.shutdown()
    return d


def start(d: str, n_partitions: int) -> None:
    mgr = LogManager({"log.dirs": d}, start_scheduler=False)
    assert len(mgr.logs()) == n_partitions
    mgr.shutdown()


def policy_seconds(buf: bytearray, total: int, **cfg) -> tuple[float, int]:
    """Seconds to append ``total`` bytes under a flush policy, and the fdatasyncs it made."""
    log, d = open_log("flush-0", **cfg)
    n = total // len(buf)
    t0 = time.perf_counter()
    for _ in range(n):
        log.append(buf)
    dt = time.perf_counter() - t0
    syncs = log.active_segment.file().sync_count
    close_log(log, d)
    return dt, syncs
