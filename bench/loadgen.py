"""Raw-protocol load generator and the reference servers that give the limits.

The generator replays pre-built requests over one socket with a few in flight and only counts
response bytes, so the client costs almost nothing and the broker is what is measured. It speaks
nothing broker-specific: the same frames drive fastkafka, tansu and the reference servers.

Reference servers (each run as its own process, ``python bench/loadgen.py --serve KIND PORT PATH``,
so its CPU time can be read from /proc like a broker's):

  null       reads each frame, appends its body to PATH, answers 40 bytes (produce limit)
  sendfile   answers each frame with a 100-byte header + ``os.sendfile`` of the next 1 MiB of PATH
  read       the same, but ``os.preadv`` into a buffer then ``sendall`` (the copy fetch avoids)
  small      small-request limit (PATH is the partition count Metadata answers for any topic):
             a C loop (small_requests.pyx) that decodes each frame's header and answers a one-partition
             Produce v7 with a canned response; other requests (ApiVersions, Metadata, larger Produce)
             are answered from Python with fastkafka's codecs, so real clients can connect to it

Small requests (one record per Produce) are driven by :func:`replay_small`, a C loop over several
connections with ``window`` requests in flight on each: a Python loop would measure itself.
"""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fastkafka import protocol as P  # noqa: E402
from fastkafka import records  # noqa: E402

