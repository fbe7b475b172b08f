"""The network layer on its own: framing, muting/pipelining order, file regions, limits, shutdown.

A tiny handler echoes frames so the tests see exactly what the processors did with the bytes.
"""
import os
import socket
import struct
import threading
import time

import pytest

from fastkafka.server.send import FileRegion
from fastkafka.server.socket_server import ListenerError, SocketServer, parse_listener

from support.brokers import running_broker

pytestmark = pytest.mark.timeout(60)


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def echo_body(n: int) -> bytes:
    """n random bytes the test handler echoes: never starting with one of its command letters
    (N, S, F), which random bytes otherwise do about 1 time in 85."""
    return b"e" + os.urandom(n - 1) if n else b""


def recv_exact(sock, n, timeout=10.0):
    sock.settimeout(timeout)
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def recv_frame(sock, timeout=10.0):
    (n,) = struct.unpack(">i", recv_exact(sock, 4, timeout))
    return recv_exact(sock, n, timeout)


def is_closed(sock, timeout=5.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


class Echo:
    """Echo handler: ``N...`` = no response, ``S<ms>`` sleeps (in a thread) then answers,
    ``F<path>`` answers with the file's bytes as a FileRegion, anything else echoes."""

    def __init__(self):
        self.handled = 0

    def __call__(self, req):
        self.handled += 1
        body = bytes(req.frame)
        if body.startswith(b"N"):
            req.no_response()
        elif body.startswith(b"S"):
            delay = int(body[1:].split(b":")[0]) / 1000

            def later():
                time.sleep(delay)     # a slow handler is what ``S`` simulates
                req.respond([frame(body)])
            threading.Thread(target=later, daemon=True).start()
        elif body.startswith(b"F"):
            path = body[1:].decode()
            fd = os.open(path, os.O_RDONLY)
            size = os.fstat(fd).st_size
            req.respond([struct.pack(">i", size + 3), b"hdr", FileRegion(fd, 0, size, lambda: os.close(fd))])
        else:
            req.respond([struct.pack(">i", len(body)), body[:3], memoryview(body)[3:]])


@pytest.fixture
def server(request):
    opts = getattr(request, "param", {})
    handler = Echo()
    s = SocketServer(["PLAINTEXT://127.0.0.1:0"], submit=handler, num_network_threads=2,
                     max_request_bytes=opts.get("max_request_bytes", 8 << 20),
                     max_connections=opts.get("max_connections", 1000),
                     idle_ms=opts.get("idle_ms", 600_000))
    s.start()
    s.handler = handler
    s.port = s.bound["PLAINTEXT"][1]
    yield s
    s.shutdown(5)


def connect(server):
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def test_parse_listener_forms():
    assert parse_listener("plaintext://localhost:9092") == ("PLAINTEXT", "localhost", 9092)
    assert parse_listener("PLAINTEXT://[::1]:9") == ("PLAINTEXT", "::1", 9)
    for bad in ("localhost:9092", "PLAINTEXT://host", "PLAINTEXT://h:x", "PLAINTEXT://h:70000"):
        with pytest.raises(ListenerError):
            parse_listener(bad)


def test_pipelined_requests_come_back_in_order_even_when_handlers_finish_out_of_order(server):
    c = connect(server)
    # the first request is answered last by its handler thread; muting keeps the order anyway
    bodies = [b"S300:first", b"quick-1", b"S50:second", echo_body(3 << 20), b"quick-2"]
    c.sendall(b"".join(frame(b) for b in bodies))
    assert [recv_frame(c) for _ in bodies] == bodies


@pytest.mark.parametrize("middle", [b"S200:later", b"N-no-answer"])
@pytest.mark.parametrize("read_after_s", [0.0, 0.5])
def test_gathered_responses_that_fill_the_socket_keep_their_order(server, tmp_path, middle, read_after_s):
    # Responses answered inline are written together once the read's frames are used up. Here
    # the first (a 32 MiB file region) is more than the socket buffers hold, and the next
    # request is one a handler thread answers 200 ms later (or one with no answer): it waits for
    # the big one to be out whether it completes while that is stuck (the client reads late) or
    # after (it reads at once), and the last request is dispatched only after it.
    path = tmp_path / "big"
    path.write_bytes(os.urandom(32 << 20))
    c = connect(server)
    c.sendall(b"".join(frame(b) for b in (b"F" + str(path).encode(), middle, b"after")))
    time.sleep(read_after_s)          # the case under test: a client that reads late
    assert recv_frame(c) == b"hdr" + path.read_bytes()
    expected = [middle, b"after"] if middle.startswith(b"S") else [b"after"]
    assert [recv_frame(c) for _ in expected] == expected


def test_frames_split_anywhere_and_many_in_one_segment(server):
    c = connect(server)
    bodies = [echo_body(n) for n in (0, 1, 2, 3, 4, 5, 100, 65535, 65536, 70000)] * 3
    wire = b"".join(frame(b) for b in bodies)
    step = 1
    pos = 0
    while pos < len(wire):  # odd-sized writes cut size prefixes and bodies at every position
        c.sendall(wire[pos:pos + step])
        pos += step
        step = step * 3 + 1 if step < 40000 else 7
    assert [recv_frame(c) for _ in bodies] == bodies


def test_no_response_unmutes_the_connection(server):
    c = connect(server)
    c.sendall(frame(b"N1") + frame(b"N2") + frame(b"hello"))
    assert recv_frame(c) == b"hello"
    c.settimeout(0.3)
    with pytest.raises(socket.timeout):
        c.recv(1)  # acks=0-style requests produced nothing on the wire


def test_file_region_is_sent_with_sendfile(server, tmp_path):
    path = tmp_path / "segment.log"
    data = os.urandom(5 << 20)
    path.write_bytes(data)
    c = connect(server)
    c.sendall(frame(b"F" + str(path).encode()))
    got = recv_frame(c)
    assert got == b"hdr" + data


@pytest.mark.parametrize("server", [{"max_request_bytes": 1000}], indirect=True)
def test_garbage_and_oversize_close_only_that_connection(server):
    good = connect(server)
    for junk in (b"\xff\xff\xff\xff", struct.pack(">i", 1001) + b"x" * 10, b"\x80\0\0\0garbage"):
        bad = connect(server)
        bad.sendall(junk)
        assert is_closed(bad)
    good.sendall(frame(b"x" * 1000))
    assert recv_frame(good) == b"x" * 1000


@pytest.mark.parametrize("server", [{"max_connections": 2}], indirect=True)
def test_max_connections_holds_new_clients_until_one_closes(server):
    a, b = connect(server), connect(server)
    for s in (a, b):
        s.sendall(frame(b"ping"))
        assert recv_frame(s) == b"ping"
    c = connect(server)  # TCP completes in the backlog, but the broker does not serve it yet
    c.sendall(frame(b"third"))
    c.settimeout(0.7)
    with pytest.raises(socket.timeout):
        c.recv(1)
    a.close()
    assert recv_frame(c) == b"third"


@pytest.mark.parametrize("server", [{"idle_ms": 300}], indirect=True)
def test_idle_connections_are_closed(server):
    c = connect(server)
    c.sendall(frame(b"hi"))
    assert recv_frame(c) == b"hi"
    t0 = time.monotonic()
    assert is_closed(c, timeout=5)
    assert time.monotonic() - t0 >= 0.25
    deadline = time.monotonic() + 3
    while server.connection_count and time.monotonic() < deadline:
        time.sleep(0.02)                              # poll interval
    assert server.connection_count == 0


def test_shutdown_finishes_in_flight_requests(server):
    c = connect(server)
    c.sendall(frame(b"S400:slow"))
    deadline = time.monotonic() + 5
    while server.handler.handled < 1:                 # the request is in its handler
        assert time.monotonic() < deadline, "the request never reached its handler"
        time.sleep(0.005)                             # poll interval
    t = threading.Thread(target=server.shutdown, args=(5,))
    t.start()
    assert recv_frame(c) == b"S400:slow"
    t.join(10)
    assert not t.is_alive()
    assert is_closed(c)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1)


