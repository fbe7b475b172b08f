"""Cluster test harness: real ``fastkafka serve`` broker processes joined through real ZooKeeper.

Example::

    with Ensemble(tmp) as zk, Cluster(tmp, zk.connect, 3) as cluster:
        cluster.wait_registered({1, 2, 3})
        cluster.kill(2)          # kill -9
"""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time

from kazoo.client import KazooClient

from fastkafka import protocol as P
from fastkafka.cluster import znodes
from fastkafka.protocol import ApiKey

from support.waits import wait_for
from support.zk import StartStop, free_port


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SESSION_MS = 2000   # the ensemble's tickTime 200 allows 400..4000 ms
LONG_SESSION_MS = 4000     # the most the tests' ensemble allows (tickTime 200)



def raw_call(port: int, key: int, version: int, body, host: str = "127.0.0.1"):
    """One request on a fresh connection; the decoded response."""
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(P.encode_request(key, version, 1, body, "cluster-test"))
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "broker closed the connection"
            buf += chunk
        return P.decode_response(key, version, buf[4:])[1]


def zk_client(connect: str) -> KazooClient:
    """A kazoo client for the tests' own reads, inside ``connect``'s chroot (created if missing)."""
    hosts, _, chroot = connect.partition("/")
    if chroot:
        root = zk_client(hosts)
        root.ensure_path("/" + chroot)
        root.stop()
        root.close()
    c = KazooClient(hosts=connect, timeout=10.0, connection_retry={"max_tries": -1, "max_delay": 0.5})
    c.start(timeout=20)
    return c


class BrokerProc:
    """One ``fastkafka serve`` process listening on ``host`` (127.0.0.1); with ``netns`` it runs
    inside that network namespace (``ip netns exec``) and ``host`` is the namespace's address."""

    def __init__(self, directory: str, connect: str, broker_id: int, port: int | None = None,
                 host: str = "127.0.0.1", netns: str | None = None, **props):
        self.broker_id = broker_id
        self.port = port or free_port()
        self.host = host
        self.netns = netns
        self.log_dir = os.path.join(directory, f"broker{broker_id}")
        self.stderr_path = os.path.join(directory, f"broker{broker_id}.{time.monotonic_ns()}.log")
        self.props = {
            "zookeeper.connect": connect, "broker.id": broker_id,
            "listeners": f"PLAINTEXT://{host}:{self.port}", "log.dirs": self.log_dir,
            "zookeeper.session.timeout.ms": SESSION_MS, "zookeeper.connection.timeout.ms": 20000,
            "offsets.topic.num.partitions": 6, "transaction.state.log.num.partitions": 6,
            "group.initial.rebalance.delay.ms": 0,
            "num.partitions": 1,
        }
        self.props.update(props)
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def sees(self, ids: set[int]) -> bool:
        """Whether this broker's Metadata lists exactly the brokers ``ids`` and names a controller
        among them: its own views of /brokers/ids and /controller, which follow ZooKeeper by
        watches. CreateTopics checks a replication factor against the first; admin clients send
        CreateTopics to the second (librdkafka's, told "no controller", waits without asking
        again until its request times out)."""
        try:
            answer = raw_call(self.port, ApiKey.METADATA, 1, {"topics": []}, self.host)
        except OSError:
            return False
        return {n.node_id for n in answer.brokers} == ids and answer.controller_id in ids

    def start(self) -> "BrokerProc":
        args = [sys.executable, "-m", "fastkafka", "serve"]
        if self.netns:
            args = ["ip", "netns", "exec", self.netns] + args
        for k, v in self.props.items():
            args += ["--override", f"{k}={v}"]
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                         stdin=subprocess.DEVNULL)
        return self

    def output(self) -> str:
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout)

    def signal(self, sig) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 20.0) -> int:
        if not self.alive():
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class Cluster(StartStop):
    """``n`` brokers with ids 1..n; a kazoo client (``zk``) for the tests' own look at the znodes.
    ``hosts`` places broker ``i`` at ``hosts[i] = (address, network namespace)`` (see :mod:`netns`)."""

    def __init__(self, directory, connect: str, n: int = 3, hosts: dict[int, tuple[str, str]] | None = None,
                 **props):
        self.directory = str(directory)
        self.connect = connect
        where = {i: {"host": host, "netns": netns} for i, (host, netns) in (hosts or {}).items()}
        self.brokers = {i: BrokerProc(self.directory, connect, i, **where.get(i, {}), **props)
                        for i in range(1, n + 1)}
        self.zk: KazooClient | None = None

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def start(self) -> "Cluster":
        self.zk = zk_client(self.connect)
        for b in self.brokers.values():
            b.start()
        self.wait_registered(set(self.brokers))
        wait_for(lambda: self.controller() in self.brokers, what="a controller")
        return self

    def registered(self) -> set[int]:
        try:
            return {int(c) for c in self.zk.get_children(znodes.BROKER_IDS)}
        except Exception:  # noqa: BLE001
            return set()

    def wait_registered(self, ids: set[int], timeout: float = 30.0) -> None:
        def ok():
            for i in ids:
                b = self.brokers.get(i)
                if b is not None and b.proc is not None and not b.alive():
                    raise RuntimeError(f"broker {i} exited: {b.output()[-3000:]}")
            return self.registered() == ids and all(self.brokers[i].sees(ids) for i in ids if i in self.brokers)
        wait_for(ok, timeout, what=f"brokers {sorted(ids)} registered and seen by each other "
                                   f"(have {sorted(self.registered())})")

    def controller(self) -> int:
        try:
            return znodes.controller_id(self.zk.Election(znodes.CONTROLLER).contenders())
        except Exception:  # noqa: BLE001
            return -1

    def state(self, topic: str, partition: int) -> znodes.PartitionState | None:
        try:
            data, _ = self.zk.get(znodes.state_path(topic, partition))
        except Exception:  # noqa: BLE001
            return None
        return znodes.PartitionState.decode(data)

    def assignment(self, topic: str) -> dict[int, tuple[int, ...]]:
        data, _ = self.zk.get(znodes.topic_path(topic))
        return dict(znodes.TopicAssignment.decode(topic, data).partitions)

    def stop(self) -> None:
        for b in self.brokers.values():
            b.stop()
        if self.zk is not None:
            self.zk.stop()
            self.zk.close()


def create_replicated(cluster, topic: str, partitions: int, rf: int = 3, **configs) -> None:
    """Create ``topic`` through confluent-kafka's admin client and wait until every partition has
    ``rf`` in-sync replicas (``configs`` use Kafka names with ``_`` for ``.``)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})   # must outlive its futures
    futures = a.create_topics([NewTopic(topic, partitions, rf, config={k.replace("_", "."): str(v)
                                                                       for k, v in configs.items()})],
                              operation_timeout=15)
    for f in futures.values():
        f.result()
    wait_for(lambda: all((s := cluster.state(topic, p)) and len(s.isr) == rf for p in range(partitions)),
             what=f"{topic}: every partition with {rf} in-sync replicas")