BATCH = 1 << 20
TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` after the command name (which may hold spaces): field 3 is index 0."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process (all its threads)."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / TICK


def minor_faults(pid: int) -> int:
    """Page faults a process has taken that needed no disk read: mostly first touches of fresh memory."""
    return int(_stat_fields(pid)[7])


def status_mib(pid: int, field: str) -> float:
    """A memory line of ``/proc/<pid>/status`` in MiB: ``VmRSS`` (resident now), ``VmHWM`` (its peak)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout=30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port}")


# --- pre-built requests ---
def produce_frame(topic: str, record_size: int) -> tuple[bytes, int]:
    """One Produce v7 request (acks=1, one partition) holding a batch of at most 1 MiB of
    ``record_size``-byte values; returns (frame, records in the batch)."""
    value = os.urandom(record_size)
    n = BATCH // record_size
    while True:  # as many records as fit 1 MiB (message.max.bytes is 1 MiB + 12)
        batch = records.build_batch([(None, value, [], 1_700_000_000_000 + i) for i in range(n)])
        if len(batch) <= BATCH:
            break
        n -= max(1, (len(batch) - BATCH) // (record_size + 8))
    body = {"acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
    return bytes(P.encode_request(P.ApiKey.PRODUCE, 7, 1, body, "bench")), n


def fetch_frame(topic: str, offset: int) -> bytes:
    """A Fetch v11 request for up to 1 MiB of one partition from ``offset``.

    ``max_wait_ms`` is 500 with ``min_bytes`` 1, so a broker holding data answers at once:
    tansu answers an empty response to ``max_wait_ms=0`` even when the data is there.
    """
    body = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": BATCH + 4096,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset, "current_leader_epoch": -1,
                                                 "log_start_offset": -1, "partition_max_bytes": BATCH + 4096}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    return bytes(P.encode_request(P.ApiKey.FETCH, 11, 1, body, "bench"))


def spread_produce_frame(topic: str, partitions: int, records_per_partition: int, record_size: int) -> bytes:
    """One Produce v7 request (acks=1) with a batch of ``records_per_partition`` records for each of
    ``partitions`` partitions: what a Java producer sends one broker leading many partitions."""
    value = os.urandom(record_size)
    data = [{"index": p, "records": records.build_batch(
        [(None, value, [], 1_700_000_000_000 + i) for i in range(records_per_partition)])}
        for p in range(partitions)]
    body = {"acks": 1, "timeout_ms": 30000, "topic_data": [{"name": topic, "partition_data": data}]}
    return bytes(P.encode_request(P.ApiKey.PRODUCE, 7, 1, body, "bench"))


def small_produce_frame(topic: str, value_size: int = 100, partition: int = 0, acks: int = 1) -> bytes:
    """One Produce v7 request holding one record of ``value_size`` bytes (what a producer with
    linger.ms=0 sends per message when the broker keeps up)."""
    batch = records.build_batch([(None, os.urandom(value_size), [], 1_700_000_000_000)])
    body = {"acks": acks, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    return bytes(P.encode_request(P.ApiKey.PRODUCE, 7, 1, body, "bench"))


def call(port: int, key: int, version: int, body) -> object:
    """One request/response round trip (set-up and checks, never timed)."""
    return call_frame(port, P.encode_request(key, version, 7, body, "bench"), key, version)


def call_frame(port: int, frame: bytes, key: int, version: int) -> object:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(frame)
        head = memoryview(bytearray(4))
        _read_exact(s, head, 4)
        body = memoryview(bytearray(struct.unpack(">i", head)[0]))
        if not _read_exact(s, body, len(body)):
            raise ConnectionError(f"port {port} closed the connection mid-response")
        return P.decode_response(key, version, body)[1]


def create_topic(port: int, topic: str) -> None:
    resp = call(port, P.ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout_ms": 10000, "validate_only": False})
    code = resp.topics[0].error_code
    if code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
        raise SystemExit(f"create topic {topic} on port {port}: error {code}")


# --- the load generator ---
def replay(port: int, frames: list[bytes], window: int) -> tuple[float, int]:
    """Send every frame with up to ``window`` unanswered; returns (seconds, response bytes)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    slots = threading.Semaphore(window)
    failed = []
    t0 = time.perf_counter()

    def sender():
        try:
            for f in frames:
                slots.acquire()
                sock.sendall(f)
        except OSError as e:  # the reader reports the closed connection
            failed.append(e)
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    buf = memoryview(bytearray(4 << 20))
    got = total = 0
    need = -1   # payload bytes of the current response, -1 = reading its size
    have = 0
    head = bytearray()
    while got < len(frames):
        n = sock.recv_into(buf)
        if not n:
            raise ConnectionError(f"target closed the connection after {got} responses {failed}")
        total += n
        pos = 0
        while pos < n:
            if need < 0:
                take = min(4 - len(head), n - pos)
                head += buf[pos:pos + take]
                pos += take
                if len(head) < 4:
                    continue
                need, have = struct.unpack(">i", head)[0], 0
                head.clear()
            take = min(need - have, n - pos)
            have += take
            pos += take
            if have == need:
                need = -1
                got += 1
                slots.release()
    elapsed = time.perf_counter() - t0
    th.join()
    sock.close()
    return elapsed, total


def _small_requests():
    """The C half (small_requests.pyx), compiled on first use by pyximport: a bench tool, so it is
    not one of the package's extensions."""
    import pyximport  # noqa: PLC0415
    pyximport.install(language_level=3, setup_args={"include_dirs": [ROOT]})
    import small_requests  # noqa: PLC0415
    return small_requests


def replay_small(port: int, frame: bytes, total: int, window: int, connections: int) -> tuple[float, int]:
    """Send ``frame`` ``total`` times over ``connections`` sockets, ``window`` unanswered on each;
    returns (seconds, response bytes)."""
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
    try:
        for s in socks:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
        secs, _, nbytes = _small_requests().drive([s.fileno() for s in socks], frame, total, window)
    finally:
        for s in socks:
            s.close()
    return secs, nbytes


def measure_small(port: int, pid: int, frame: bytes, total: int, window: int, connections: int) -> dict:
    c0 = cpu_seconds(pid)
    secs, nbytes = replay_small(port, frame, total, window, connections)
    return {"secs": secs, "cpu": cpu_seconds(pid) - c0, "bytes": nbytes, "requests": total}


def measure(port: int, pid: int, frames, window: int) -> dict:
    c0 = cpu_seconds(pid)
    secs, nbytes = replay(port, frames, window)
    return {"secs": secs, "cpu": cpu_seconds(pid) - c0, "bytes": nbytes}


# --- the reference servers ---
def _read_exact(sock, view, n) -> bool:
    got = 0
    while got < n:
        k = sock.recv_into(view[got:n])
        if not k:
            return False
        got += k
    return True


def _frames(srv: socket.socket, buf: memoryview):
    """Yield (connection, request size) for every frame of every connection, one at a time."""
    while True:
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while _read_exact(conn, buf, 4):
            size = struct.unpack(">i", buf[:4])[0]
            if not _read_exact(conn, buf, size):
                break
            yield conn, size
        conn.close()


def null_broker(srv: socket.socket, path: str) -> None:
    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    buf = memoryview(bytearray(4 * BATCH))
    reply = struct.pack(">i", 36) + bytes(36)
    for conn, size in _frames(srv, buf):
        os.write(out, buf[:size])
        conn.sendall(reply)


def file_server(srv: socket.socket, path: str, use_sendfile: bool) -> None:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    data = memoryview(bytearray(BATCH))
    pos = 0
    for conn, _ in _frames(srv, memoryview(bytearray(1 << 16))):
        if pos + BATCH > size:
            pos = 0
        conn.sendall(struct.pack(">i", 96 + BATCH) + bytes(96))
        if use_sendfile:
            sent = 0
            while sent < BATCH:
                sent += os.sendfile(conn.fileno(), fd, pos + sent, BATCH - sent)
        else:
            os.preadv(fd, [data], pos)
            conn.sendall(data)
        pos += BATCH


class SmallAnswers:
    """The small-request limit's answers to what its C loop leaves to Python: ApiVersions,
    Metadata (this server as the one broker; any topic asked for exists with ``partitions``
    partitions) and any Produce (every partition appended at offset 0)."""

    def __init__(self, port: int, partitions: int):
        self.port, self.partitions = port, partitions
        self.advertised = P.Advertised(ranges={P.ApiKey.API_VERSIONS: (0, 3), P.ApiKey.METADATA: (0, 12),
                                               P.ApiKey.PRODUCE: (0, 7)})

    def __call__(self, frame: bytes) -> bytes | None:
        header, pos = P.read_request_header(frame)
        key, version = header.api_key, header.api_version
        if not self.advertised.supports(key, version):
            if key == P.ApiKey.API_VERSIONS:
                return b"".join(P.encode_api_versions_error(header.correlation_id, self.advertised))
            raise SystemExit(f"small-request limit: {P.API_NAMES.get(key, key)} v{version} not served")
        codec = P.codec(key, version)
        req = codec.decode_request(frame, pos)
        if key == P.ApiKey.API_VERSIONS:
            resp = self.advertised.api_versions_response()
        elif key == P.ApiKey.METADATA:
            resp = {"brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.port}], "controller_id": 0,
                    "topics": [{"name": t.name, "partitions": [
                        {"partition_index": p, "leader_id": 0, "replica_nodes": [0], "isr_nodes": [0]}
                        for p in range(self.partitions)]} for t in (req.topics or [])]}
        else:
            if req.acks == 0:
                return None
            resp = {"responses": [{"name": t.name, "partition_responses": [
                {"index": p.index, "base_offset": 0, "log_append_time_ms": -1} for p in t.partition_data]}
                for t in req.topic_data]}
        return b"".join(bytes(c) for c in codec.encode_response(header.correlation_id, resp))


def spawn(argv: list[str], env: dict | None = None, cwd: str = ROOT) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, **(env or {})))


def start_reference(kind: str, path: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    p = spawn([sys.executable, os.path.abspath(__file__), "--serve", kind, str(port), path])
    wait_port(port)
    return p, port


if __name__ == "__main__":
    if sys.argv[1:2] != ["--serve"]:
        sys.exit(__doc__)
    kind, port, path = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    server = socket.create_server(("127.0.0.1", port), backlog=128)
    if kind == "small":
        _small_requests().serve(server.fileno(), SmallAnswers(port, int(path)))
    elif kind == "null":
        null_broker(server, path)
    else:
        file_server(server, path, use_sendfile=(kind == "sendfile"))
