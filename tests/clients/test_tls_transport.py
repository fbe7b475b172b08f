"""The broker's TLS transport (OpenSSL over memory BIOs, fastkafka/server/tls_transport.py) on the
cases it brings: records cut across TCP segments, many records in one segment, a close_notify in
the middle of a request, a socket that takes ciphertext slowly, close_notify from our side.

The client side is an ``ssl.SSLObject`` over memory BIOs too, so the test decides exactly which
ciphertext bytes go out in which ``send``: first against a bare :class:`TlsTransport` on a
socketpair, then against a broker's SSL listener."""
from __future__ import annotations

import selectors
import socket
import ssl
import struct
import threading
import time

import pytest

from fastkafka import protocol as P
from fastkafka import records
from fastkafka.protocol import ApiKey
from fastkafka.server import tls_transport
from fastkafka.server.connection import SCRATCH_BYTES, Connection
from fastkafka.server.tls_transport import RAW_BYTES, TlsTransport

from support.certs import make_certs


pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def server_ctx(certs):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(certs.broker_cert), str(certs.broker_key))
    return ctx


class Client:
    """A TLS client over memory BIOs on a socket: what goes out and when is the test's to say."""

    def __init__(self, sock: socket.socket, ca):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(str(ca))
        self.sock = sock
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")

    def ciphertext(self, data: bytes, record: int) -> bytes:
        """``data`` encrypted as records of at most ``record`` plaintext bytes, not sent."""
        for i in range(0, len(data), record):
            self.obj.write(data[i:i + record])
        return self.outgoing.read()

    def pump(self, timeout: float | None = None) -> bool:
        """Move what the socket has into the incoming BIO; False at EOF."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except (BlockingIOError, socket.timeout):
            return True
        if data:
            self.incoming.write(data)
        return bool(data)

    def handshake(self, server: TlsTransport | None = None) -> None:
        """Blocking against a broker; against a bare transport, both sides are driven from here."""
        for _ in range(100):
            try:
                self.obj.do_handshake()
                done = True
            except ssl.SSLWantReadError:
                done = False
            if self.outgoing.pending:
                self.sock.sendall(self.outgoing.read())
            if server is None:
                if done:
                    return
                self.pump(10)
                continue
            want = server.handshake()
            self.pump(0)
            if done and not want:
                return
        raise AssertionError("handshake did not finish")

    def read(self, n: int, timeout: float = 10) -> bytes:
        """Exactly ``n`` plaintext bytes."""
        out = bytearray()
        deadline = time.monotonic() + timeout
        while len(out) < n:
            try:
                data = self.obj.read(n - len(out))
                if not data:
                    raise ConnectionError("close_notify")
                out += data
                continue
            except ssl.SSLWantReadError:
                pass
            assert time.monotonic() < deadline, f"{len(out)} of {n} bytes"
            if not self.pump(0.5):
                raise ConnectionError("EOF")
        return bytes(out)

    def read_frame(self) -> bytes:
        return self.read(struct.unpack(">i", self.read(4))[0])

    def closed_with_close_notify(self, timeout: float = 10) -> bool:
        """True once the peer's close_notify arrives (False: bare EOF)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:    # b"" (or SSLZeroReturnError once we said close_notify too): the peer's close_notify
                if not self.obj.read(1 << 16):
                    return True
                continue
            except ssl.SSLZeroReturnError:
                return True
            except ssl.SSLWantReadError:
                pass
            if not self.pump(0.5):
                return False
        raise AssertionError("the peer neither closed nor said close_notify")


@pytest.fixture(params=["c", "python"])
def read_path(request, monkeypatch):
    """The bare-transport tests run on both ways of reading: the C loop over the borrowed ``SSL``
    (this machine's CPython must allow it), and ``SSLObject.read`` (where it cannot be borrowed)."""
    if request.param == "python":
        monkeypatch.setattr(tls_transport, "reader_for", None)
    else:
        assert tls_transport.reader_for is not None, "fastkafka._core.tls_read did not import"
    return request.param


def transport_pair(server_ctx, certs, read_path):
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    t = TlsTransport(ours, server_ctx, memoryview(bytearray(RAW_BYTES)))
    assert t.reads_in_c == (read_path == "c")
    c = Client(theirs, certs.ca)
    c.handshake(t)
    return t, c


def test_a_record_cut_into_one_byte_segments_is_read_when_whole(server_ctx, certs, read_path):
    t, c = transport_pair(server_ctx, certs, read_path)
    wire = c.ciphertext(b"k" * 5000, record=5000)   # one record
    buf = bytearray(8192)
    for i in range(len(wire) - 1):
        c.sock.send(wire[i:i + 1])
        with pytest.raises(BlockingIOError):    # a partial record decrypts to nothing
            t.recv_into(buf)
    c.sock.send(wire[-1:])
    assert t.recv_into(buf) == 5000 and buf[:5000] == b"k" * 5000
    assert not t.buffered()
    t.close()


