"""Receiving TLS in isolation: ``ssl.SSLSocket`` against ``SSLObject`` over memory BIOs (issue 16).

A client process sends ``--mb`` MiB over TLS 1.3 in 1 MiB writes (16 KiB records), or with
``--small`` as librdkafka's producer does with 1000-byte values (strace of the broker: a 1017-byte
record per value, a 26-byte one per record header); the server thread reads it
through a selector the way a processor does, three ways:

* ``socket``: an ``SSLSocket``, one ``recv_into`` per readable event (the broker before the
  memory-BIO transport: OpenSSL hands back at most one 16 KiB record per call, and its socket BIO
  reads each record with two ``recv`` calls, header then body).
* ``socket-drain``: the same, ``recv_into`` in a loop until ``SSLWantReadError``.
* ``bio``: the plain socket ``recv_into`` a 256 KiB buffer, written into an incoming
  ``MemoryBIO``, then ``SSLObject.read`` in a loop until ``SSLWantReadError``.

Figures: the server thread's CPU seconds per GiB (``time.thread_time``) and MiB/s; the modes
alternate within each round.

    python bench/bench_tls_read.py [--rounds 3] [--mb 128]
"""
from __future__ import annotations

import argparse
import os
import selectors
import socket
import ssl
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests")]

from support.certs import make_certs  # noqa: E402

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


def _read_socket(ctx, sock, total, drain):
    tls = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    sel = selectors.DefaultSelector()
    sel.register(tls, selectors.EVENT_READ)
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            sel.select()
    buf = memoryview(bytearray(BUF))
    got = 0
    start = time.thread_time()
    while got < total:
        sel.select()
        try:
            while True:
                n = tls.recv_into(buf)
                if n == 0:
                    raise EOFError
                got += n
                if not drain and not tls.pending():
                    break
        except ssl.SSLWantReadError:
            pass
    cpu = time.thread_time() - start
    tls.sendall(b"k")
    sel.close()
    return cpu, tls


def _read_bio(ctx, sock, total):
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_side=True)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    raw = memoryview(bytearray(BUF))
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            if outgoing.pending:
                sock.sendall(outgoing.read())
            sel.select()
            n = sock.recv_into(raw)
            incoming.write(raw[:n])
    if outgoing.pending:
        sock.sendall(outgoing.read())
    buf = memoryview(bytearray(BUF))
    got = 0
    start = time.thread_time()
    while got < total:
        sel.select()
        n = sock.recv_into(raw)
        if n == 0:
            raise EOFError
        incoming.write(raw[:n])
        try:
            while True:
                got += obj.read(BUF, buf)
        except ssl.SSLWantReadError:
            pass
    cpu = time.thread_time() - start
    obj.write(b"k")
    sock.sendall(outgoing.read())
    sel.close()
    return cpu, sock


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
    if mode == "bio":
        cpu, s = _read_bio(ctx, sock, total)
    else:
        cpu, s = _read_socket(ctx, sock, total, drain=mode == "socket-drain")
    assert client.wait(60) == 0
    wall = time.perf_counter() - wall
    s.close()
    return cpu / (mb / 1024), mb / wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=128)
    ap.add_argument("--small", action="store_true",
                    help="the client writes 10 B then 1000 B, one TLS record each, as librdkafka does")
    args = ap.parse_args()
    certs = make_certs(__import__("pathlib").Path(tempfile.mkdtemp()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(certs.broker_cert), str(certs.broker_key))
    modes = ["socket", "socket-drain", "bio"]
    print("| round | " + " | ".join(modes) + " | bio / socket CPU |")
    print("|---" * (len(modes) + 2) + "|")
    for r in range(args.rounds):
        order = modes if r % 2 == 0 else modes[::-1]
        res = {m: run(m, ctx, str(certs.ca), args.mb, args.small) for m in order}
        cells = [f"{res[m][0]:.2f} CPU s/GiB ({res[m][1]:.0f} MiB/s)" for m in modes]
        print(f"| {r} | " + " | ".join(cells) + f" | {res['bio'][0] / res['socket'][0]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
