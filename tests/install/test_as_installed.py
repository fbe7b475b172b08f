"""As users install and run it (issue 12): the sdist and the wheel are built as a user's pip would
(``python -m build``, isolated), the wheel is installed into fresh venvs with only its declared
dependencies -- once plain, once with ``[spark]`` -- and, from a directory outside the source tree,
the README's code blocks run verbatim against the installed ``fastkafka serve``.

The README's blocks are read from README.md itself, so the two cannot drift. Mapping, the only
edits made to them:

* the first shell block (``make serve`` / ``make test``) is the developer's workflow in a checkout:
  its commands are not run here (the whole suite is ``make test``);
* ``127.0.0.1:9092`` becomes the test broker's address, and ``.venv/bin/fastkafka`` and ``data/``
  (a checkout's ``make serve`` layout) become the installed venv's ``fastkafka`` and the broker's
  log dir; other shell lines run as written, with the venv's ``bin`` first on PATH;
* the Python consumer loops forever, as the seeds' consumer does: it runs until it printed the
  records, then is stopped; the PySpark block gets a SparkSession named ``spark`` made without
  importing fastkafka, and its DataFrame is counted.
"""
from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from support.brokers import free_port, wait_listening

pytestmark = [pytest.mark.clients, pytest.mark.install, pytest.mark.timeout(1500)]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_blocks() -> list[tuple[str, str]]:
    """``[(language, code)]`` of README.md's fenced blocks, in order."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S)]


def run(cmd, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and the wheel built from it, isolated, as ``pip install <checkout>`` does."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), ROOT])
    (wheel,) = out.glob("fastkafka-*.whl")
    (sdist,) = out.glob("fastkafka-*.tar.gz")
    return wheel, sdist


def venv(path, requirement: str):
    run([sys.executable, "-m", "venv", str(path)])
    run([str(path / "bin" / "python"), "-m", "pip", "install", "-q", requirement])
    return path / "bin"


@pytest.fixture(scope="module")
def plain(dist, tmp_path_factory):
    return venv(tmp_path_factory.mktemp("venv-plain"), str(dist[0]))


@pytest.fixture(scope="module")
def with_spark(dist, tmp_path_factory):
    return venv(tmp_path_factory.mktemp("venv-spark"), f"{dist[0]}[spark]")


class Served:
    """``fastkafka serve`` from a venv, on a free port, with its log dir under ``workdir``."""

    def __init__(self, bin_dir, workdir):
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.data = workdir / "data"
        self.proc = subprocess.Popen(
            [str(bin_dir / "fastkafka"), "serve", "--override", f"listeners=PLAINTEXT://{self.bootstrap}",
             "--override", f"log.dirs={self.data}", "--override", "group.initial.rebalance.delay.ms=0"],
            cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_listening(self.port, self.proc)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err


def shell(code: str, bin_dir, served: Served, workdir) -> str:
    code = code.replace("127.0.0.1:9092", served.bootstrap).replace(".venv/bin/fastkafka", "fastkafka")
    code = code.replace(" data/", f" {served.data}/")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    return run(["bash", "-euo", "pipefail", "-c", code], cwd=workdir, env=env, timeout=300).stdout


def python_env():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(SPARK_LOCAL_IP="127.0.0.1")
    return env


def test_sdist_carries_what_the_wheel_is_built_from(dist):
    import tarfile
    names = tarfile.open(dist[1]).getnames()
    for must in ("pyspark_fastkafka/__init__.py", "fastkafka/_core/segment.pyx", "setup.py", "README.md"):
        assert any(n.endswith(must) for n in names), must


def test_readme_from_a_plain_install(plain, tmp_path):
    blocks = readme_blocks()
    shells = [code for lang, code in blocks if lang == "sh"]
    pythons = [code for lang, code in blocks if lang == "python"]
    assert len(shells) == 3 and len(pythons) == 3, "README's blocks changed: update this test's mapping"
    assert all(line.startswith("make ") for line in shells[0].strip().splitlines())
    served = Served(plain, tmp_path)
    try:
        out = shell(shells[1], plain, served, tmp_path)        # kcat and dump-log
        assert "k1=hello @0" in out and "baseOffset: 0" in out
        out = shell(shells[2], plain, served, tmp_path)        # the fastkafka tools
        assert "1000 records sent" in out or "records/sec" in out, out[-2000:]
        # the seeds' Python APIs: the consumer runs until it printed what was produced
        py = subprocess.Popen([str(plain / "python"), "-c",
                               pythons[0].replace("127.0.0.1:9092", served.bootstrap)],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=python_env())
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line.split()) for line in py.stdout], daemon=True).start()
        got, deadline = [], time.monotonic() + 60
        while len(got) < 2 and time.monotonic() < deadline:
            try:
                got.append(lines.get(timeout=1))
            except queue.Empty:
                if py.poll() is not None:
                    break
        py.kill()
        _, err = py.communicate(timeout=10)
        assert sorted(line[2] for line in got) == ["b'o1'", "b'o2'"], (got, err[-2000:])
        # a transaction: its record and the group's offset are committed together
        txn = subprocess.run([str(plain / "python"), "-c",
                              pythons[1].replace("127.0.0.1:9092", served.bootstrap)],
                             cwd=tmp_path, capture_output=True, text=True, env=python_env(), timeout=60)
        assert txn.returncode == 0, txn.stderr[-2000:]
        out = shell("fastkafka groups -b 127.0.0.1:9092 describe etl", plain, served, tmp_path)
        assert any(line.split()[:3] == ["orders", "0", "2"] for line in out.splitlines()), out
    finally:
        served.stop()


def test_readme_spark_from_a_spark_install(with_spark, tmp_path):
    (code,) = [c for lang, c in readme_blocks() if lang == "python" and "format(\"fastkafka\")" in c]
    served = Served(with_spark, tmp_path)
    try:
        run([str(with_spark / "fastkafka"), "produce", "-b", served.bootstrap, "orders"],
            input="".join(f"r{i}\n" for i in range(25)), cwd=tmp_path)
        script = textwrap.dedent("""
            import sys
            from pyspark.sql import SparkSession
            spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                     .getOrCreate())
        """) + code.replace("127.0.0.1:9092", served.bootstrap) + textwrap.dedent("""
            print("COUNT", df.count())
            print("IMPORTED", any(m.startswith("fastkafka") for m in sys.modules))
        """)
        env = python_env()
        env["PYSPARK_PYTHON"] = str(with_spark / "python")
        out = run([str(with_spark / "python"), "-c", script], cwd=tmp_path, env=env, timeout=300).stdout
        assert "COUNT 25" in out and "IMPORTED False" in out, out
    finally:
        served.stop()
