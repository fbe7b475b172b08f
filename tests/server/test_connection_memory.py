"""Memory after a wave of closes: once many connections closed and the closes stopped, the
processors' tables shrink to the connections left (a dict keeps its size after deletes), freed
memory goes back to the OS, and the connections that stayed keep working on the new selector.

The RSS figures are bench/bench_connections.py's; here the threshold is lowered so a few dozen
connections make a wave.
"""
import socket
import struct
import sys
import threading
import time

import pytest

from fastkafka.server import socket_server
from fastkafka.server.socket_server import SocketServer

from support.waits import wait_for

pytestmark = pytest.mark.timeout(60)


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def echo(sock: socket.socket, body: bytes) -> bytes:
    sock.sendall(frame(body))
    (n,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
    return sock.recv(n, socket.MSG_WAITALL)


@pytest.fixture
def wave(monkeypatch):
    """A server whose release runs after 40 closes and 0.2 s without one; ``released`` is set
    each time it gives memory back."""
    monkeypatch.setattr(socket_server, "TRIM_AFTER_CLOSES", 40)
    monkeypatch.setattr(socket_server, "RELEASE_QUIET_S", 0.2)
    released = threading.Event()
    real = socket_server.release_free_memory

    def counting():
        real()
        released.set()
    monkeypatch.setattr(socket_server, "release_free_memory", counting)
    s = SocketServer(["PLAINTEXT://127.0.0.1:0"], submit=lambda req: req.respond([frame(bytes(req.frame))]),
                     num_network_threads=2)
    s.start()
    s.port = s.bound["PLAINTEXT"][1]
    s.released = released
    yield s
    s.shutdown(5)


def open_connections(server, n):
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(n)]
    for i, c in enumerate(socks):
        assert echo(c, b"hello %d" % i) == b"hello %d" % i
    return socks


def test_tables_shrink_after_a_wave_and_the_connections_left_keep_working(wave):
    socks = open_connections(wave, 200)
    wait_for(lambda: wave.connection_count == 200)
    peak_sizes = [sys.getsizeof(p._conns) for p in wave.processors]
    kept, gone = socks[:10], socks[10:]
    for c in gone:
        c.close()
    assert wave.released.wait(10), "no release after the wave"
    assert wave.connection_count == 10
    for p, peak in zip(wave.processors, peak_sizes):
        assert sys.getsizeof(p._conns) < peak        # rebuilt to what is left
    for i, c in enumerate(kept):                      # still registered
        assert echo(c, b"still %d" % i) == b"still %d" % i
    more = open_connections(wave, 5)                  # and new ones join it
    for c in kept + more:
        c.close()


def test_no_release_for_a_few_closes(wave):
    socks = open_connections(wave, 30)                # fewer than the wave threshold
    for c in socks:
        c.close()
    wait_for(lambda: wave.connection_count == 0)
    assert not wave.released.wait(1.0)


def test_the_release_waits_for_the_end_of_the_wave(wave, monkeypatch):
    """Trimming as soon as half had closed left the memory of the rest of the wave behind."""
    monkeypatch.setattr(socket_server, "RELEASE_QUIET_S", 0.5)
    socks = open_connections(wave, 60)
    count_at_release = []
    real = socket_server.release_free_memory

    def noting():
        count_at_release.append(wave.connection_count)
        real()
    monkeypatch.setattr(socket_server, "release_free_memory", noting)
    for c in socks[:50]:                              # a wave, its closes 20 ms apart
        c.close()
        time.sleep(0.02)  # the wave's pace
    assert wave.released.wait(10)
    assert count_at_release == [10]
    for c in socks[50:]:
        c.close()


def test_an_idle_server_waits_without_a_timeout_and_still_serves(wave):
    """With no connection and nothing due, the processors and the acceptor block in epoll with
    no timeout (so that waiting allocates nothing); a new connection still wakes them."""
    socks = open_connections(wave, 45)
    for c in socks:
        c.close()
    assert wave.released.wait(10)
    wait_for(lambda: wave.connection_count == 0)
    assert [p._timeout() for p in wave.processors] == [None, None]
    assert not wave._release_pending                  # the acceptor waits with no timeout too
    (c,) = open_connections(wave, 1)
    assert echo(c, b"after idle") == b"after idle"
    c.close()
