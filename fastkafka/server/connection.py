"""One client connection as a processor sees it: incoming frames, mute state, the response going out.

Reading: bytes are received into a per-connection scratch buffer (no ``bytes`` object per
``recv``) and fed to the protocol's :class:`~fastkafka.protocol.FrameDecoder`, which hands
back each complete frame as a writable ``memoryview`` that stays valid after later reads —
the produce path patches offsets in place inside it (DESIGN §3), possibly on another thread.

Muting: while a request is in flight the connection neither reads nor starts the next
buffered frame, so responses leave in request order even when the client pipelines.

Not thread-safe: only the owning processor thread touches a connection.
"""
from __future__ import annotations

import socket
import time
from collections import deque

from fastkafka.protocol import FrameDecoder, FramingError

from .send import Send

__all__ = ["Connection", "FrameError"]

# Large enough that a 1 MiB produce request arrives in a few reads; the decoder copies each
# read once into the frame's buffer.
_SCRATCH = 256 * 1024

FrameError = FramingError


class Connection:
    __slots__ = ("id", "sock", "fd", "peer", "listener", "frames", "_decoder", "_scratch",
                 "muted", "send", "closed", "last_active", "events")

    def __init__(self, conn_id: str, sock: socket.socket, peer, listener: str, max_frame: int):
        self.id = conn_id
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.listener = listener
        self.frames: deque[memoryview] = deque()   # complete frames not yet dispatched
        self._decoder = FrameDecoder(max_frame)
        self._scratch = memoryview(bytearray(_SCRATCH))
        self.muted = False      # a request of this connection is being handled
        self.send: Send | None = None
        self.closed = False
        self.last_active = time.monotonic()
        self.events = 0         # selector interest currently registered

    # --- reading ---
    def read(self) -> bool:
        """Receive what the socket has; False on EOF. Raises FrameError, OSError."""
        self.last_active = time.monotonic()
        n = self.sock.recv_into(self._scratch)
        if n == 0:
            return False
        self.frames.extend(self._decoder.feed(self._scratch[:n]))
        return True

    # --- writing ---
    def write(self) -> bool:
        """Continue the current response; True once it is fully sent."""
        self.last_active = time.monotonic()
        done = self.send.write_to(self.sock)
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
        try:
            self.sock.close()
        except OSError:
            pass
