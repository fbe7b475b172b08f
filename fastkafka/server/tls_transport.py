"""The TLS side of a broker connection: OpenSSL over memory BIOs, fed from a plain socket.

An ``ssl.SSLSocket`` lets OpenSSL read the socket itself, and its socket BIO (Python never sets
read-ahead) makes two ``recv`` calls per TLS record, header then body, handing back one record
per read. librdkafka writes a record per message value and one per record header, so a produce
of 1000-byte values cost four syscalls and a processor-loop trip per KiB (bench/RESULTS.md,
"TLS over memory BIOs"). Here the connection receives up to 256 KiB of ciphertext in one
``recv``, writes it into the incoming BIO, and decrypts record after record in one call until
the caller's buffer is full or the ciphertext runs out: in C where ``_core.tls_read`` can borrow
the connection's ``SSL`` (one ``SSL_read`` per record, not one Python call), else through
``SSLObject.read``. Writes encrypt into the outgoing BIO and leave in one ``send``.

Contract, all non-blocking, used only by the processor thread owning the connection:

* :meth:`TlsTransport.handshake` advances the handshake: 0 once done, else the selector events
  (``EVENT_READ``/``EVENT_WRITE``) to wait for; raises ``OSError`` (``ssl.SSLError`` included)
  on garbage or a peer that went away.
* :meth:`TlsTransport.recv_into` is ``socket.recv_into`` for plaintext: 0 at end of stream
  (TCP EOF or the peer's close_notify), ``BlockingIOError`` when nothing is decryptable yet.
  :meth:`TlsTransport.buffered` says whether ciphertext or plaintext is held here, out of the
  selector's sight: the reader keeps reading while it is true.
* :meth:`TlsTransport.write` encrypts all it is given; :meth:`TlsTransport.flush` sends what is
  encrypted, True once nothing is left (else wait for writability).
* :meth:`TlsTransport.close` sends close_notify (best effort, never waits) and closes the socket.

Example (the client a thread on the other end of a socketpair)::

    >>> import selectors, socket, subprocess, tempfile, threading
    >>> tmpdir = tempfile.TemporaryDirectory(); d = tmpdir.name
    >>> _ = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=x", "-days",
    ...                     "1", "-keyout", f"{d}/key", "-out", f"{d}/cert"], capture_output=True, check=True)
    >>> server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); server.load_cert_chain(f"{d}/cert", f"{d}/key")
    >>> client = ssl.create_default_context(cafile=f"{d}/cert"); client.check_hostname = False
    >>> ours, theirs = socket.socketpair(); ours.setblocking(False)
    >>> def peer():   # says hi, then waits for our close_notify
    ...     (tls := client.wrap_socket(theirs)).sendall(b"hi"); tls.recv(1)
    >>> peer = threading.Thread(target=peer); peer.start()
    >>> t = TlsTransport(ours, server, memoryview(bytearray(RAW_BYTES)))
    >>> sel = selectors.DefaultSelector(); key = sel.register(ours, selectors.EVENT_READ)
    >>> while want := t.handshake():
    ...     key = sel.modify(ours, want); events = sel.select(5)
    >>> key = sel.modify(ours, selectors.EVENT_READ); events = sel.select(5)
    >>> buf = bytearray(16); bytes(buf[:t.recv_into(buf)])
    b'hi'
    >>> sel.close(); t.close(); peer.join(); tmpdir.cleanup()
"""
from __future__ import annotations

import selectors
import socket
import ssl

from typing import TYPE_CHECKING, Callable, cast

if TYPE_CHECKING:
    from fastkafka._core.tls_read import TlsReader

reader_for: Callable[[ssl.SSLObject, int], TlsReader | None] | None
try:
    from fastkafka._core.tls_read import reader_for
except ImportError:     # built without OpenSSL's headers, or its libssl is not where it was built
    reader_for = None

__all__ = ["RAW_BYTES", "TlsTransport"]

# Ciphertext received per recv: a few hundred records of a small-record client in one syscall.
RAW_BYTES = 256 * 1024


