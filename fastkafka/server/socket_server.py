"""The broker's network front: listeners, one acceptor thread, ``num.network.threads`` processors.

The acceptor accepts on every listener and hands sockets to processors round-robin. At
``max.connections`` it stops accepting (new clients wait in the listen backlog, as with
Kafka's connection quota) until a connection closes.

Example::

    >>> server = SocketServer(["PLAINTEXT://127.0.0.1:0"], submit=lambda req: req.close_connection())
    >>> server.start(); port = server.bound["PLAINTEXT"][1]
    >>> server.shutdown()
"""
from __future__ import annotations

import errno
import logging
import selectors
import socket
import threading
from typing import Callable

from .processor import Processor, Request

__all__ = ["SocketServer", "parse_listener", "ListenerError"]

log = logging.getLogger("fastkafka.server")


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


class SocketServer:
    """Thread-safe ``start`` / ``shutdown``; ``bound`` maps listener name -> (host, port) after start."""

    def __init__(self, listeners: list[str], submit: Callable[[Request], None], *,
                 num_network_threads: int = 3, max_connections: int = 2**31 - 1,
                 max_request_bytes: int = 104857600, idle_ms: int = 600_000, backlog: int = 128):
        self._specs = [parse_listener(s) for s in listeners]
        names = [n for n, _, _ in self._specs]
        if len(set(names)) != len(names):
            raise ListenerError(f"listener names must be unique: {names}")
        self._submit = submit
        self._max_connections = max_connections
        self._backlog = backlog
        self._lock = threading.Condition()
        self._count = 0
        self._stopping = False
        self.bound: dict[str, tuple[str, int]] = {}
        self._listen: list[tuple[socket.socket, str]] = []
        self.processors = [
            Processor(i, submit, max_frame=max_request_bytes, idle_ms=idle_ms, on_close=self._closed)
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
    def _closed(self, conn) -> None:
        with self._lock:
            self._count -= 1
            self._lock.notify_all()

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
                    with self._lock:
                        self._count += 1
                    self.processors[rr % len(self.processors)].assign(client, peer, key.data)
                    rr += 1
                    if self._count >= self._max_connections:
                        break
        except Exception:
            log.exception("acceptor failed")
        finally:
            sel.close()