def test_many_records_of_one_segment_come_out_in_one_call_as_far_as_asked(server_ctx, certs, read_path):
    t, c = transport_pair(server_ctx, certs, read_path)
    data = bytes(range(256)) * 40                    # 10,240 bytes in 1,024 records of 10
    c.sock.sendall(c.ciphertext(data, record=10))
    buf = bytearray(len(data))
    assert t.recv_into(buf, 3005) == 3005            # stops inside a record when told
    assert t.buffered()                              # the rest is held here, unseen by a selector
    got = t.recv_into(memoryview(buf)[3005:])
    assert got == len(data) - 3005 and bytes(buf) == data
    assert not t.buffered()
    with pytest.raises(BlockingIOError):
        t.recv_into(buf)
    t.close()


def test_close_notify_mid_request_ends_the_stream(server_ctx, certs, read_path):
    t, c = transport_pair(server_ctx, certs, read_path)
    c.obj.write(b"\x00\x00\x01\x00half a frame")
    try:
        c.obj.unwrap()
    except ssl.SSLWantReadError:                     # close_notify is written; ours is not awaited
        pass
    c.sock.sendall(c.outgoing.read())
    buf = bytearray(1024)
    assert bytes(buf[:t.recv_into(buf)]) == b"\x00\x00\x01\x00half a frame"
    assert t.recv_into(buf) == 0                     # end of stream
    t.close()
    assert c.closed_with_close_notify()


def test_close_says_close_notify_and_a_slow_reader_gets_everything(server_ctx, certs, read_path):
    t, c = transport_pair(server_ctx, certs, read_path)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    data = bytes(range(251)) * 16_000                # ~4 MB: more than the socketpair holds
    t.write(data)
    assert not t.flush()                             # the socket is full: ciphertext waits here
    sel = selectors.DefaultSelector()
    sel.register(t.sock, selectors.EVENT_WRITE)
    got = bytearray()
    while len(got) < len(data):
        if not t.flush():
            got += c.read(min(65536, len(data) - len(got)))
            continue
        got += c.read(len(data) - len(got))
    assert got == data
    t.close()
    assert c.closed_with_close_notify()
    sel.close()


def test_a_tampered_record_is_an_ssl_error_and_eof_ends_the_stream(server_ctx, certs, read_path):
    t, c = transport_pair(server_ctx, certs, read_path)
    good = c.ciphertext(b"intact", record=100)
    bad = bytearray(c.ciphertext(b"tampered", record=100))
    bad[-1] ^= 1                                     # the record's tag no longer matches
    c.sock.sendall(good + bad)
    buf = bytearray(64)
    assert bytes(buf[:t.recv_into(buf, 6)]) == b"intact"
    with pytest.raises(ssl.SSLError):
        t.recv_into(buf)
    t.close()
    t, c = transport_pair(server_ctx, certs, read_path)
    c.sock.sendall(c.ciphertext(b"last words", record=100))
    c.sock.close()                                   # TCP EOF, no close_notify
    assert bytes(buf[:t.recv_into(buf)]) == b"last words"
    assert t.buffered() and t.recv_into(buf) == 0   # the end, said once the data is out
    t.close()


def test_garbage_and_eof_fail_the_handshake(server_ctx, certs):
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    t = TlsTransport(ours, server_ctx, memoryview(bytearray(RAW_BYTES)))
    theirs.sendall(b"GET / HTTP/1.0\r\n\r\n")
    with pytest.raises(ssl.SSLError):
        t.handshake()
    t.close()
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    t = TlsTransport(ours, server_ctx, memoryview(bytearray(RAW_BYTES)))
    assert t.handshake() == selectors.EVENT_READ     # nothing yet: wait for the ClientHello
    theirs.close()
    with pytest.raises(ConnectionError):
        t.handshake()
    t.close()


