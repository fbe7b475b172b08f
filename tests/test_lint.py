"""Pyflakes over the whole tree (ruff's F rules, and E9: files that do not parse): an unused
import, an undefined name or a shadowed one fails ``make test`` instead of waiting for review.
Line length is not checked: CLI examples and doctest outputs are verbatim text. And mypy over
the protocol and the log, the layers whose contracts (the Cython modules' ``.pyi``, the Log's
parts in several files) are most worth checking, over the broker (``fastkafka/server``: the
request handlers, typed by what their context carries, ``BrokerServices``, and what they reach)
and over the group and transaction coordinators (``fastkafka/coordinator``)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pyflakes_finds_nothing():
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    assert os.path.exists(ruff), "ruff is a declared test dependency (pip install -e '.[test]')"
    out = subprocess.run([ruff, "check", "--no-cache", "--select", "F,E9", "--output-format", "concise",
                          "fastkafka", "pyspark_fastkafka", "tests", "bench", "setup.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_finds_nothing_in_protocol_log_server_and_coordinator():
    mypy = os.path.join(os.path.dirname(sys.executable), "mypy")
    assert os.path.exists(mypy), "mypy is a declared test dependency (pip install -e '.[test]')"
    # silent: what these import is read for its types but not reported on
    out = subprocess.run([mypy, "--no-incremental", "--ignore-missing-imports", "--follow-imports=silent",
                          "fastkafka/protocol", "fastkafka/log", "fastkafka/server",
                          "fastkafka/coordinator"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
