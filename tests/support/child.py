"""A test's code in a child interpreter: a SIGSEGV or SIGBUS there (an unmapped index, a store into a
full disk's hole) fails that test instead of taking the whole session down with it."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)


def run_child(code: str, tmp_path, *args: str, timeout: float = 120) -> str:
    """Run ``code`` (dedented) with ``args`` as its argv; its stdout. It imports this tree and
    ``support``; its tempfile dirs land in the test's own ``tmp_path``."""
    path = os.pathsep.join([ROOT, TESTS, os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, TMPDIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code), *args],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"child exited with {p.returncode}:\n{p.stdout}\n{p.stderr[-3000:]}"
    return p.stdout
