"""One TCP connection to one broker: framing, correlation ids, ApiVersions negotiation, pipelining.

Blocking sockets on purpose: a client thread owns a connection while it talks (the producer's
sender, a consumer's fetcher), so there is no event loop to pay for. Requests may be pipelined
— :meth:`BrokerConnection.send` several, then :meth:`BrokerConnection.receive` the answers in
order — which is how the producer keeps ``max.in.flight.requests.per.connection`` busy.

On connect the client asks ``ApiVersions`` (v0: every broker since 0.10 answers it) and then
uses, per API, the highest version both sides implement (:data:`fastkafka.protocol.SUPPORTED`
on our side). A response is read with ``recv_into`` into one buffer of the frame's size, and
record fields decode as memoryviews of that buffer, so fetched batches are never copied in
Python.

Re-authentication (KIP-368): when the broker answers SaslAuthenticate (v1+) with a
``session_lifetime_ms``, the connection authenticates again on the same socket before that
lifetime ends -- at a random point between 85% and 95% of it, as Kafka's clients do, so that
clients started together do not all re-authenticate at once -- else the broker (with
``connections.max.reauth.ms``) closes it at its next request. It happens in :meth:`send`, never
with a request in flight: the answers of requests still in flight are read first and kept for
:meth:`receive`, which hands them out in order as if nothing had happened. An idle connection
re-authenticates at its next send (the broker lets SASL requests through a lapsed session).

Not thread-safe: one thread at a time (callers hold a lock or own the connection).

Example::

    conn = BrokerConnection("127.0.0.1", 9092)
    conn.connect()
    meta = conn.request(ApiKey.METADATA, {"topics": None})
    conn.close()
"""
from __future__ import annotations

import collections
import random
import socket
import ssl
import struct
import time

from fastkafka import errors
from fastkafka import protocol as P
from fastkafka._core.transfer import frame_buffer
from fastkafka.protocol import ApiKey

from .security import ClientSecurity

__all__ = ["BrokerConnection", "ConnectionError_", "SslAuthenticationError", "negotiate"]

_SIZE = struct.Struct(">i")
# Responses larger than this are refused: a desynchronised stream reads garbage as a size.
MAX_RESPONSE_BYTES = 1 << 30


class ConnectionError_(errors.NetworkException):
    """The broker could not be reached or the connection broke (retriable, code 13)."""


class SslAuthenticationError(errors.KafkaError):
    """The broker's certificate was refused (Kafka's SslAuthenticationException: not retriable)."""


# Versions past which a request's shape changes from the one this client's code builds (a single
# key or member or group becomes a batch, names become ids): the client stays below them until
# its callers speak the batched form. The protocol layer decodes them all (the broker's side).
CLIENT_MAX_VERSIONS = {
    ApiKey.FIND_COORDINATOR: 3,     # v4: coordinator_keys instead of key (KIP-699)
    ApiKey.LEAVE_GROUP: 2,          # v3: a members array instead of member_id (KIP-345)
    ApiKey.OFFSET_FETCH: 7,         # v8: a groups array instead of group_id (KIP-709)
    ApiKey.DELETE_TOPICS: 5,        # v6: topics by name or id instead of topic_names (KIP-516)
    ApiKey.FETCH: 12,               # v13: topics by id instead of name (KIP-516)
}


