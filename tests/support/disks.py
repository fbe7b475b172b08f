"""A small filesystem of a test's own (a tmpfs, mounted as root) that the test can fill up.

The test fails, not skips, where it cannot be mounted: a full disk is a case every broker meets.
"""
from __future__ import annotations

import contextlib
import errno
import os
import subprocess


@contextlib.contextmanager
def small_tmpfs(path, size: str = "1m"):
    """Mount a tmpfs of ``size`` at ``path`` (created) for the block; unmounted after it."""
    os.makedirs(path, exist_ok=True)
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, f"a small tmpfs needs root to mount: {out.stderr}"
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def fill(path) -> None:
    """Write the file ``path`` until its filesystem has no block left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
