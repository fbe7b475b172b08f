"""The broker's network front: listeners, one acceptor thread, ``num.network.threads`` processors.

``bind`` reserves the listeners' addresses (a busy port fails before anything else starts),
``listen`` opens them: the broker does that once its logs are recovered, so, as with Kafka, a
client never gets connected to a broker that is still recovering (it is refused, and tries
another broker or again). Connections made after ``listen`` wait in the backlog until ``start``.

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
import itertools
import logging
import select
import socket
import threading
import time
from typing import Callable

from .processor import Processor, Request

__all__ = ["SocketServer", "parse_listener", "ListenerError"]

log = logging.getLogger("fastkafka.server")


# Give memory back to the OS after a wave of closes: at least this many connections closed,
# at most half of the peak remain, and no connection closed for RELEASE_QUIET_S. Waiting for the
# wave to end matters: trimming in the middle of it (as soon as half had gone) left the memory of
# the rest of the wave in glibc's free lists.
TRIM_AFTER_CLOSES = 1000
RELEASE_QUIET_S = 1.0
# The acceptor waits with no timeout unless a release is pending, then for this long; like the
# processors it allocates nothing while it waits (processor.py's docstring says why).
_TICK_S = 0.5
_MAX_EVENTS = 64     # 768 bytes of epoll_wait buffer: from malloc, not a small-object pool


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):      # not glibc: nothing to trim
        return None


_MALLOC_TRIM = _malloc_trim()


def release_free_memory() -> None:
    """Collect cycles (closed connections can sit in them), then return the C heap's free
    pages to the OS (glibc ``malloc_trim``, which walks every thread's arena and also releases
    free pages in the middle of them; elsewhere only the collection)."""
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class ListenerError(ValueError):
    """A listener string that does not parse, or an address that cannot be bound."""


def _listener_error(name: str, host: str, port: int, e: OSError) -> ListenerError:
    why = "address already in use" if e.errno == errno.EADDRINUSE else e.strerror
    return ListenerError(f"cannot listen on {name}://{host}:{port}: {why}")


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
    out: dict[str, int] = {}
    for entry in entries:
        host, sep, count = entry.strip().rpartition(":")
        if not sep or not count.strip().isdigit():
            raise ListenerError(f"max.connections.per.ip.overrides: {entry!r} is not host:count")
        host = host.strip("[]")
        try:
            ip = str(socket.getaddrinfo(host, None)[0][4][0])   # an IP sockaddr starts with the address text
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
                 security: dict | None = None, quotas=None):
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
        self._last_close = 0.0  # monotonic time of the last close
        self._release_pending = False   # enough closes for a release: the acceptor ticks
        self._stopping = False
        self.bound: dict[str, tuple[str, int]] = {}
        self._listen: list[tuple[socket.socket, str]] = []
        self._listening = False
        self.processors = [
            Processor(i, submit, max_frame=max_request_bytes, idle_ms=idle_ms, on_close=self._closed,
                      security=security, quotas=quotas)
            for i in range(max(1, num_network_threads))
        ]
        self._next_processor = itertools.cycle(self.processors)
        self._acceptor = threading.Thread(target=self._accept_loop, name="fastkafka-acceptor", daemon=True)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    # --- lifecycle ---
    def bind(self) -> None:
        """Reserve every listener's address; a busy port raises ListenerError naming it (nothing
        is left open). Connections are refused until :meth:`listen`."""
        try:
            for name, host, port in self._specs:
                family = socket.AF_INET6 if ":" in host else socket.AF_INET
                sock = socket.socket(family, socket.SOCK_STREAM)
                self._listen.append((sock, name))
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((host or ("::" if family == socket.AF_INET6 else "0.0.0.0"), port))
                except OSError as e:
                    raise _listener_error(name, host, port, e) from None
                self.bound[name] = (host, sock.getsockname()[1])
        except BaseException:
            self._close_listeners()
            raise

    def listen(self) -> None:
        """Accept connections from now on (they wait in the backlog until :meth:`start`). A port
        another process started listening on since :meth:`bind` raises ListenerError."""
        if not self._listen:
            self.bind()
        try:
            for sock, name in self._listen:
                try:
                    sock.listen(self._backlog)
                except OSError as e:
                    host, port = self.bound[name]
                    raise _listener_error(name, host, port, e) from None
                sock.setblocking(False)
        except BaseException:
            self._close_listeners()
            raise
        self._listening = True

    def start(self) -> None:
        if not self._listening:
            self.listen()
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
            self._last_close = time.monotonic()
            self._lock.notify_all()
            if not self._release_pending and self._release_due():
                self._release_pending = True     # the acceptor starts watching for the quiet
                self._wake_acceptor()

    def _release_due(self) -> bool:
        """Enough connections closed since the last release (the lock held)."""
        return self._peak - self._count >= TRIM_AFTER_CLOSES and self._count <= self._peak // 2

    def _wake_acceptor(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:           # full (a wakeup is pending anyway) or closed (shutdown)
            pass

    def _wave_of_closes_over(self) -> bool:
        """Many connections went (a client fleet restarting, a connection storm over) and the
        closes have stopped: time to give their memory back (see ``_compact_processors``)."""
        with self._lock:
            if not self._release_due():
                self._release_pending = False
                return False
            if time.monotonic() - self._last_close < RELEASE_QUIET_S:
                return False
            self._release_pending = False
            self._peak = self._count
            # a float made during the wave would outlive it (see _accept); 0.0 is a constant
            self._last_close = 0.0
            # a dict keeps its size after deletes: rebuilt, or emptied in place when no client
            # is left (a new dict would be made in the wave's pools)
            if self._per_ip:
                self._per_ip = dict(self._per_ip)
            else:
                self._per_ip.clear()
            return True

    def _compact_processors(self) -> None:
        """The processors' tables shrink to the connections left (a dict keeps its size after
        deletes); each is done once it waits again. The caller then collects and trims, once
        this method's locals are gone: a float of it freed after the collection would stay in
        CPython's float free list, in the wave's memory."""
        deadline = time.monotonic() + 1.0
        for done in [p.compact() for p in self.processors if p.is_alive()]:
            done.wait(max(0.0, deadline - time.monotonic()))

    def _accept_loop(self) -> None:
        ep = select.epoll()
        listeners = {sock.fileno(): (sock, name) for sock, name in self._listen}
        for fd in listeners:
            ep.register(fd, select.EPOLLIN)
        ep.register(self._wake_r.fileno(), select.EPOLLIN)
        try:
            while not self._stopping:
                with self._lock:  # at the connection limit: wait for a close (or shutdown)
                    while self._count >= self._max_connections and not self._stopping:
                        self._lock.wait(0.5)
                if self._stopping:
                    break
                # the batch is a temporary of the call: nothing of it is kept across the wait
                self._on_ready(listeners, ep.poll(_TICK_S if self._release_pending else None, _MAX_EVENTS))
                if self._release_pending and self._wave_of_closes_over():
                    self._compact_processors()
                    release_free_memory()
        except Exception:
            log.exception("acceptor failed")
        finally:
            ep.close()

    def _on_ready(self, listeners: dict, events: list) -> None:
        for fd, _ in events:
            listener = listeners.get(fd)
            if listener is None:          # the wake socket: shutdown, or a release pending
                self._drain_wakeups()
            elif not self._accept(*listener):
                return

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(64):
                pass
        except OSError:       # empty (BlockingIOError), or closed by shutdown
            pass

    def _accept(self, listener: socket.socket, name: str) -> bool:
        """Accept one connection on ``listener``; False once at ``max.connections``.

        A method, not inline in the loop: a loop variable holding the last accepted socket would
        keep it alive after it closed, and with it the memory of a wave of connections: CPython
        gives a 1 MiB arena of small objects back only once nothing in it is alive, and keeps
        its free pages resident until then (a few objects pinned several MB after 10,000
        connections closed). Hence also no counter of accepted connections here."""
        try:
            client, peer = listener.accept()
        except (BlockingIOError, InterruptedError):
            return True
        except OSError as e:  # EMFILE and friends: back off instead of spinning
            log.warning("accept on %s failed: %s", name, e)
            self._lock.acquire()
            self._lock.wait(0.1)
            self._lock.release()
            return True
        ip = peer[0]
        with self._lock:
            over = self._per_ip.get(ip, 0) >= self._ip_limits.get(ip, self._max_per_ip)
            if not over:
                self._count += 1
                self._peak = max(self._peak, self._count)
                self._per_ip[ip] = self._per_ip.get(ip, 0) + 1
        if over:   # Kafka's connection quota: accepted, then closed at once
            log.info("Rejected connection from %s, address already has the configured "
                     "maximum of %d connections.", ip, self._ip_limits.get(ip, self._max_per_ip))
            client.close()
            return True
        next(self._next_processor).assign(client, peer, name)
        return self._count < self._max_connections
