"""Scratch directories for a bench's brokers, certificates and files, gone when the bench exits.

A bench writes gigabytes (256 MB rounds per side, a broker's log dirs, several rounds), and it runs
on its user's own disk: what it leaves in the temp dir fills that disk run after run.

Example::

    >>> import os
    >>> from scratch import scratch_dir
    >>> d = scratch_dir("bench-example-")
    >>> os.path.isdir(d)      # removed, with what is in it, when this process exits
    True
"""
from __future__ import annotations

import atexit
import shutil
import signal
import sys
import tempfile
import threading


def _exit_on_sigterm(signum, frame):
    sys.exit(128 + signum)    # unwinds: each bench's finally stops its brokers, then atexit runs


def scratch_dir(prefix: str) -> str:
    """A new directory under the temp dir, removed with its contents when this process exits:
    normally, by an exception, by Ctrl-C, or by SIGTERM (which becomes an exit here, unless the
    bench set its own handler)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    return path
