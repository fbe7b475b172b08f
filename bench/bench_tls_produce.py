"""The broker's side of produce over TLS, the client's cost taken out (issue 16).

bench_security.py's producer is librdkafka, on the same two cores as the broker: its own TLS
(a record per 1000-byte value and one per record header) and the machine's other load move its
ratio a lot. Here the client does almost nothing while timed: its Produce requests (v7, acks=1,
a batch of 1000 records of 1000 bytes, about 1 MiB) are built, and for SSL encrypted as
librdkafka cuts them (1010-byte TLS records), before the clock starts; then they are sent one
at a time, each answered before the next. PLAINTEXT and SSL alternate within each round against
one ``fastkafka serve``; figures: MiB/s and the broker process's CPU seconds per GiB.

    python bench/bench_tls_produce.py [--rounds 4] [--requests 128] [--tls-record 1010]

``--tls-record 16384`` cuts full TLS records instead, as librdkafka does for most of a batch that
fits its buffer.
"""
from __future__ import annotations

import argparse
import os
import socket
import ssl
import struct
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"),
                os.path.join(ROOT, "bench")]

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from support.brokers import free_port, serve_process, wait_listening  # noqa: E402
from support.certs import make_certs  # noqa: E402
from loadgen import cpu_seconds  # noqa: E402

from fastkafka import protocol as P, records  # noqa: E402
from fastkafka.protocol import ApiKey  # noqa: E402
from scratch import scratch_dir  # noqa: E402

TLS_RECORD = 1010


class Channel:
    """A blocking connection; over TLS an ``SSLObject`` on memory BIOs, so that what is sent
    can be encrypted ahead of time."""

    def __init__(self, port: int, ca: str | None, tls_record: int = TLS_RECORD):
        self.tls_record = tls_record
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.tls = None
        if ca is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.load_verify_locations(ca)
            self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            self.tls = ctx.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")
            while True:
                try:
                    self.tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    self.sock.sendall(self.outgoing.read())
                    self.incoming.write(self.sock.recv(65536))
            self.sock.sendall(self.outgoing.read())

    def wire(self, request: bytes) -> bytes:
        if self.tls is None:
            return request
        for i in range(0, len(request), self.tls_record):
            self.tls.write(request[i:i + self.tls_record])
        return self.outgoing.read()

    def read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            if self.tls is None:
                chunk = self.sock.recv(n - len(out))
            else:
                try:
                    chunk = self.tls.read(n - len(out))
                except ssl.SSLWantReadError:
                    self.incoming.write(self.sock.recv(65536))
                    continue
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return bytes(out)


def produce(port: int, ca: str | None, topic: str, n: int, pid: int,
            tls_record: int = TLS_RECORD) -> tuple[float, float]:
    """(seconds, broker CPU seconds) for ``n`` sequential ~1 MiB Produce requests."""
    batch = records.build_batch([(None, b"v" * 1000, [], 0) for _ in range(1000)])
    ch = Channel(port, ca, tls_record)
    wires = [ch.wire(P.encode_request(ApiKey.PRODUCE, 7, corr, {"acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}, "bench")) for corr in range(n)]
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    for corr, wire in enumerate(wires):
        ch.sock.sendall(wire)
        got, resp = P.decode_response(ApiKey.PRODUCE, 7, ch.read(struct.unpack(">i", ch.read(4))[0]))
        assert got == corr and resp.responses[0].partition_responses[0].error_code == 0
    took, cpu = time.perf_counter() - t0, cpu_seconds(pid) - c0
    ch.sock.close()
    return took, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--requests", type=int, default=128)
    ap.add_argument("--tls-record", type=int, default=TLS_RECORD, help="plaintext bytes per TLS record")
    args = ap.parse_args()
    certs = make_certs(__import__("pathlib").Path(scratch_dir("bench-certs-")))
    ports = {"PLAINTEXT": free_port(), "SSL": free_port()}
    proc = serve_process(
        "--override", "listeners=" + ",".join(f"{k}://127.0.0.1:{p}" for k, p in ports.items()),
        "--override", f"log.dirs={scratch_dir('bench-tls-')}",
        "--override", f"ssl.keystore.location={certs.broker}", "--log-level", "WARNING")
    try:
        for p in ports.values():
            wait_listening(p, proc)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"})
        mib = args.requests * len(records.build_batch([(None, b"v" * 1000, [], 0) for _ in range(1000)])) / (1 << 20)
        for proto in ports:   # warm-up, untimed: the first requests after start pay for imports and caches
            for fut in admin.create_topics([NewTopic(f"warm-{proto.lower()}", 1, 1)]).values():
                fut.result(15)
            time.sleep(0.5)
            produce(ports[proto], str(certs.ca) if proto == "SSL" else None, f"warm-{proto.lower()}", 16, proc.pid)
        print("| round | produce PLAINTEXT | produce SSL | ratio |\n|---|---|---|---|")
        for r in range(args.rounds):
            res = {}
            for proto in ("PLAINTEXT", "SSL") if r % 2 == 0 else ("SSL", "PLAINTEXT"):
                topic = f"{proto.lower()}-{r}"
                for fut in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                    fut.result(15)
                time.sleep(0.5)   # the new partition's leader
                res[proto] = produce(ports[proto], str(certs.ca) if proto == "SSL" else None, topic,
                                     args.requests, proc.pid, args.tls_record)
            cells = [f"{mib / res[p][0]:.1f} MiB/s ({res[p][1] / mib * 1024:.1f} CPU s/GiB)"
                     for p in ("PLAINTEXT", "SSL")]
            print(f"| {r} | {cells[0]} | {cells[1]} | {res['PLAINTEXT'][0] / res['SSL'][0]:.2f}x |", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
