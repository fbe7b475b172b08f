"""Hosts for Jepsen-style cluster tests: one network namespace per host, all on one Linux bridge,
and partitions that drop packets silently. Needs root and iproute2 only.

Layout (``fkp<pid>`` names everything of one test process, so the leftovers of a run that died
can be told from the objects of a run still going)::

    root namespace: the test process (clients, checker) at 10.213.N.1 on bridge fkp<pid>br
      fkp<pid>h1 ==veth== eth0 10.213.N.11   namespace fkp<pid>-zk
      fkp<pid>h2 ==veth== eth0 10.213.N.12   namespace fkp<pid>-b1   ...

How a cut drops packets: cutting host A from host B adds, inside both namespaces, the policy rule
``from <the other>/32 iif eth0 blackhole`` ahead of the local table, so each side discards at IP
input whatever the other sends -- what Jepsen does with ``iptables -A INPUT -s <peer> -j DROP``.
Nothing answers: no RST, no ICMP (a namespace does not forward, so the dropped packet is not
reported), and ARP requests from the peer go unanswered too (ARP's reverse route check meets the
rule). Senders see silence: connects hang and time out, established connections retransmit until
the cut heals, as behind a dead switch port. The alternatives model this worse or are missing:
``ip route add blackhole <peer>`` fails the sender's own sends at once (EINVAL), a loud error no
real network produces; ``ip link set <veth> nomaster`` cuts a host from everyone, clients
included, so it cannot say "from ZooKeeper only"; and this kernel has neither tc drop actions,
netem, bridge VLAN filtering nor iptables.

Example::

    with Network() as net:
        zk, b1 = net.add_host("zk"), net.add_host("b1")
        subprocess.Popen(b1.exec_prefix + ["python", "-m", "http.server", "--bind", b1.ip])
        net.cut(b1, [zk])      # b1 and zk no longer hear each other; the root namespace hears both
        net.heal()
"""
from __future__ import annotations

import os
import re
import signal
import subprocess

from support.zk import StartStop


__all__ = ["Host", "Network", "NetworkUnavailable"]

PREFIX = "fkp"
CUT_PREF = 10          # the blackhole rules; the local table moves from 0 to LOCAL_PREF behind them
LOCAL_PREF = 100
_OWNED = re.compile(rf"^{PREFIX}(\d+)(?:-|br$|h\d+$)")


class NetworkUnavailable(RuntimeError):
    """This machine cannot make namespaces, veth pairs or a bridge; the message says which step failed."""


def ip(*args: str, check: bool = True) -> str:
    try:
        r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        raise NetworkUnavailable("iproute2's `ip` is not installed") from None
    if check and r.returncode:
        raise NetworkUnavailable(f"`ip {' '.join(args)}` failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def _alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def remove_leftovers() -> None:
    """Delete the namespaces and links of earlier runs whose test process is gone (and kill the
    brokers or ZooKeeper they left running inside), never those of a run still going."""
    for line in ip("netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        m = _OWNED.match(name)
        if m and not _alive(int(m.group(1))):
            for pid in ip("netns", "pids", name, check=False).split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            ip("netns", "del", name, check=False)
    for line in ip("-o", "link", "show", check=False).splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        m = _OWNED.match(name)
        if m and not _alive(int(m.group(1))):
            ip("link", "del", name, check=False)


def _free_subnet() -> int:
    """A third octet N whose 10.213.N.0/24 nothing in the root namespace uses yet."""
    used = set(re.findall(r"10\.213\.(\d+)\.", ip("-4", "-o", "addr", "show") + ip("-4", "route", "show")))
    start = os.getpid() % 200
    for k in range(250):
        n = (start + k) % 250 + 1
        if str(n) not in used:
            return n
    raise NetworkUnavailable("no free 10.213.N.0/24 subnet in the root namespace")


class Host:
    """A network namespace with one address; ``exec_prefix + argv`` runs ``argv`` inside it."""

    def __init__(self, name: str, netns: str, veth: str, ip_address: str):
        self.name, self.netns, self.veth, self.ip = name, netns, veth, ip_address
        self.exec_prefix = ["ip", "netns", "exec", netns]

    def __repr__(self) -> str:
        return f"Host({self.name} {self.ip})"


class Network(StartStop):
    """A bridge in the root namespace (the test process's address on it is ``gateway``) and the
    hosts added to it. Not thread-safe: one nemesis drives it."""

    def __init__(self):
        self.tag = f"{PREFIX}{os.getpid()}"
        self.bridge = f"{self.tag}br"
        self.subnet = 0
        self.hosts: dict[str, Host] = {}
        self._cuts: set[tuple[str, str]] = set()     # (namespace, dropped source address)
        self._started = False

    @property
    def gateway(self) -> str:
        return f"10.213.{self.subnet}.1"

    def start(self) -> "Network":
        remove_leftovers()
        ip("link", "del", self.bridge, check=False)   # a namesake of a reused pid
        self.subnet = _free_subnet()
        self._started = True
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        return self

    def add_host(self, name: str) -> Host:
        """A new namespace ``<tag>-<name>`` at the next address, reachable from the root namespace."""
        n = len(self.hosts) + 1
        host = Host(name, f"{self.tag}-{name}", f"{self.tag}h{n}", f"10.213.{self.subnet}.{10 + n}")
        self.hosts[name] = host
        ns = host.netns
        ip("netns", "add", ns)
        ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("link", "set", host.veth, "master", self.bridge, "up")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        # room for the cut rules ahead of the local table (input to our own address looks it up)
        ip("-n", ns, "rule", "add", "pref", str(LOCAL_PREF), "lookup", "local")
        ip("-n", ns, "rule", "del", "pref", "0", "lookup", "local")
        return host

    def cut(self, host: Host, others) -> None:
        """Drop every packet between ``host`` and each of ``others``, both ways, silently."""
        for other in others:
            for ns, source in ((host.netns, other.ip), (other.netns, host.ip)):
                if (ns, source) not in self._cuts:
                    ip("-n", ns, "rule", "add", "pref", str(CUT_PREF), "from", f"{source}/32", "iif", "eth0",
                       "blackhole")
                    self._cuts.add((ns, source))

    def heal(self) -> None:
        """Remove every cut."""
        for ns, source in sorted(self._cuts):
            ip("-n", ns, "rule", "del", "pref", str(CUT_PREF), "from", f"{source}/32", "iif", "eth0",
               "blackhole")
            self._cuts.discard((ns, source))

    def stop(self) -> None:
        """Delete the namespaces, veth pairs and the bridge (processes inside must be stopped first)."""
        if not self._started:
            return
        self._cuts.clear()
        for host in self.hosts.values():
            ip("link", "del", host.veth, check=False)
            ip("netns", "del", host.netns, check=False)
        ip("link", "del", self.bridge, check=False)
        self.hosts.clear()
        self._started = False
