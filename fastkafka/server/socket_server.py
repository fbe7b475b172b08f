"""The broker's network front: listeners, one acceptor thread, ``num.network.threads`` processors.

The acceptor accepts on every listener and hands sockets to processors round-robin. At
``max.connections`` it stops accepting (new clients wait in the listen backlog, as with
Kafka's connection quota) until a connection closes. A client address already holding
``max.connections.per.ip`` (or its ``max.connections.per.ip.overrides`` count) has any further
connection closed right after accept, as Kafka does.

Example::

    >>> server = SocketServer(["PLAINTEXT://127.0.0.1:0"], submit=lambda req: req.close_connection())
    >>> server.start(); port = server.bound["PLAINTEXT"][1]
    >>> server.shutdown()
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import gc
import logging
import selectors
import socket
import threading
from typing import Callable

from .processor import Processor, Request

__all__ = ["SocketServer", "parse_listener", "ListenerError"]

log = logging.getLogger("fastkafka.server")


# Give memory back to the OS once this many connections closed and at most half remain.
TRIM_AFTER_CLOSES = 1000


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):      # not glibc: nothing to trim
        return None


_MALLOC_TRIM = _malloc_trim()


def release_free_memory() -> None:
    """Collect cycles (closed connections can sit in them), then return the C heap's free
    pages to the OS (glibc ``malloc_trim``; elsewhere only the collection)."""
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class ListenerError(ValueError):
    """A listener string that does not parse, or an address that cannot be bound."""


def parse_listener(spec: str) -> tuple[str, str, int]:
    """``"PLAINTEXT://host:port"`` -> ``("PLAINTEXT", host, port)``; an empty host means all interfaces.

    >>> parse_listener("PLAINTEXT://127.0.0.1:9092")
    ('PLAINTEXT', '127.0.0.1', 9092)
    >>> parse_listener("PLAINTEXT://:9092")
    ('PLAINTEXT', '', 9092)
    """
    name, sep, rest = spec.strip().partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not colon or not name:
        raise ListenerError(f"listener {spec!r} is not NAME://host:port")
    host = host.strip("[]")
    try:
        port_n = int(port)
    except ValueError:
        raise ListenerError(f"listener {spec!r}: port {port!r} is not a number") from None
    if not 0 <= port_n <= 65535:
        raise ListenerError(f"listener {spec!r}: port {port_n} out of range")
    return name.upper(), host, port_n


def parse_ip_overrides(entries) -> dict[str, int]:
    """``max.connections.per.ip.overrides`` entries ``"host:count"`` -> ``{ip: count}`` (host
    names are resolved once, as Kafka does at start-up).

    >>> parse_ip_overrides(["127.0.0.1:5", "[::1]:7"])
    {'127.0.0.1': 5, '::1': 7}
    """
    out = {}
    for entry in entries:
        host, sep, count = entry.strip().rpartition(":")
        if not sep or not count.strip().isdigit():
            raise ListenerError(f"max.connections.per.ip.overrides: {entry!r} is not host:count")
        host = host.strip("[]")
        try:
            ip = socket.getaddrinfo(host, None)[0][4][0]
        except socket.gaierror as e:
            raise ListenerError(f"max.connections.per.ip.overrides: cannot resolve {host!r}: {e}") from None
        out[ip] = int(count)
    return out


class SocketServer:
    """Thread-safe ``start`` / ``shutdown``; ``bound`` maps listener name -> (host, port) after start."""

    def __init__(self, listeners: list[str], submit: Callable[[Request], None], *,
                 num_network_threads: int = 3, max_connections: int = 2**31 - 1,
                 max_connections_per_ip: int = 2**31 - 1, max_connections_per_ip_overrides=(),
                 max_request_bytes: int = 104857600, idle_ms: int = 600_000, backlog: int = 128,
                 security: dict | None = None):
        self._specs = [parse_listener(s) for s in listeners]
        names = [n for n, _, _ in self._specs]
        if len(set(names)) != len(names):
            raise ListenerError(f"listener names must be unique: {names}")
        self._submit = submit
        self._max_connections = max_connections
        self._max_per_ip = max_connections_per_ip
        self._ip_limits = parse_ip_overrides(max_connections_per_ip_overrides)
        self._per_ip: dict[str, int] = {}     # open connections per client address
        self._backlog = backlog
        self._lock = threading.Condition()
        self._count = 0
        self._peak = 0          # most connections open since memory was last given back
        self._stopping = False
        self.bound: dict[str, tuple[str, int]] = {}
        self._listen: list[tuple[socket.socket, str]] = []
        self.processors = [
            Processor(i, submit, max_frame=max_request_bytes, idle_ms=idle_ms, on_close=self._closed,
                      security=security)
            for i in range(max(1, num_network_threads))
        ]
        self._acceptor = threading.Thread(target=self._accept_loop, name="fastkafka-acceptor", daemon=True)
        self._wake_r, self._wake_w = socket.socketpair()

    # --- lifecycle ---
    def bind(self) -> None:
        """Open every listener; a busy port raises ListenerError naming it (nothing is left open)."""
        try:
            for name, host, port in self._specs:
                family = socket.AF_INET6 if ":" in host else socket.AF_INET
                sock = socket.socket(family, socket.SOCK_STREAM)
                self._listen.append((sock, name))
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((host or ("::" if family == socket.AF_INET6 else "0.0.0.0"), port))
                except OSError as e:
                    why = "address already in use" if e.errno == errno.EADDRINUSE else e.strerror
                    raise ListenerError(f"cannot listen on {name}://{host}:{port}: {why}") from None
                sock.listen(self._backlog)
                sock.setblocking(False)
                self.bound[name] = (host, sock.getsockname()[1])
        except BaseException:
            self._close_listeners()
            raise

    def start(self) -> None:
        if not self._listen:
            self.bind()
        for p in self.processors:
            p.start()
        self._acceptor.start()
        for name, (host, port) in self.bound.items():
            log.info("listening on %s://%s:%d", name, host, port)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish and their responses go out, close everything."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass
        if self._acceptor.is_alive():
            self._acceptor.join(timeout)
        self._close_listeners()
        for p in self.processors:
            if p.is_alive():
                p.shutdown(timeout)
        self._wake_r.close()
        self._wake_w.close()

    def _close_listeners(self) -> None:
        for sock, _ in self._listen:
            sock.close()
        self._listen.clear()

    @property
    def connection_count(self) -> int:
        with self._lock:
            return self._count

    # --- acceptor thread ---
    def _closed(self, peer) -> None:
        """A connection from ``peer`` (address tuple) closed (called by its processor)."""
        with self._lock:
            self._count -= 1
            left = self._per_ip.get(peer[0], 0) - 1
            if left > 0:
                self._per_ip[peer[0]] = left
            else:
                self._per_ip.pop(peer[0], None)
            self._lock.notify_all()
            # Many connections gone at once (a client fleet restarting, a connection storm
            # over): hand the memory they used back to the OS. Freed Python objects leave the
            # C heap fragmented and glibc keeps it; without this, RSS stays at its peak.
            self._peak = max(self._peak, self._count + 1)
            trim = self._peak - self._count >= TRIM_AFTER_CLOSES and self._count <= self._peak // 2
            if trim:
                self._peak = self._count
        if trim:
            release_free_memory()

    def _accept_loop(self) -> None:
        sel = selectors.DefaultSelector()
        for sock, name in self._listen:
            sel.register(sock, selectors.EVENT_READ, name)
        sel.register(self._wake_r, selectors.EVENT_READ, None)
        rr = 0
        try:
            while not self._stopping:
                with self._lock:  # at the connection limit: wait for a close (or shutdown)
                    while self._count >= self._max_connections and not self._stopping:
                        self._lock.wait(0.5)
                if self._stopping:
                    break
                for key, _ in sel.select(0.5):
                    if key.data is None:
                        continue
                    try:
                        client, peer = key.fileobj.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as e:  # EMFILE and friends: back off instead of spinning
                        log.warning("accept on %s failed: %s", key.data, e)
                        self._lock.acquire()
                        self._lock.wait(0.1)
                        self._lock.release()
                        continue
                    ip = peer[0]
                    with self._lock:
                        over = self._per_ip.get(ip, 0) >= self._ip_limits.get(ip, self._max_per_ip)
                        if not over:
                            self._count += 1
                            self._per_ip[ip] = self._per_ip.get(ip, 0) + 1
                    if over:   # Kafka's connection quota: accepted, then closed at once
                        log.info("Rejected connection from %s, address already has the configured "
                                 "maximum of %d connections.", ip, self._ip_limits.get(ip, self._max_per_ip))
                        client.close()
                        continue
                    self.processors[rr % len(self.processors)].assign(client, peer, key.data)
                    rr += 1
                    if self._count >= self._max_connections:
                        break
        except Exception:
            log.exception("acceptor failed")
        finally:
            sel.close()
