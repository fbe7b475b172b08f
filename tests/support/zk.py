"""Real ZooKeeper for tests: Debian's ``zookeeper`` package started with java, no systemd.

An :class:`Ensemble` of 1 (standalone) or 3 servers runs on free loopback ports with a private
``zoo.cfg`` and data dir each. ``tickTime`` is small so sessions expire fast (the minimum session
timeout is 2 ticks), heaps are small because the test machine has 2 shared cores. "Serving" is
checked with the ``srvr`` four-letter word, which answers ``Mode: standalone|leader|follower``
only once the server has joined a quorum.

Example::

    with Ensemble(tmp_path, size=3) as zk:
        kazoo = KazooClient(zk.connect); kazoo.start()
        zk.kill(zk.leader())          # the other two elect a new leader
        zk.wait_serving()
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from support.brokers import free_port  # one set of handed-out ports per process

__all__ = ["Ensemble", "java_available", "require_java", "free_port"]


JAR = "/usr/share/java/zookeeper.jar"        # its manifest's Class-Path pulls in netty, jute...
LOGGER = "/usr/share/java/slf4j-simple.jar"
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
TICK_MS = 200


def java_available() -> bool:
    return os.path.exists(JAR) and shutil.which("java") is not None


def require_java() -> None:
    """Fail the test, naming what is missing, unless ZooKeeper's jar and java are installed.

    The suite runs real ZooKeeper; a machine without it fails loudly rather than skipping
    (``make test`` installs both through ci/install-debian.sh)."""
    missing = [what for what, ok in ((JAR + " (Debian's zookeeper package)", os.path.exists(JAR)),
                                     ("java", shutil.which("java") is not None)) if not ok]
    if missing:
        pytest.fail(f"missing {' and '.join(missing)}: make test installs them (ci/install-debian.sh)")


def four_letter(port: int, word: str = "srvr", timeout: float = 1.0, host: str = "127.0.0.1") -> str:
    """The server's answer to a four-letter word, or '' if it does not answer."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(4096)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


class StartStop:
    """``with X(...) as x``: ``start()`` on entry, ``stop()`` on exit -- and on a failed start,
    since ``__exit__`` does not run when ``__enter__`` fails: no process may outlive the test."""

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


class Ensemble(StartStop):
    """``size`` ZooKeeper servers on ``host`` (127.0.0.1); ``connect`` is the kazoo/Kafka connect
    string. With ``netns`` they run inside that network namespace (``ip netns exec``): a host of
    :mod:`netns`, whose address ``host`` then is."""

    def __init__(self, directory, size: int = 1, tick_ms: int = TICK_MS, host: str = "127.0.0.1",
                 netns: str | None = None):
        self.directory = str(directory)
        self.size = size
        self.tick_ms = tick_ms
        self.host = host
        self.netns = netns
        self.client_ports = [free_port() for _ in range(size)]
        self.peer_ports = [(free_port(), free_port()) for _ in range(size)] if size > 1 else []
        self.procs: dict[int, subprocess.Popen] = {}

    @property
    def connect(self) -> str:
        return ",".join(f"{self.host}:{p}" for p in self.client_ports)

    def _config(self, sid: int) -> str:
        data = os.path.join(self.directory, f"zk{sid}")
        os.makedirs(data, exist_ok=True)
        lines = [
            f"tickTime={self.tick_ms}",
            "initLimit=20", "syncLimit=10",
            f"dataDir={data}",
            f"clientPort={self.client_ports[sid - 1]}",
            f"clientPortAddress={self.host}",
            "admin.enableServer=false",
            "4lw.commands.whitelist=srvr,ruok,stat",
            "maxClientCnxns=0",
            "autopurge.purgeInterval=0",
        ]
        if self.size > 1:
            with open(os.path.join(data, "myid"), "w") as f:
                f.write(f"{sid}\n")
            lines += [f"server.{i + 1}={self.host}:{a}:{b}" for i, (a, b) in enumerate(self.peer_ports)]
        path = os.path.join(self.directory, f"zoo{sid}.cfg")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def start_server(self, sid: int) -> None:
        cfg = self._config(sid)
        log = open(os.path.join(self.directory, f"zk{sid}.log"), "ab")
        netns = ["ip", "netns", "exec", self.netns] if self.netns else []
        self.procs[sid] = subprocess.Popen(
            netns + ["java", "-Xmx96m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dzookeeper.jmx.log4j.disable=true", "-cp", f"{JAR}:{LOGGER}", MAIN, cfg],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

    def start(self, timeout: float = 60.0) -> "Ensemble":
        for sid in range(1, self.size + 1):
            self.start_server(sid)
        self.wait_serving(timeout)
        return self

    def mode(self, sid: int) -> str:
        """'standalone', 'leader', 'follower' or '' (not serving)."""
        for line in four_letter(self.client_ports[sid - 1], host=self.host).splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return ""

    def leader(self) -> int:
        for sid in self.procs:
            if self.mode(sid) in ("leader", "standalone"):
                return sid
        raise RuntimeError("no ZooKeeper leader")

    def wait_serving(self, timeout: float = 60.0) -> None:
        """Until every running server answers with a mode (a quorum formed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for sid, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"ZooKeeper {sid} exited: {self.log_tail(sid)}")
            if all(self.mode(sid) for sid in self.procs):
                return
            time.sleep(0.1)  # poll interval
        raise TimeoutError("ZooKeeper not serving: " + " | ".join(self.log_tail(s) for s in self.procs))

    def log_tail(self, sid: int, n: int = 2000) -> str:
        try:
            with open(os.path.join(self.directory, f"zk{sid}.log"), "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def kill(self, sid: int) -> None:
        p = self.procs.pop(sid)
        p.send_signal(signal.SIGKILL)
        p.wait(10)

    def stop(self) -> None:
        for sid in list(self.procs):
            p = self.procs.pop(sid)
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
