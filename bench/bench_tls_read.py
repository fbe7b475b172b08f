"""Receiving TLS in isolation: the broker's ``TlsTransport`` reading through ``SSLObject.read``
against its C loop over the same ``SSL`` (``_core.tls_read``), issue 16.

A client process sends ``--mb`` MiB over TLS 1.3 in 1 MiB writes (16 KiB records), or with
``--small`` as librdkafka's producer does with 1000-byte values (strace of the broker: a 1017-byte
record per value, a 26-byte one per record header); the server thread reads it through a
selector the way a processor does, with a :class:`TlsTransport` either way:

* ``python``: ``SSLObject.read`` per record (where the ``SSL`` cannot be borrowed);
* ``c``: ``_core.tls_read``'s loop: ``recv``, ``BIO_write`` and ``SSL_read`` per record in C.

(Before the memory-BIO transport the broker read an ``ssl.SSLSocket``: 3x the CPU of ``python``
on the small-record pattern; bench/RESULTS.md keeps those figures.)

Figures: the server thread's CPU seconds per GiB (``time.thread_time``) and MiB/s; the modes
alternate within each round.

    python bench/bench_tls_read.py [--rounds 3] [--mb 128] [--small]
"""
from __future__ import annotations

import argparse
import os
import selectors
import socket
import ssl
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from support.certs import make_certs  # noqa: E402
from fastkafka.server import tls_transport  # noqa: E402
from fastkafka.server.tls_transport import RAW_BYTES, TlsTransport  # noqa: E402
from scratch import scratch_dir  # noqa: E402

CLIENT = """
import socket, ssl, sys
port, mb, ca = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
if len(sys.argv) > 4:   # librdkafka's pattern: a record per message value and one per its header
    value, header = b"x" * 1000, b"h" * 10
    for _ in range(mb * 1024 * 1024 // 1010):
        s.sendall(header)
        s.sendall(value)
    s.sendall(b"t" * (mb * 1024 * 1024 % 1010))
else:
    chunk = b"x" * (1 << 20)
    for _ in range(mb):
        s.sendall(chunk)
s.recv(1)   # the server's one-byte acknowledgement: everything was read
s.close()
"""

BUF = 256 * 1024


def _read_transport(ctx, sock, total, in_c):
    reader_for = tls_transport.reader_for
    if not in_c:
        tls_transport.reader_for = None
    try:
        t = TlsTransport(sock, ctx, memoryview(bytearray(RAW_BYTES)))
    finally:
        tls_transport.reader_for = reader_for
    assert t.reads_in_c == in_c, "the C loop cannot borrow this Python's SSL"
    sel = selectors.DefaultSelector()
    key = sel.register(sock, selectors.EVENT_READ)
    while want := t.handshake():
        key = sel.modify(sock, want)
        sel.select()
    sel.modify(sock, selectors.EVENT_READ)
    buf = memoryview(bytearray(BUF))
    got = 0
    start = time.thread_time()
    while got < total:
        sel.select()
        try:
            while True:     # as Connection.read: on while the transport holds bytes
                n = t.recv_into(buf)
                if n == 0:
                    raise EOFError
                got += n
                if not t.buffered():
                    break
        except BlockingIOError:
            pass
    cpu = time.thread_time() - start
    t.write(b"k")
    t.flush()
    sel.close()
    del key
    return cpu, t


def run(mode: str, ctx: ssl.SSLContext, ca: str, mb: int, small: bool) -> tuple[float, float]:
    """(server CPU seconds per GiB, MiB/s) of one transfer."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(lsock.getsockname()[1]), str(mb), ca]
                              + (["small"] if small else []))
    sock, _ = lsock.accept()
    lsock.close()
    sock.setblocking(False)
    total = mb << 20
    wall = time.perf_counter()
    cpu, t = _read_transport(ctx, sock, total, in_c=mode == "c")
    assert client.wait(60) == 0
    wall = time.perf_counter() - wall
    t.close()
    return cpu / (mb / 1024), mb / wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=128)
    ap.add_argument("--small", action="store_true",
                    help="the client writes 10 B then 1000 B, one TLS record each, as librdkafka does")
    args = ap.parse_args()
    certs = make_certs(__import__("pathlib").Path(scratch_dir("bench-certs-")))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(certs.broker_cert), str(certs.broker_key))
    modes = ["python", "c"]
    print("| round | " + " | ".join(modes) + " | c / python CPU |")
    print("|---" * (len(modes) + 2) + "|")
    for r in range(args.rounds):
        order = modes if r % 2 == 0 else modes[::-1]
        res = {m: run(m, ctx, str(certs.ca), args.mb, args.small) for m in order}
        cells = [f"{res[m][0]:.2f} CPU s/GiB ({res[m][1]:.0f} MiB/s)" for m in modes]
        print(f"| {r} | " + " | ".join(cells) + f" | {res['c'][0] / res['python'][0]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
