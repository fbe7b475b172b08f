# cython: language_level=3
"""Decrypt a TLS connection's records in one C loop, on the ``SSL`` of Python's own ``ssl`` object.

Python's ``SSLObject.read`` hands back one TLS record per call, and librdkafka writes a record per
message value and per header block: a produce of 1000-byte values meant ~2,000 calls per MiB, each
a method call, a buffer slice and a GIL release (bench/RESULTS.md, "TLS over memory BIOs"). Here one
call receives ciphertext from the socket into the incoming memory BIO and runs ``SSL_read`` record
after record until the caller's buffer is full or the socket is drained, with the GIL released.

Python keeps everything else: the context and its settings, the handshake, certificates, writes and
close. This module only borrows the ``SSL *`` of an ``ssl.SSLObject``, which Python does not
expose. It is found where CPython keeps it (``PySSLSocket``: the object header, ``Socket``, then
``ssl``) and trusted only when two checks agree, else :func:`reader_for` returns None and the
caller reads through Python:

* CPython's ``_ssl`` is linked to the very OpenSSL this module is (``SSL_read`` resolves to one
  address from both), so the pointer is handed to the library that made it;
* the ``SSL`` found names the Python object as its application data, as ``_ssl`` sets it
  (``SSL_set_app_data``) on every ``SSL`` it creates.

Example (TlsTransport's own example shows records read; here, a peer that goes away)::

    >>> import socket, ssl
    >>> ours, theirs = socket.socketpair()
    >>> obj = ssl.create_default_context().wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO())
    >>> reader = reader_for(obj, ours.fileno())
    >>> theirs.close()      # TCP EOF before a single record
    >>> reader.read_into(bytearray(16), 0, bytearray(4096)), reader.ended
    (0, True)
    >>> ours.close()
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE
from cpython.ref cimport PyObject
from libc.errno cimport errno, EAGAIN, EINTR
from libc.string cimport strerror

import ssl
import _ssl as cpython_ssl      # the C module under ssl: its SSLObject's type and its file

cdef extern from "<errno.h>" nogil:
    int EWOULDBLOCK

cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int fd, void *buf, size_t n, int flags)

cdef extern from "<dlfcn.h>" nogil:
    void *dlopen(const char *filename, int flags)
    void *dlsym(void *handle, const char *symbol)
    int dlclose(void *handle)
    int RTLD_LAZY
    int RTLD_NOLOAD

cdef extern from "<openssl/ssl.h>" nogil:
    ctypedef struct SSL:
        pass
    ctypedef struct BIO:
        pass
    int SSL_read_ex(SSL *s, void *buf, size_t num, size_t *readbytes)
    int SSL_read(SSL *s, void *buf, int num)      # only its address: is _ssl's OpenSSL ours?
    int SSL_get_error(const SSL *s, int ret)
    BIO *SSL_get_rbio(const SSL *s)
    void *SSL_get_ex_data(const SSL *s, int idx)
    int SSL_ERROR_WANT_READ, SSL_ERROR_ZERO_RETURN
    int BIO_write(BIO *b, const void *data, int dlen)

cdef extern from "<openssl/err.h>" nogil:
    void ERR_clear_error()
    unsigned long ERR_get_error()
    void ERR_error_string_n(unsigned long e, char *buf, size_t len)

# CPython's PySSLSocket (Modules/_ssl.c): the object header, the weakref to the socket, then the
# SSL pointer, first fields that no Python 3 release has changed.
cdef extern from *:
    """
    typedef struct { PyObject_HEAD PyObject *Socket; void *ssl; } fk_PySSLSocketHead;
    """
    ctypedef struct fk_PySSLSocketHead:
        void *ssl

# What one read_into ended on, besides a full buffer.
cdef enum ReadEnd:
    FILLED = 0        # the caller's buffer is full
    DRAINED = 1       # the socket has nothing more now (EAGAIN)
    STREAM_END = 2    # close_notify or TCP EOF
    TLS_ERROR = 3     # OpenSSL refused a record (the error queue says why)
    OS_ERROR = 4      # recv failed (errno)


cdef bint _same_openssl():
    """True when CPython's ``_ssl`` calls the OpenSSL this module is linked to."""
    path = getattr(cpython_ssl, "__file__", None)     # None: _ssl built into the interpreter
    if path is None:
        return False
    cdef bytes name = path.encode()
    cdef void *handle = dlopen(name, RTLD_LAZY | RTLD_NOLOAD)
    if handle == NULL:
        return False
    cdef void *theirs = dlsym(handle, "SSL_read")   # searched through _ssl's own dependencies
    dlclose(handle)
    return theirs != NULL and theirs == <void *>SSL_read