def negotiate(broker_ranges: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Per API key, the highest version both we and the broker implement.

    >>> negotiate({0: (0, 11), 3: (0, 4), 99: (0, 1)})[0], negotiate({3: (0, 4)})[3]
    (10, 4)
    """
    out = {}
    for key, (lo, hi) in broker_ranges.items():
        ours = P.SUPPORTED.get(key)
        if ours is None:
            continue
        v = min(hi, ours[1], CLIENT_MAX_VERSIONS.get(key, ours[1]))
        if v >= max(lo, ours[0]):
            out[key] = v
    return out


class BrokerConnection:
    """A connection to ``host:port`` (``node_id`` as the cluster knows it, -1 for bootstrap)."""

    def __init__(self, host: str, port: int, *, node_id: int = -1, client_id: str = "fastkafka",
                 request_timeout_ms: int = 30_000, connect_timeout_ms: int = 10_000,
                 security: ClientSecurity | None = None):
        self.host, self.port, self.node_id = host, port, node_id
        self.security = security
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.connect_timeout = connect_timeout_ms / 1000
        self.versions: dict[int, int] = {}                 # negotiated version per API
        self.ranges: dict[int, tuple[int, int]] = {}       # the broker's (min, max) per API
        self._sock: socket.socket | None = None
        self._corr = 0
        self._in_flight: collections.deque = collections.deque()  # (corr, api, version)
        self._ready: collections.deque = collections.deque()      # answers read early (re-authentication)
        self.reauthenticate_at = 0.0      # time.monotonic() of the next re-authentication (0: never)
        self.reauthentications = 0
        self._reauthenticating = False

    def __repr__(self):
        return f"BrokerConnection({self.host}:{self.port}, node={self.node_id})"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def in_flight(self) -> int:
        """Requests sent whose answers the caller has not received yet."""
        return len(self._in_flight) + len(self._ready)

    def connect(self) -> "BrokerConnection":
        """Open the socket and negotiate versions. Raises :class:`ConnectionError_`."""
        if self._sock is not None:
            return self
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        except OSError as e:
            raise ConnectionError_(f"cannot connect to {self.host}:{self.port}: {e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Large buffers let pipelined produce requests and big fetch responses stream.
        for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
            except OSError:
                pass
        sock.settimeout(self.request_timeout)
        if self.security is not None:
            try:
                sock = self.security.wrap(sock, self.host)
            except ssl.SSLCertVerificationError as e:
                sock.close()
                raise SslAuthenticationError(f"TLS handshake with {self.host}:{self.port} failed: {e}") from None
            except OSError as e:
                sock.close()
                raise ConnectionError_(f"TLS handshake with {self.host}:{self.port} failed: {e}") from None
        self._sock = sock
        try:
            self.versions = {ApiKey.API_VERSIONS: 0}
            resp = self.request(ApiKey.API_VERSIONS, {})
            if resp.error_code:
                raise errors.for_code(resp.error_code)("ApiVersions failed")
            self.ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            self.versions = negotiate(self.ranges)
            if self.security is not None:
                self._authenticate()
        except BaseException:
            self.close()
            raise
        return self

    def _authenticate(self) -> None:
        started = time.monotonic()
        lifetime_ms = self.security.authenticate(self)
        # measured from before the exchange: the broker's clock for the session starts later
        self.reauthenticate_at = (started + lifetime_ms / 1000.0 * random.uniform(0.85, 0.95)
                                  if lifetime_ms > 0 else 0.0)

    def _reauthenticate(self) -> None:
        """Authenticate again with nothing in flight (their answers are kept for receive())."""
        self.reauthenticate_at = 0.0        # (the exchange's own requests come through send())
        while self._in_flight:
            self._ready.append(self._receive_one())
        self._reauthenticating = True
        try:
            self._authenticate()
        except BaseException:
            self.close()
            raise
        finally:
            self._reauthenticating = False
        self.reauthentications += 1

    def close(self) -> None:
        sock, self._sock = self._sock, None
        self._in_flight.clear()
        self._ready.clear()
        self.reauthenticate_at = 0.0
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def version(self, api_key: int, at_least: int = 0) -> int:
        """The negotiated version of ``api_key``; UnsupportedVersionError if the broker lacks it."""
        v = self.versions.get(api_key)
        if v is None or v < at_least:
            raise errors.UnsupportedVersionError(
                f"broker {self.host}:{self.port} does not offer {P.API_NAMES.get(api_key, api_key)}"
                + (f" v{at_least}+" if at_least else ""))
        return v

    def supports(self, api_key: int) -> bool:
        return api_key in self.versions

    def send(self, api_key: int, obj, version: int | None = None, expect_response: bool = True) -> int:
        """Write one request; returns its correlation id. ``expect_response=False`` is for
        Produce with acks=0, which the broker never answers."""
        if self._sock is None:
            self.connect()
        elif self.reauthenticate_at and time.monotonic() >= self.reauthenticate_at:
            self._reauthenticate()
        v = self.version(api_key) if version is None else version
        self._corr = (self._corr + 1) & 0x7FFFFFFF
        frame = P.encode_request(api_key, v, self._corr, obj, self.client_id)
        try:
            self._sock.sendall(frame)
        except OSError as e:
            self.close()
            raise ConnectionError_(f"send to {self.host}:{self.port} failed: {e}") from None
        if expect_response:
            self._in_flight.append((self._corr, api_key, v))
        return self._corr

    def receive(self):
        """The oldest in-flight request's response, decoded."""
        if self._ready:
            return self._ready.popleft()
        return self._receive_one()

    def _receive_one(self):
        corr, api_key, v = self._in_flight[0]
        payload = self._read_frame()
        self._in_flight.popleft()
        got, resp = P.decode_response(api_key, v, payload)
        if got != corr:
            self.close()
            raise ConnectionError_(f"correlation id {got} from {self.host}:{self.port}, "
                                   f"expected {corr}")
        return resp

    def request(self, api_key: int, obj, version: int | None = None):
        """Send and wait for the answer (earlier pipelined answers must be received first)."""
        self.send(api_key, obj, version)
        while len(self._in_flight) > 1:
            self._receive_one()  # only when a caller abandoned pipelined requests; drop them
        if not self._reauthenticating:
            self._ready.clear()  # (those too; while re-authenticating they are the caller's)
        return self._receive_one()

    def _read_frame(self) -> memoryview:
        size = _SIZE.unpack(self._recv_exact(4))[0]
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            self.close()
            raise ConnectionError_(f"bad response size {size} from {self.host}:{self.port}")
        return memoryview(self._recv_exact(size))

    def _recv_exact(self, n: int) -> bytearray:
        # Not zero-filled: a 16 MiB fetch response would otherwise be written twice (memset, then
        # the socket), ~15 % of a Spark scan task's Python CPU.
        buf = frame_buffer(n)
        view = memoryview(buf)
        got = 0
        sock = self._sock
        if sock is None:
            raise ConnectionError_(f"not connected to {self.host}:{self.port}")
        try:
            while got < n:
                r = sock.recv_into(view[got:], n - got)
                if r == 0:
                    raise OSError("connection closed by the broker")
                got += r
        except OSError as e:  # socket.timeout is an OSError too
            self.close()
            raise ConnectionError_(f"receive from {self.host}:{self.port} failed: {e}") from None
        return buf