def test_a_connection_reads_no_further_than_its_first_complete_frame(server_ctx, certs, read_path):
    """A client that pipelines large requests is held back by TCP, as over PLAINTEXT: each read
    stops at a complete frame and leaves the rest in TLS or the socket (it once read on until
    the socket ran dry, taking in ~75 MB of a fast producer's requests at once)."""
    t, c = transport_pair(server_ctx, certs, read_path)
    conn = Connection("tls-test", t.sock, ("127.0.0.1", 1), "SSL", 1 << 20, tls=t)
    payloads = [bytes([65 + i]) * (200 * 1024) for i in range(6)]
    wire = b"".join(c.ciphertext(struct.pack(">i", len(p)) + p, record=16384) for p in payloads)
    c.sock.settimeout(30)
    writer = threading.Thread(target=c.sock.sendall, args=(wire,))
    writer.start()
    scratch = memoryview(bytearray(SCRATCH_BYTES))
    sel = selectors.DefaultSelector()
    sel.register(t.sock, selectors.EVENT_READ)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < len(payloads):
        assert time.monotonic() < deadline, f"{len(got)} of {len(payloads)} frames"
        if not t.buffered():
            sel.select(1)
        try:
            assert conn.read(scratch)
        except BlockingIOError:
            continue
        assert len(conn.frames) <= 1      # 200 KiB frames: the first read's 256 KiB holds one
        got += [bytes(f) for f in conn.frames]
        conn.frames.clear()
    writer.join()
    assert got == payloads
    sel.close()
    t.close()
    c.sock.close()


# --- against a broker's SSL listener ---

@pytest.fixture(scope="module")
def broker(start_module_broker, certs):
    return start_module_broker(listeners="SSL://127.0.0.1:0", ssl_keystore_location=str(certs.broker),
                               inter_broker_listener_name="SSL", num_partitions=1)


def connect(broker, certs) -> Client:
    c = Client(socket.create_connection(("127.0.0.1", broker.port), timeout=10), certs.ca)
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.handshake()
    return c


def metadata(c: Client, corr: int) -> bytes:
    return P.encode_request(ApiKey.METADATA, 1, corr, {"topics": None}, "tls-test")


def answer(c: Client, key, version, corr):
    got_corr, resp = P.decode_response(key, version, c.read_frame())
    assert got_corr == corr
    return resp


def test_broker_reads_a_request_in_tiny_segments_and_pipelined_requests_in_one(broker, certs):
    c = connect(broker, certs)
    wire = c.ciphertext(metadata(c, 1), record=7)
    for i in range(0, len(wire), 3):                 # 3-byte segments, records cut everywhere
        c.sock.send(wire[i:i + 3])
        time.sleep(0.0005)                           # gives the segments a chance to arrive apart
    assert answer(c, ApiKey.METADATA, 1, 1).brokers
    # twenty requests, each in many records, all in one segment
    c.sock.sendall(b"".join(c.ciphertext(metadata(c, corr), record=11) for corr in range(2, 22)))
    for corr in range(2, 22):
        assert answer(c, ApiKey.METADATA, 1, corr).brokers


def test_broker_takes_a_large_produce_in_small_records_and_fetch_returns_it(broker, certs):
    c = connect(broker, certs)
    values = [b"%06d" % i + b"v" * 994 for i in range(1000)]
    body = {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": "tls-small-records", "partition_data": [
            {"index": 0, "records": records.build_batch([(None, v, [], 0) for v in values])}]}]}
    create = {"topics": [{"name": "tls-small-records"}], "allow_auto_topic_creation": True}
    c.sock.sendall(c.ciphertext(P.encode_request(ApiKey.METADATA, 4, 1, create, "tls-test"), record=16384))
    assert answer(c, ApiKey.METADATA, 4, 1).topics[0].error_code in (0, 5)   # 5: created, leader coming
    deadline = time.monotonic() + 10
    for corr in range(2, 1000):     # until the new partition has its leader
        c.sock.sendall(c.ciphertext(P.encode_request(ApiKey.PRODUCE, 7, corr, body, "tls-test"), record=1010))
        error = answer(c, ApiKey.PRODUCE, 7, corr).responses[0].partition_responses[0].error_code
        if error != 5 and error != 3 or time.monotonic() > deadline:
            break
    assert error == 0
    fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 4 << 20, "isolation_level": 0,
             "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "topics": [
                 {"topic": "tls-small-records", "partitions": [
                     {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 4 << 20}]}]}
    c.sock.sendall(c.ciphertext(P.encode_request(ApiKey.FETCH, 11, 0, fetch, "tls-test"), record=16384))
    part = answer(c, ApiKey.FETCH, 11, 0).responses[0].partitions[0]
    assert [r.value for b in records.iter_batches(bytes(part.records)) for r in b.records()] == values


def test_broker_closes_on_close_notify_mid_request_and_says_close_notify(broker, certs):
    c = connect(broker, certs)
    frame = metadata(c, 1)
    c.obj.write(frame[:len(frame) // 2])
    try:
        c.obj.unwrap()
    except ssl.SSLWantReadError:
        pass
    c.sock.sendall(c.outgoing.read())
    assert c.closed_with_close_notify()
    again = connect(broker, certs)                   # the listener is fine
    again.sock.sendall(again.ciphertext(metadata(again, 5), record=16384))
    assert answer(again, ApiKey.METADATA, 1, 5).brokers
