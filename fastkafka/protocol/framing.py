"""Incremental decoding of size-prefixed frames: ``int32 size`` then ``size`` bytes.

Frames come back as ``memoryview`` slices of the receive buffer, not copies. To keep those
views valid, a buffer that has handed out a frame is never written again: the unconsumed tail
(at most one partial frame) moves to a fresh buffer. A negative size or one above
``socket.request.max.bytes`` cannot be skipped safely, so it raises :class:`FramingError` and
the server drops the connection.

Example::

    >>> d = FrameDecoder(max_size=1024)
    >>> [bytes(f) for f in d.feed(b"\\x00\\x00\\x00\\x02hi\\x00\\x00")]
    [b'hi']
    >>> [bytes(f) for f in d.feed(b"\\x00\\x01!")], d.pending
    ([b'!'], 0)
"""
from __future__ import annotations

import struct

from .types import FramingError

__all__ = ["FrameDecoder", "FramingError", "DEFAULT_MAX_REQUEST_BYTES", "frame"]

DEFAULT_MAX_REQUEST_BYTES = 104857600      # socket.request.max.bytes
_SIZE = struct.Struct(">i")


def frame(payload) -> bytes:
    """Prefix ``payload`` with its int32 size."""
    return _SIZE.pack(len(payload)) + bytes(payload)


class FrameDecoder:
    """Feed it bytes as they arrive; it returns each complete frame's payload. Not thread-safe
    (one per connection, used by its processor thread)."""

    __slots__ = ("max_size", "_buf", "_pos", "_need")

    def __init__(self, max_size: int = DEFAULT_MAX_REQUEST_BYTES):
        self.max_size = max_size
        self._buf = bytearray()
        self._pos = 0            # start of the first unconsumed byte in _buf
        self._need = -1          # payload size of the frame being read, -1 = size not yet known

    @property
    def pending(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buf) - self._pos

    def wanted(self) -> int:
        """Bytes still missing before the next frame completes (a good ``recv`` size hint)."""
        have = len(self._buf) - self._pos
        if self._need < 0:
            return 4 - have if have < 4 else _SIZE.unpack_from(self._buf, self._pos)[0] + 4 - have
        return self._need + 4 - have

    def feed(self, data) -> list[memoryview]:
        """Append ``data``; return the payloads (without size prefix) of frames now complete."""
        buf = self._buf
        buf += data
        frames = []
        pos, end = self._pos, len(buf)
        while True:
            if self._need < 0:
                if end - pos < 4:
                    break
                size = _SIZE.unpack_from(buf, pos)[0]
                if size < 0 or size > self.max_size:
                    self._buf, self._pos = bytearray(), 0
                    raise FramingError(f"frame size {size} outside 0..{self.max_size} "
                                       "(socket.request.max.bytes)")
                self._need = size
            if end - pos - 4 < self._need:
                break
            start = pos + 4
            pos = start + self._need
            self._need = -1
            frames.append(memoryview(buf)[start:pos])
        if frames:
            # Views into buf are out: never resize it again; carry the tail over.
            self._buf, self._pos = bytearray(buf[pos:]), 0
        else:
            self._pos = pos
        return frames
