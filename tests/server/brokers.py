"""Starting real brokers for tests: in-process (``running_broker``) or as a ``fastkafka serve``
subprocess (``serve_process``), always on a free loopback port with a fresh log dir."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

from fastkafka.config import KafkaConfig
from fastkafka.server.broker import Broker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@contextlib.contextmanager
def running_broker(log_dir, **overrides):
    """An in-process broker on 127.0.0.1:<ephemeral>; ``overrides`` use Kafka names with ``_`` for ``.``."""
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(log_dir)}
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    broker = Broker(KafkaConfig(props))
    broker.startup()
    broker.bootstrap = f"127.0.0.1:{broker.port}"
    try:
        yield broker
    finally:
        broker.shutdown(10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {port}")


def stop(proc: subprocess.Popen, sig=signal.SIGTERM, timeout: float = 20.0) -> tuple[int, str]:
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err
