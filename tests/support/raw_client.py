"""A minimal blocking Kafka client for broker tests: requests over one socket, pipelined if you
like, responses read back in order and decoded with our protocol codecs."""
import socket
import struct
import time

from fastkafka import protocol as P


def recv_exact(sock, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by broker")
        buf += chunk
    return bytes(buf)


class RawClient:
    def __init__(self, port: int, client_id: str = "raw-test", timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.client_id = client_id
        self.corr = 0
        self.sent = []      # (api key, version, correlation id) of requests awaiting a response

    def send(self, key, version, body, expect_response: bool = True) -> int:
        self.corr += 1
        self.sock.sendall(P.encode_request(key, version, self.corr, body, self.client_id))
        if expect_response:
            self.sent.append((key, version, self.corr))
        return self.corr

    def recv(self):
        key, version, corr = self.sent.pop(0)
        (n,) = struct.unpack(">i", recv_exact(self.sock, 4))
        got_corr, resp = P.decode_response(key, version, recv_exact(self.sock, n))
        assert got_corr == corr
        return resp

    def call(self, key, version, body):
        self.send(key, version, body)
        return self.recv()

    def timed_call(self, key, version, body):
        """(response, seconds until it arrived)."""
        start = time.monotonic()
        resp = self.call(key, version, body)
        return resp, time.monotonic() - start

    def closed(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
