"""One client connection as a processor sees it: incoming frames, mute state, the response going out.

Reading: bytes are received into the processor's scratch buffer (no ``bytes`` object per
``recv``; one buffer per processor thread, which reads one connection at a time, so an idle
connection costs a few hundred bytes rather than the buffer) and fed to the protocol's
:class:`~fastkafka.protocol.FrameDecoder`, which copies what it keeps and hands
back each complete frame as a writable ``memoryview`` that stays valid after later reads —
the produce path patches offsets in place inside it (DESIGN §3), possibly on another thread.
A large frame (a produce request) is instead received straight into a buffer of its own size:
going through the scratch buffer and the decoder cost one extra memcpy of every produced byte,
done holding the GIL (a quarter of the network thread's GIL time at 1 MiB requests). To keep
finding frame starts at the beginning of a read, a read never goes past the end of the frame the
decoder is in the middle of.

TLS: the connection's :class:`~fastkafka.server.tls_transport.TlsTransport` stands in for the
socket (``recv_into``, and ``write``/``flush`` for :class:`Send`); ``sock`` stays the plain socket
the selector watches.

Muting: while a request is in flight the connection neither reads nor starts the next
buffered frame, so responses leave in request order even when the client pipelines.

Not thread-safe: only the owning processor thread touches a connection.
"""
from __future__ import annotations

import socket
import struct
import time
from collections import deque
from typing import TYPE_CHECKING

from fastkafka._core.transfer import frame_buffer
from fastkafka.protocol import FrameDecoder, FramingError

from .send import Send
from .tls_transport import TlsTransport

if TYPE_CHECKING:
    from .listener_security import Session

__all__ = ["Connection", "FrameError", "SCRATCH_BYTES"]

# The processor's scratch buffer: large enough that a 1 MiB produce request arrives in a few
# reads; the decoder copies each read once into the frame's buffer.
SCRATCH_BYTES = 256 * 1024
# Frames at least this large that do not fit the read that starts them are received directly.
_DIRECT = 64 * 1024
_SIZE = struct.Struct(">i")

FrameError = FramingError


class Connection:
    __slots__ = ("id", "sock", "fd", "peer", "listener", "frames", "_decoder",
                 "muted", "send", "closed", "last_active", "events", "_max_frame", "_body", "_have",
                 "inline_response", "tls", "handshaking", "session", "close_after_send", "unmute_at",
                 "response_sent", "waiting", "_recv_into", "network_s")

    def __init__(self, conn_id: str, sock: socket.socket, peer, listener: str, max_frame: int,
                 tls: TlsTransport | None = None):
        self.id = conn_id
        self.sock = sock            # the plain socket, TLS or not: what the selector watches
        self.fd = sock.fileno()
        self.peer = peer
        self.listener = listener
        self.tls = tls
        self._recv_into = sock.recv_into if tls is None else tls.recv_into
        self.handshaking = tls is not None   # the TLS handshake runs before any frame is read
        self.session: Session | None = None     # set once the connection is ready
        self.close_after_send: float | None = None  # seconds: the response going out is the last
        self.unmute_at: float | None = None  # monotonic time a throttled connection reads again
        self.frames: deque[memoryview] = deque()   # complete frames not yet dispatched
        self._decoder = FrameDecoder(max_frame)
        self.muted = False      # a request of this connection is being handled
        self.send: Send | None = None
        self.closed = False
        self.last_active = time.monotonic()
        self.events = 0         # selector interest currently registered
        self._max_frame = max_frame
        self._body: memoryview | None = None  # a large frame being received directly
        self._have = 0                         # bytes of _body received so far
        self.inline_response = None            # set by a handler that answered on the processor thread
        # metrics on: each called with the time the response's last byte left (several when
        # responses are gathered into one write); appended by handler threads, swapped by the processor
        self.response_sent: list = []
        self.waiting = None   # a completion held back until gathered responses are out (Processor)
        # while client quotas apply: the processor's seconds on this connection's bytes (reads,
        # writes, TLS handshake) not yet charged to a request quota (Kafka's networkThreadTimeNanos)
        self.network_s = 0.0

    # --- reading ---
    def read(self, scratch: memoryview) -> bool:
        """Receive what the socket has through ``scratch`` (the processor's buffer, free again
        when this returns); False on EOF. Raises FrameError, OSError.

        TLS holds what it received beyond the frame the decoder is in (``buffered``), out of the
        selector's sight: it is read on until a frame is complete, and the rest is left there for
        the processor to read once that frame is answered (``Processor._read_buffered``). Reading
        it all would take in whatever a fast client sends, frame after frame, where over
        PLAINTEXT TCP holds it back. ``last_active`` is when the read began."""
        self.last_active = time.monotonic()
        ok = self._read_once(scratch)
        tls = self.tls
        if tls is not None:
            try:
                while ok and not self.frames and tls.buffered():
                    ok = self._read_once(scratch)
            except BlockingIOError:     # what is left is part of a record whose rest is on its way
                pass
        return ok

    def _read_once(self, scratch: memoryview) -> bool:
        body = self._body
        if body is not None:
            n = self._recv_into(body[self._have:])
            if n == 0:
                return False
            self._have += n
            if self._have == len(body):
                self.frames.append(body)
                self._body = None
            return True
        decoder = self._decoder
        pending = decoder.pending
        room = len(scratch)
        n = self._recv_into(scratch, min(decoder.wanted(), room) if pending else room)
        if n == 0:
            return False
        if not pending and n >= 4:
            size = _SIZE.unpack_from(scratch)[0]
            # out-of-range sizes go to the decoder, which rejects them
            if _DIRECT <= size <= self._max_frame and size + 4 > n:
                body = memoryview(frame_buffer(size))
                body[:n - 4] = scratch[4:n]
                self._body, self._have = body, n - 4
                return True
        self.frames.extend(decoder.feed(scratch[:n]))
        return True

    # --- writing ---
    def write(self) -> bool:
        """Continue the current response; True once it is fully sent. ``last_active`` is when
        the write began."""
        self.last_active = time.monotonic()
        send = self.send
        assert send is not None, "the processor writes a connection only while a response is pending"
        done = send.write_to(self.sock) if self.tls is None else send.write_tls_to(self.tls)
        if done:
            self.send = None
        return done

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.send is not None:
            self.send.abandon()
            self.send = None
        self.frames.clear()
        self._body = None
        try:
            if self.tls is not None:
                self.tls.close()    # close_notify, then the socket
            else:
                self.sock.close()
        except OSError:
            pass
