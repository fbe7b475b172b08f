"""Spark where users run it, started for real from the pyspark package on loopback: a standalone
cluster (one Master and two Workers, each its own JVM; executors are further JVMs the Workers
launch), a Spark Connect server, and a fastkafka broker as its own ``fastkafka serve`` process.

Every process starts in its own session (process group) and is killed as a group, so the
executors and Python workers under a Worker go with it. Logs go to files under the given
directory; a failure to come up quotes the log's tail.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

from support.brokers import ROOT, free_port, wait_listening


SPARK_HOME = os.path.dirname(os.path.abspath(__import__("pyspark").__file__))
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


def java_home() -> str | None:
    """The JRE behind ``java`` on PATH (Debian's /usr/bin/java is a chain of symlinks)."""
    java = shutil.which("java")
    return os.path.dirname(os.path.dirname(os.path.realpath(java))) if java else None


def spark_env(workdir: str) -> dict:
    """The environment of the Spark JVMs: this venv's Python for every Python worker (it can
    import fastkafka and finds ``pyspark_fastkafka``), loopback only, logs and scratch in workdir."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_CONF_DIR")}
    env.update(SPARK_HOME=SPARK_HOME, PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOG_DIR=workdir, SPARK_WORKER_DIR=os.path.join(workdir, "work"),
               SPARK_LOCAL_DIRS=os.path.join(workdir, "local"),
               # the Master's REST submission server takes fixed port 6066: not needed, off
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
    home = java_home()
    if home:
        env["JAVA_HOME"] = home
    return env


class _Processes:
    """Processes started in their own sessions, each logging to a file; stopped as groups."""

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.env = spark_env(workdir)
        self.procs: list[tuple[subprocess.Popen, str]] = []

    def start(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        log = os.path.join(self.workdir, name + ".log")
        with open(log, "wb") as f:
            proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=self.workdir,
                                    env=env or self.env, start_new_session=True)
        self.procs.append((proc, log))
        return proc

    def check_alive(self) -> None:
        for proc, log in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[:3]} exited with {proc.returncode}: {tail(log)}")

    def stop_all(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for proc, _ in reversed(self.procs):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
            deadline = time.monotonic() + 10
            for proc, _ in self.procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(max(0.1, deadline - time.monotonic()))
            if all(p.poll() is not None for p, _ in self.procs):
                break
        # the groups' other members (executors, Python workers) must be gone too: no orphans
        deadline = time.monotonic() + 10
        left = [p.pid for p, _ in self.procs if _group_alive(p.pid)]
        while left and time.monotonic() < deadline:
            time.sleep(0.2)  # poll interval
            left = [pid for pid in left if _group_alive(pid)]
        if left:
            raise RuntimeError(f"process groups {left} still have members after SIGKILL")


def _group_alive(pgid: int) -> bool:
    """Whether a live (not zombie: a container's init may be slow to reap) process is in the group."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    return True
    return False


def tail(path: str, chars: int = 3000) -> str:
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")[-chars:]


def _wait(what: str, ready, procs: _Processes, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        procs.check_alive()
        with contextlib.suppress(OSError, ValueError):
            if ready():
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout:.0f} s (logs in {procs.workdir})")
        time.sleep(0.5)  # poll interval


class StandaloneCluster:
    """``spark://127.0.0.1:<port>``: a Master and ``workers`` Workers of 1 core and 1 GiB each."""

    def __init__(self, procs: _Processes, master_url: str, webui: int):
        self.procs, self.master_url, self.webui = procs, master_url, webui

    def state(self) -> dict:
        """The Master's JSON status page (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui}/json/", timeout=5) as r:
            return json.load(r)


@contextlib.contextmanager
def standalone_cluster(workdir: str, workers: int = 2, timeout: float = 120):
    procs = _Processes(workdir)
    port, webui = free_port(), free_port()
    spark_class = os.path.join(SPARK_HOME, "bin", "spark-class")
    try:
        procs.start("master", [spark_class, "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui)])
        cluster = StandaloneCluster(procs, f"spark://127.0.0.1:{port}", webui)
        _wait("the Master", lambda: cluster.state()["status"] == "ALIVE", procs, timeout)
        for i in range(workers):
            procs.start(f"worker{i}", [spark_class, "org.apache.spark.deploy.worker.Worker",
                                       cluster.master_url, "--host", "127.0.0.1", "--cores", "1",
                                       "--memory", "1g", "--port", str(free_port()),
                                       "--webui-port", str(free_port()),
                                       "--work-dir", os.path.join(workdir, f"work{i}")])
        _wait(f"{workers} Workers", lambda: sum(w["state"] == "ALIVE" for w in cluster.state()["workers"])
              == workers, procs, timeout)
        yield cluster
    finally:
        procs.stop_all()


class ConnectServer:
    """A Spark Connect server; clients reach it at :attr:`url` (``sc://127.0.0.1:<port>``)."""

    def __init__(self, url: str, pid: int):
        self.url, self.pid = url, pid


@contextlib.contextmanager
def connect_server(workdir: str, master: str, timeout: float = 180, **conf: str):
    """The Spark Connect server of the pyspark package (its jars ship ``spark-connect``), as a
    Spark application on ``master``; ``conf`` is extra ``spark.*`` settings."""
    procs = _Processes(workdir)
    port = free_port()
    settings = {"spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(port), "spark.ui.enabled": "false",
                "spark.executor.memory": "512m", "spark.driver.memory": "1g",
                "spark.sql.shuffle.partitions": "2", "spark.pyspark.python": sys.executable, **conf}
    argv = [os.path.join(SPARK_HOME, "bin", "spark-submit"), "--master", master,
            "--class", CONNECT_SERVER, "--name", "fastkafka-connect-tests"]
    for k, v in settings.items():
        argv += ["--conf", f"{k}={v}"]
    try:
        proc = procs.start("connect", argv + ["spark-internal"])
        _wait("the Spark Connect server", lambda: wait_listening(port, timeout=0.5) is None,
              procs, timeout)
        yield ConnectServer(f"sc://127.0.0.1:{port}", proc.pid)
    finally:
        procs.stop_all()


class BrokerProcess:
    """``fastkafka serve`` in its own process; :attr:`bootstrap` is its address."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap


@contextlib.contextmanager
def broker_process(workdir: str, timeout: float = 30):
    procs = _Processes(workdir)
    port = free_port()
    env = dict(os.environ, PYTHONPATH=ROOT)
    try:
        procs.start("broker", [sys.executable, "-m", "fastkafka", "serve",
                                      "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                                      "--override", f"log.dirs={os.path.join(workdir, 'data')}",
                                      "--log-level", "WARNING"], env=env)
        _wait("the broker", lambda: wait_listening(port, timeout=0.5) is None, procs, timeout)
        yield BrokerProcess(f"127.0.0.1:{port}")
    finally:
        procs.stop_all()
