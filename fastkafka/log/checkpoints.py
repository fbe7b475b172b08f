"""Kafka's offset checkpoint files: ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``cleaner-offset-checkpoint`` (the log cleaner's first dirty offset per compacted partition),
``replication-offset-checkpoint`` (each partition's high watermark).

Text layout (one file per log dir, replaced atomically)::

    0                  <- version
    2                  <- number of entries
    orders 0 1234      <- topic partition offset
    orders 1 99

Example::

    >>> import tempfile, os
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> cp = OffsetCheckpointFile(os.path.join(tmpdir.name, "recovery-point-offset-checkpoint"))
    >>> cp.write({("orders", 0): 1234}); cp.read()
    {('orders', 0): 1234}
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

import os
import threading

from .files import fsync_dir

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"   # high watermarks
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


class OffsetCheckpointFile:
    """Reads and atomically replaces one checkpoint file. Thread-safe."""

    VERSION = 0

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        lines = [str(self.VERSION), str(len(offsets))]
        lines += [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
        data = ("\n".join(lines) + "\n").encode()
        tmp = self.path + ".tmp"
        with self._lock:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            fsync_dir(os.path.dirname(self.path) or ".")

    def read(self) -> dict[tuple[str, int], int]:
        """The entries; a missing file is empty, a malformed one raises ValueError."""
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return {}
        if not lines or int(lines[0]) != self.VERSION:
            raise ValueError(f"{self.path}: unknown checkpoint version")
        n = int(lines[1])
        out = {}
        for line in lines[2:2 + n]:
            topic, part, off = line.rsplit(" ", 2)
            out[(topic, int(part))] = int(off)
        if len(out) != n:
            raise ValueError(f"{self.path}: expected {n} entries, found {len(out)}")
        return out