def test_busy_port_is_a_clear_error(server):
    other = SocketServer([f"PLAINTEXT://127.0.0.1:{server.port}"], submit=Echo())
    with pytest.raises(ListenerError, match="address already in use"):
        other.bind()


def _api_versions_ok(sock) -> bool:
    """One ApiVersions round trip; False when the broker closed the connection instead."""
    import struct as _struct
    from fastkafka import protocol as _P
    try:
        sock.sendall(bytes(_P.encode_request(_P.ApiKey.API_VERSIONS, 0, 1, {}, "t")))
        head = sock.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return False
        return len(sock.recv(_struct.unpack(">i", head)[0], socket.MSG_WAITALL)) > 0
    except (ConnectionResetError, BrokenPipeError):
        return False


@pytest.mark.parametrize("props, allowed", [
    ({"max_connections_per_ip": 3}, 3),
    ({"max_connections_per_ip": 1, "max_connections_per_ip_overrides": "127.0.0.1:4"}, 4),
])
def test_max_connections_per_ip(tmp_path, props, allowed):
    with running_broker(tmp_path, **props) as b:
        held = [socket.create_connection(("127.0.0.1", b.port), timeout=5) for _ in range(allowed)]
        assert all(_api_versions_ok(s) for s in held)
        extra = socket.create_connection(("127.0.0.1", b.port), timeout=5)
        assert not _api_versions_ok(extra)          # closed by the broker right after accept
        extra.close()
        held.pop().close()
        deadline = time.monotonic() + 5
        while True:                                   # the close reaches the broker's count
            again = socket.create_connection(("127.0.0.1", b.port), timeout=5)
            if _api_versions_ok(again) or time.monotonic() > deadline:
                break
            again.close()
            time.sleep(0.05)                          # poll interval
        assert _api_versions_ok(again)
        for s in held + [again]:
            s.close()


def test_a_wakeup_sent_while_the_loop_drains_is_not_lost():
    """Another thread's wakeup that lands while the loop drains the wake socket must leave either
    a byte to wake the next select or the flag clear: never the flag set with nothing to read,
    which made every later wakeup a no-op (new connections then waited for the select timeout)."""
    from fastkafka.server.processor import Processor

    p = Processor(0, lambda req: None, max_frame=1 << 20, idle_ms=60_000, on_close=lambda peer: None)
    real = p._wake_r

    class Racing:
        """The wake socket, with another thread's wakeup arriving between two reads of the drain."""
        raced = False

        def recv(self, n):
            data = real.recv(n)
            if not self.raced:
                self.raced = True
                p._wakeup()
            return data

    p._wakeup()
    p._wake_r = Racing()
    p._drain_wakeups()
    p._wake_r = real
    real.setblocking(False)
    try:
        pending = real.recv(16)
    except BlockingIOError:
        pending = b""
    assert pending or not p._wake_pending
    p._wake_r.close()
    p._wake_w.close()