SAME_OPENSSL = _same_openssl()


cdef class TlsReader:
    """Reads plaintext out of one server-side ``ssl.SSLObject`` over memory BIOs whose ciphertext
    comes from socket ``fd``. Holds the object, so the ``SSL`` lives as long as this does.
    Not thread-safe: the processor thread owning the connection is its only user."""
    cdef object _owner
    cdef SSL *_ssl
    cdef int _fd
    cdef readonly bint ended

    def __cinit__(self, owner, size_t ssl_ptr, int fd):
        self._owner = owner
        self._ssl = <SSL *>ssl_ptr
        self._fd = fd
        self.ended = False

    def read_into(self, buf, size_t want, raw) -> int:
        """Decrypt up to ``want`` bytes into ``buf`` (all of it when 0), receiving ciphertext into
        the incoming BIO through ``raw`` as needed. Returns the count; sets :attr:`ended` at
        close_notify or TCP EOF. Raises BlockingIOError when nothing could be decrypted yet,
        ``ssl.SSLError`` for a record OpenSSL refuses, OSError when ``recv`` fails."""
        cdef Py_buffer out, scratch
        PyObject_GetBuffer(buf, &out, PyBUF_WRITABLE)
        try:
            PyObject_GetBuffer(raw, &scratch, PyBUF_WRITABLE)
        except BaseException:
            PyBuffer_Release(&out)
            raise
        if want == 0 or want > <size_t>out.len:
            want = out.len
        cdef size_t got = 0
        cdef int end, err = 0
        cdef unsigned long code = 0
        try:
            with nogil:
                end = _read_loop(self._ssl, self._fd, <char *>out.buf, want, <char *>scratch.buf,
                                 <size_t>scratch.len, &got, &err, &code)
        finally:
            PyBuffer_Release(&scratch)
            PyBuffer_Release(&out)
        if end == STREAM_END:
            self.ended = True
        elif end == TLS_ERROR:
            raise _ssl_error(code)
        elif end == OS_ERROR and not got:
            raise OSError(err, strerror(err).decode())
        elif end == DRAINED and not got:
            raise BlockingIOError(EAGAIN, "no TLS record complete yet")
        return got


cdef int _read_loop(SSL *tls, int fd, char *out, size_t want, char *raw, size_t rawcap,
                    size_t *got, int *err, unsigned long *code) noexcept nogil:
    cdef size_t n
    cdef ssize_t k
    cdef int reason
    cdef BIO *rbio = SSL_get_rbio(tls)
    if rawcap > 0x7fffffff:
        rawcap = 0x7fffffff
    ERR_clear_error()
    while got[0] < want:
        if SSL_read_ex(tls, out + got[0], want - got[0], &n) == 1:
            got[0] += n
            continue
        reason = SSL_get_error(tls, 0)
        if reason == SSL_ERROR_ZERO_RETURN:
            return STREAM_END
        if reason != SSL_ERROR_WANT_READ:
            code[0] = ERR_get_error()
            ERR_clear_error()
            return TLS_ERROR
        k = recv(fd, raw, rawcap, 0)
        if k > 0:
            BIO_write(rbio, raw, <int>k)
        elif k == 0:
            return STREAM_END    # TCP EOF without close_notify: the end all the same
        elif errno == EINTR:
            continue
        elif errno == EAGAIN or errno == EWOULDBLOCK:
            return DRAINED
        else:
            err[0] = errno
            return OS_ERROR
    return FILLED


cdef object _ssl_error(unsigned long code):
    cdef char text[256]
    if code == 0:
        return ssl.SSLError("TLS record refused")
    ERR_error_string_n(code, text, sizeof(text))
    return ssl.SSLError(text.decode(errors="replace"))


def reader_for(sslobj, int fd):
    """A :class:`TlsReader` for ``sslobj`` (an ``ssl.SSLObject``) whose ciphertext comes from
    socket ``fd``, or None where its ``SSL`` cannot be borrowed safely (see the module's text)."""
    if not SAME_OPENSSL:
        return None
    inner = getattr(sslobj, "_sslobj", None)
    if type(inner) is not cpython_ssl._SSLSocket:
        return None
    cdef void *ptr = (<fk_PySSLSocketHead *><PyObject *>inner).ssl
    if ptr == NULL or SSL_get_ex_data(<SSL *>ptr, 0) != <void *>inner:
        return None
    return TlsReader(inner, <size_t>ptr, fd)
