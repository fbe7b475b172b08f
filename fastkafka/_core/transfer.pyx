# cython: language_level=3
"""Page cache -> socket without copying through Python: one non-blocking ``sendfile(2)`` step.

The network processor calls this for every file region of a Fetch response (DESIGN §3). A
region is ``(fd, position, length)``; the processor keeps the progress and calls again with
``offset + sent`` once the socket is writable, so a short send is never an error here.

Why not ``os.sendfile``: it works, but this is the single place that distinguishes "socket
full" (0, retry on writability) from "file shorter than the region" (EOFError: the segment was
truncated under us) from real errors, without raising for the common EAGAIN case.

Example::

    >>> import os, socket
    >>> from fastkafka._core.transfer import sendfile_step
    >>> a, b = socket.socketpair()
    >>> fd = os.open("/etc/hostname", os.O_RDONLY)
    >>> sendfile_step(a.fileno(), fd, 0, 1) == 1
    True
"""
from cpython.bytearray cimport PyByteArray_FromStringAndSize
from libc.errno cimport errno, EAGAIN, EINTR
from posix.types cimport off_t
from os import strerror

cdef extern from "<sys/sendfile.h>" nogil:
    ssize_t c_sendfile "sendfile"(int out_fd, int in_fd, off_t* offset, size_t count)


cpdef Py_ssize_t sendfile_step(int out_fd, int in_fd, long long offset, Py_ssize_t count) except -1:
    """Send up to ``count`` bytes of ``in_fd`` at ``offset`` to ``out_fd``; return bytes sent.

    Returns 0 when the socket would block. Thread-safe (no shared state); releases the GIL.
    """
    cdef off_t off = <off_t>offset
    cdef ssize_t n
    cdef int err = 0
    if count <= 0:
        return 0
    if offset < 0:
        raise ValueError("negative file offset")
    with nogil:
        while True:
            n = c_sendfile(out_fd, in_fd, &off, <size_t>count)
            if n >= 0:
                break
            err = errno
            if err != EINTR:
                break
    if n > 0:
        return n
    if n == 0:
        raise EOFError(f"file region ends before offset {offset} + {count}")
    if err == EAGAIN:  # == EWOULDBLOCK on Linux
        return 0
    raise OSError(err, strerror(err))


cpdef bytearray frame_buffer(Py_ssize_t size):
    """A ``bytearray`` of ``size`` bytes whose contents are NOT initialised.

    The network processor receives a large request straight into it; ``bytearray(size)`` would
    first zero-fill it, one extra pass over a megabyte that the socket overwrites anyway.
    """
    if size < 0:
        raise ValueError("negative size")
    return PyByteArray_FromStringAndSize(NULL, size)
