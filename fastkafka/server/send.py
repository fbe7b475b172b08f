"""A response on its way out: bytes chunks and file regions, written in order, resumable.

A response is a list whose items are bytes-like objects or :class:`FileRegion`\\ s. Runs of
bytes go out with one ``sendmsg`` (scatter/gather, no join); a region goes out with
:func:`fastkafka._core.transfer.sendfile_step`, so fetched records move from the page cache to
the socket without entering Python (DESIGN §3). A non-blocking socket may take only part of
it: :meth:`Send.write_to` remembers where it stopped and is called again once the socket is
writable.

Example::

    >>> import socket
    >>> a, b = socket.socketpair()
    >>> s = Send([b"\\x00\\x00\\x00\\x02", b"hi"])
    >>> s.write_to(a), b.recv(16)
    (True, b'\\x00\\x00\\x00\\x02hi')
"""
from __future__ import annotations

import os
import socket
from typing import Callable, Sequence

from fastkafka._core.transfer import sendfile_step

__all__ = ["FileRegion", "Send", "response_size"]

# Linux's IOV_MAX is 1024; a response with more chunks is sent over several calls.
_MAX_IOV = 512
# TLS: what one write encrypts at most (a few 16 KiB records; one pread of a file region)
_TLS_PIECE = 256 * 1024


class FileRegion:
    """``length`` bytes of the open file ``fd`` from ``position``, sent with sendfile.

    ``owner`` is kept referenced until the region is sent (a log FetchRegion keeps its segment
    file, and so ``fd``, open while it is alive). ``release`` (optional) is called exactly once
    when the region has been sent or the connection dropped.
    """

    __slots__ = ("fd", "position", "length", "release", "owner")

    def __init__(self, fd: int, position: int, length: int, release: Callable[[], None] | None = None,
                 owner: object = None):
        self.fd = fd
        self.position = position
        self.length = length
        self.release = release
        self.owner = owner

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, length={self.length})"

    def done(self) -> None:
        self.owner = None
        release, self.release = self.release, None
        if release is not None:
            release()


def response_size(chunks: Sequence) -> int:
    """Total bytes of a chunk list (regions count by their length)."""
    return sum(len(c) for c in chunks)


class Send:
    """Progress of one response through a non-blocking socket. Not thread-safe: one processor owns it."""

    __slots__ = ("chunks", "index", "offset")

    def __init__(self, chunks: Sequence):
        self.chunks = chunks
        self.index = 0   # first chunk not fully sent
        self.offset = 0  # bytes of chunks[index] already sent

    def write_to(self, sock: socket.socket) -> bool:
        """Write as much as the socket takes; True when everything is sent.

        Raises OSError (peer gone) and EOFError (a region's file shrank under us).
        """
        chunks = self.chunks
        n_chunks = len(chunks)
        while self.index < n_chunks:
            chunk = chunks[self.index]
            if type(chunk) is FileRegion:
                remaining = chunk.length - self.offset
                if remaining:
                    sent = sendfile_step(sock.fileno(), chunk.fd, chunk.position + self.offset, remaining)
                    if sent == 0:
                        return False
                    self.offset += sent
                    if sent < remaining:
                        continue
                self._region_sent(chunk)
                continue
            # gather the run of bytes chunks up to the next region
            end = self.index
            bufs: list[bytes | bytearray | memoryview] = []
            while end < n_chunks and type(chunks[end]) is not FileRegion and len(bufs) < _MAX_IOV:
                bufs.append(chunks[end])
                end += 1
            if self.offset:
                bufs[0] = memoryview(bufs[0])[self.offset:]
            try:
                sent = sock.sendmsg(bufs)
            except (BlockingIOError, InterruptedError):
                return False
            # advance over what went out
            i = self.index
            off = self.offset
            while sent:
                left = len(chunks[i]) - off
                if sent >= left:
                    sent -= left
                    i += 1
                    off = 0
                else:
                    off += sent
                    sent = 0
            while i < end and len(chunks[i]) == off:  # zero-length chunks
                i += 1
                off = 0
            self.index, self.offset = i, off
            if i < end:
                return False  # the socket took only part of the run: it is full
        return True

    def _region_sent(self, region: FileRegion) -> None:
        region.done()
        self.index += 1
        self.offset = 0

    def write_tls_to(self, tls) -> bool:
        """:meth:`write_to` through a :class:`~fastkafka.server.tls_transport.TlsTransport`: TLS
        has neither scatter/gather nor sendfile, so runs of small chunks are joined and file
        regions read (``pread``) before encryption — the copy DESIGN §3 expects for TLS. A piece
        is encrypted only once the ciphertext of the one before has left, so a slow reader holds
        at most one piece's ciphertext here."""
        while tls.flush():
            piece = self._next_tls_piece()
            if piece is None:
                return True
            tls.write(piece)
        return False

    def _next_tls_piece(self) -> memoryview | None:
        chunks = self.chunks
        n_chunks = len(chunks)
        while self.index < n_chunks:
            chunk = chunks[self.index]
            if type(chunk) is FileRegion:
                remaining = chunk.length - self.offset
                if not remaining:
                    self._region_sent(chunk)
                    continue
                data = os.pread(chunk.fd, min(remaining, _TLS_PIECE), chunk.position + self.offset)
                if not data:
                    raise EOFError(f"{chunk!r} ended early")
                self.offset += len(data)
                return memoryview(data)
            if len(chunk) >= _TLS_PIECE:
                self.index += 1
                return memoryview(chunk)
            end, size = self.index, 0   # join small chunks into one TLS write
            while end < n_chunks and type(chunks[end]) is not FileRegion and size < _TLS_PIECE:
                size += len(chunks[end])
                end += 1
            piece = b"".join(chunks[self.index:end])
            self.index = end
            if piece:
                return memoryview(piece)
        return None

    def abandon(self) -> None:
        """The connection is gone: release every region not yet released."""
        for chunk in self.chunks[self.index:]:
            if type(chunk) is FileRegion:
                chunk.done()
        self.index = len(self.chunks)