class TlsTransport:
    """TLS server side of one accepted, non-blocking socket. Not thread-safe.

    ``raw`` is a buffer the ciphertext is received through before it is copied into the BIO;
    the processor shares one among its connections (it serves one at a time), so an idle TLS
    connection costs OpenSSL's state, not a receive buffer.
    """

    __slots__ = ("sock", "_obj", "_in", "_out", "_unsent", "_raw", "_done", "_ended", "_reader")

    def __init__(self, sock: socket.socket, context: ssl.SSLContext, raw: memoryview):
        self.sock = sock
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = context.wrap_bio(self._in, self._out, server_side=True)
        self._reader = reader_for(self._obj, sock.fileno()) if reader_for is not None else None
        self._unsent: memoryview | None = None   # ciphertext the socket has not taken yet
        self._raw = raw
        self._done = False                       # the handshake has completed
        # the stream ended (close_notify or TCP EOF) after bytes the last read returned: no
        # readable event will come for it, so buffered() says so and the next read gives 0
        self._ended = False

    # --- handshake ---
    def handshake(self) -> int:
        """Advance the handshake; 0 once complete, else the selector events to wait for."""
        while True:
            if not self.flush():
                return selectors.EVENT_WRITE
            if self._done:
                return 0
            try:
                self._obj.do_handshake()
                self._done = True       # its last flight (and TLS 1.3 session tickets) still to flush
            except ssl.SSLWantReadError:
                if not self.flush():
                    return selectors.EVENT_WRITE
                try:
                    if not self._fill():
                        raise ConnectionAbortedError("the peer closed during the TLS handshake")
                except BlockingIOError:
                    return selectors.EVENT_READ

    @property
    def reads_in_c(self) -> bool:
        """True when records are decrypted by ``_core.tls_read``'s loop, not ``SSLObject.read``."""
        return self._reader is not None

    def getpeercert(self):
        """The client's certificate as ``ssl.SSLSocket.getpeercert`` gives it (None if it sent none)."""
        return self._obj.getpeercert()

    # --- reading ---
    def recv_into(self, buf, nbytes: int = 0) -> int:
        """Decrypt up to ``nbytes`` (all of ``buf`` when 0) into ``buf``, receiving ciphertext as
        needed; 0 at end of stream; BlockingIOError when nothing could be decrypted."""
        if self._ended:
            return 0
        reader = self._reader
        if reader is not None:
            got = reader.read_into(buf, nbytes, self._raw)
            self._ended = reader.ended
        else:
            got = self._read_through_python(buf, nbytes)
        if self._out.pending:   # a read may answer (TLS 1.3 KeyUpdate): sent with the next write
            self._unsent = self._pending_ciphertext()
        return got

    def _read_through_python(self, buf, nbytes: int) -> int:
        view = memoryview(buf)
        want = nbytes or len(view)
        read = self._obj.read
        got = 0
        while got < want:
            try:
                # with a buffer, read() returns the count (typeshed says bytes either way)
                n = cast(int, read(want - got, view[got:] if got else view))
            except ssl.SSLWantReadError:
                try:
                    if self._fill():
                        continue
                except BlockingIOError:
                    if got:
                        break
                    raise
                self._ended = True  # TCP EOF without close_notify: end of stream all the same
                break
            except ssl.SSLZeroReturnError:   # the peer's close_notify
                self._ended = True
                break
            if not n:       # the peer's close_notify, as read() with a buffer reports it
                self._ended = True
                break
            got += n
        return got

    def buffered(self) -> bool:
        """True when bytes are held here (plaintext of a record partly read, or ciphertext
        received but not decrypted), or the end of the stream, that the selector cannot report."""
        return bool(self._in.pending or self._obj.pending() or self._ended)

    def _fill(self) -> int:
        """Receive what the socket has into the incoming BIO: its size, 0 at EOF."""
        n = self.sock.recv_into(self._raw)
        if n:
            self._in.write(self._raw[:n])
        return n

    # --- writing ---
    def write(self, data) -> None:
        """Encrypt all of ``data``; it leaves with :meth:`flush`."""
        self._obj.write(data)

    def flush(self) -> bool:
        """Send the ciphertext not yet sent; True once all of it is out."""
        unsent = self._pending_ciphertext()
        while unsent is not None:
            try:
                sent = self.sock.send(unsent)
            except (BlockingIOError, InterruptedError):
                sent = 0
            if sent < len(unsent):
                self._unsent = unsent[sent:]
                return False
            self._unsent = None
            unsent = self._pending_ciphertext()
        return True

    def _pending_ciphertext(self) -> memoryview | None:
        unsent = self._unsent
        if self._out.pending:
            fresh = self._out.read()
            unsent = memoryview(fresh if unsent is None else bytes(unsent) + fresh)
        self._unsent = None
        return unsent

    # --- closing ---
    def close(self) -> None:
        """Say close_notify if the handshake was done and the socket takes it now, then close."""
        try:
            if self._done:
                try:
                    self._obj.unwrap()
                except ssl.SSLError:     # SSLWantReadError: the peer's close_notify is not awaited
                    pass
                self.flush()
        except OSError:
            pass
        finally:
            self.sock.close()
