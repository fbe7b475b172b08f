"""One broker per log directory: Kafka's ``.lock`` file, held with an exclusive ``flock`` while a
LogManager owns the directory. A second broker started on the same ``log.dirs`` (another process,
or another LogManager in this one: flock locks belong to the open file) fails to start instead of
interleaving its writes with the first's. The kernel drops the lock when the holder dies, so a
kill -9 leaves nothing to clean up.

Example::

    >>> import tempfile
    >>> tmpdir = tempfile.TemporaryDirectory(); d = tmpdir.name
    >>> first = LogDirLock(d)
    >>> LogDirLock(d)
    Traceback (most recent call last):
    ...
    fastkafka.errors.KafkaStorageError: Failed to acquire lock on file .lock in ...
    >>> first.release(); LogDirLock(d).release(); tmpdir.cleanup()
"""
from __future__ import annotations

import fcntl
import os

from .. import errors

__all__ = ["LogDirLock", "LOCK_FILE"]

LOCK_FILE = ".lock"


class LogDirLock:
    """The lock on one log directory, held until :meth:`release` (or the process ends)."""

    _fd: int | None = None

    def __init__(self, directory: str):
        self.directory = directory
        fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise errors.KafkaStorageError(
                f"Failed to acquire lock on file .lock in {directory}. A Kafka instance in another "
                "process or thread is using this directory.") from None
        self._fd = fd

    def release(self) -> None:
        """Let go of the directory (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)          # closing the last descriptor drops the flock

    def __del__(self):
        self.release()
