"""Starting real brokers for tests: in-process (``running_broker``) or as a ``fastkafka serve``
subprocess (``serve_process``), always on a free loopback port with a fresh log dir."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from fastkafka.config import KafkaConfig
from fastkafka.server.broker import Broker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@contextlib.contextmanager
def running_broker(log_dir, properties: dict | None = None, **overrides):
    """An in-process broker on 127.0.0.1:<ephemeral>; ``overrides`` use Kafka names with ``_`` for ``.``,
    ``properties`` Kafka's names as they are (for names with an ``_`` of their own, e.g. a listener's)."""
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(log_dir)}
    props.update(properties or {})
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    broker = Broker(KafkaConfig(props))
    broker.startup()
    broker.bootstrap = f"127.0.0.1:{broker.port}"
    try:
        yield broker
    finally:
        broker.shutdown(10)


_handed_out: set[int] = set()
_ports_lock = threading.Lock()


def free_port() -> int:
    """A loopback port nobody holds now, for a server started later (a restart must keep its
    port, so port 0 will not do). Never the same port twice in one test process: a ZooKeeper
    ensemble or a cluster takes several before any of them binds, and the kernel may hand a
    just-released port out again. (bind(0) draws from the half of the ephemeral range that
    connect() leaves alone, so clients' own source ports do not take it meanwhile.)"""
    with _ports_lock:
        for _ in range(1000):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise RuntimeError("no loopback port left that this process has not handed out")


def serve_process(*args: str, env=None) -> subprocess.Popen:
    """``python -m fastkafka serve ARGS`` with stderr captured."""
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "fastkafka", "serve", *args], cwd=ROOT, env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_listening(port: int, proc: subprocess.Popen | None = None, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)  # poll interval
    raise TimeoutError(f"nothing listening on {port}")


def exited(proc: subprocess.Popen, timeout: float = 60.0) -> tuple[int, str]:
    """(exit code, stderr) of a broker expected to exit by itself; killed if it does not."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, err


def stop(proc: subprocess.Popen, sig=signal.SIGTERM, timeout: float = 20.0) -> tuple[int, str]:
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err
