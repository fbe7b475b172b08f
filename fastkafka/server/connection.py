"""One client connection as a processor sees it: incoming frames, mute state, the response going out.

Reading: small reads land in a 64 KiB scratch buffer and are cut into frames; once a frame's
size is known and the frame is larger than what is buffered, the rest is received straight
into that frame's own ``bytearray`` (``recv_into``), so a 1 MiB produce request is never copied
in Python. Each frame gets its own writable buffer because the produce path patches offsets in
place inside it (DESIGN §3) and the handler may still hold it after the next read.

Muting: while a request is in flight the connection neither reads nor starts the next
buffered frame, so responses leave in request order even when the client pipelines.

Not thread-safe: only the owning processor thread touches a connection.
"""
from __future__ import annotations

import socket
import time
from collections import deque

from .send import Send

__all__ = ["Connection", "FrameError"]

_SCRATCH = 64 * 1024


class FrameError(Exception):
    """The input cannot be cut into frames (negative or oversized length): drop the connection."""


class Connection:
    __slots__ = ("id", "sock", "fd", "peer", "listener", "max_frame", "frames", "_scratch", "_scratch_mv",
                 "_head", "_partial", "_partial_fill", "muted", "send", "closed", "last_active", "events")

    def __init__(self, conn_id: str, sock: socket.socket, peer, listener: str, max_frame: int):
        self.id = conn_id
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.listener = listener
        self.max_frame = max_frame
        self.frames: deque[bytearray] = deque()   # complete frames not yet dispatched
        self._scratch = bytearray(_SCRATCH)
        self._scratch_mv = memoryview(self._scratch)
        self._head = 0                             # bytes of a split size prefix at scratch[0:]
        self._partial: bytearray | None = None     # body of the frame being received
        self._partial_fill = 0
        self.muted = False      # a request of this connection is being handled
        self.send: Send | None = None
        self.closed = False
        self.last_active = time.monotonic()
        self.events = 0         # selector interest currently registered

    # --- reading ---
    def read(self) -> bool:
        """Receive what the socket has; False on EOF. Raises FrameError, OSError."""
        self.last_active = time.monotonic()
        if self._partial is not None:
            # large frame in progress: receive straight into it
            n = self.sock.recv_into(memoryview(self._partial)[self._partial_fill:])
            if n == 0:
                return False
            self._partial_fill += n
            if self._partial_fill == len(self._partial):
                self.frames.append(self._partial)
                self._partial = None
            return True
        n = self.sock.recv_into(self._scratch_mv[self._head:])
        if n == 0:
            return False
        self._cut(self._head + n)
        return True

    def _cut(self, n: int) -> None:
        """Cut the first ``n`` scratch bytes into frames; keep a split size prefix for the next read."""
        buf = self._scratch
        pos = 0
        self._head = 0
        while n - pos >= 4:
            size = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
            if size < 0 or size > self.max_frame:
                raise FrameError(f"frame size {size} outside 0..{self.max_frame}")
            start = pos + 4
            if n - start >= size:
                self.frames.append(bytearray(buf[start:start + size]))
                pos = start + size
                continue
            body = bytearray(size)
            have = n - start
            body[:have] = buf[start:n]
            self._partial, self._partial_fill = body, have
            return
        if pos < n:  # 1-3 bytes of the next size prefix: move them to the front
            self._head = n - pos
            buf[:self._head] = buf[pos:n]

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
        self._partial = None
        try:
            self.sock.close()
        except OSError:
            pass
