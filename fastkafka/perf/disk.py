"""A log directory's linear write and read rates: the limit a broker on it is judged by.

Four passes over a file of ``size`` bytes in the directory, 1 MiB at a time:

- ``write_buffered``: ``write()`` through the page cache with ``fdatasync`` each flush interval
  (bytes or ms, as ``log.flush.interval.messages``/``.ms`` would flush) and once at the end, so
  the time includes getting every byte to the device -- what a broker with that flush policy pays;
- ``write_direct``: ``O_DIRECT`` from a page-aligned buffer (the device without the page cache);
- ``read_direct``: ``O_DIRECT`` reads of that file (a cold read without privileges: dropping the
  whole page cache needs root);
- ``read_cold``: buffered reads of the first file after ``posix_fadvise(DONTNEED)`` dropped its
  clean pages -- the path a broker's fetch takes when the data is not cached. The kernel may keep
  pages it cannot drop, so this can be optimistic; ``read_direct`` cannot.

A filesystem without ``O_DIRECT`` (tmpfs, some FUSE) reports those two as None with the reason.

Example::

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     r = measure_log_dir(d, 4 << 20)
    >>> r.write_buffered > 0 and r.read_cold > 0
    True
"""
from __future__ import annotations

import errno
import mmap
import os
import statistics
import time
from dataclasses import dataclass, field

__all__ = ["DiskRates", "measure_log_dir", "measure_log_dirs", "drop_cached"]

BLOCK = 1 << 20
_PROBE = ".fastkafka-perf-disk"


@dataclass
class DiskRates:
    """Bytes/s of each pass (None: not possible here, see ``direct_error``)."""
    path: str
    size: int
    flush_bytes: int | None
    flush_ms: int | None
    write_buffered: float
    write_direct: float | None
    read_direct: float | None
    read_cold: float
    direct_error: str | None = None
    rounds: dict = field(default_factory=dict)

    @property
    def read(self) -> float:
        """The cold read rate ratios use: O_DIRECT when the filesystem has it."""
        return self.read_direct if self.read_direct is not None else self.read_cold


def _aligned(size: int) -> mmap.mmap:
    buf = mmap.mmap(-1, size)        # anonymous maps are page aligned, as O_DIRECT needs
    buf.write(os.urandom(size))
    return buf


def _write_buffered(path: str, size: int, data: bytes, flush_bytes: int | None, flush_ms: int | None) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t0 = last_flush = time.perf_counter()
        done = since_flush = 0
        while done < size:
            since_flush += os.write(fd, data)
            done += len(data)
            now = time.perf_counter()
            if (flush_bytes is not None and since_flush >= flush_bytes) or \
                    (flush_ms is not None and (now - last_flush) * 1000 >= flush_ms):
                os.fdatasync(fd)
                since_flush, last_flush = 0, time.perf_counter()
        os.fdatasync(fd)
        return size / (time.perf_counter() - t0)
    finally:
        os.close(fd)


def _write_direct(path: str, size: int, buf: mmap.mmap) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
    try:
        t0 = time.perf_counter()
        done = 0
        while done < size:
            done += os.write(fd, buf)
        os.fdatasync(fd)              # the metadata (size) too, as a log's final flush would
        return size / (time.perf_counter() - t0)
    finally:
        os.close(fd)


def _read_direct(path: str, size: int, buf: mmap.mmap) -> float:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        t0 = time.perf_counter()
        done = 0
        while done < size:
            n = os.readv(fd, [buf])
            if n <= 0:
                break
            done += n
        return done / (time.perf_counter() - t0)
    finally:
        os.close(fd)


def drop_cached(path: str) -> None:
    """Write back and drop ``path``'s pages from the page cache (clean pages only: what the
    kernel lets an unprivileged owner drop)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _read_cold(path: str) -> float:
    drop_cached(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        t0 = time.perf_counter()
        done = 0
        while True:
            chunk = os.read(fd, BLOCK)
            if not chunk:
                break
            done += len(chunk)
        return done / (time.perf_counter() - t0)
    finally:
        os.close(fd)


def measure_log_dir(path: str, size: int, *, flush_bytes: int | None = None, flush_ms: int | None = None,
                    rounds: int = 1) -> DiskRates:
    """The four rates of ``path`` (median of ``rounds``, each pass alternating with the
    others); ``size`` is rounded up to whole MiB. The probe files are removed afterwards."""
    size = max(BLOCK, -(-size // BLOCK) * BLOCK)
    buffered, direct = os.path.join(path, _PROBE + ".buffered"), os.path.join(path, _PROBE + ".direct")
    buf = _aligned(BLOCK)
    data = bytes(buf)
    runs: dict[str, list[float]] = {"write_buffered": [], "write_direct": [], "read_direct": [], "read_cold": []}
    direct_error = None
    try:
        for _ in range(rounds):
            runs["write_buffered"].append(_write_buffered(buffered, size, data, flush_bytes, flush_ms))
            if direct_error is None:
                try:
                    runs["write_direct"].append(_write_direct(direct, size, buf))
                    runs["read_direct"].append(_read_direct(direct, size, buf))
                except OSError as e:
                    if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
                        raise
                    direct_error = f"O_DIRECT not supported here ({e.strerror})"
            runs["read_cold"].append(_read_cold(buffered))
    finally:
        buf.close()
        for f in (buffered, direct):
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass

    def median(name: str) -> float | None:
        return statistics.median(runs[name]) if runs[name] else None
    if direct_error is not None:
        runs["write_direct"], runs["read_direct"] = [], []     # a first round's numbers alone would mislead
    return DiskRates(path, size, flush_bytes, flush_ms, median("write_buffered"), median("write_direct"),
                     median("read_direct"), median("read_cold"), direct_error, runs)


def measure_log_dirs(paths: list[str], size: int, **kw) -> list[DiskRates]:
    """:func:`measure_log_dir` of each directory, one after the other (never at once: on one
    device they would share its bandwidth)."""
    return [measure_log_dir(p, size, **kw) for p in paths]
