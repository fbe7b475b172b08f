# CRC-32C (Castagnoli), the checksum of Kafka record batches (magic 2).
#
# Byte layout it checks: a v2 batch stores CRC-32C as a big-endian uint32 at byte 17 of the
# batch, covering bytes 21.. (attributes through the last record) -- this module only
# computes the checksum; records.pyx decides which bytes to feed it.
#
# CRC-32C here is the standard one (iSCSI, RFC 3720): reflected polynomial 0x82F63B78,
# register preset to ~0, result inverted, so crc32c(b"123456789") == 0xE3069283. The engines
# (AVX-512 carry-less folding, CRC32 instruction with six interleaved streams, or slicing-by-8
# tables) live in crc32c_impl.h and are picked once, at import, from cpuid and the OS's XCR0.
# FASTKAFKA_CRC32C=sw (=sse4.2, =sse4.2+pclmul) in the environment before import caps the choice
# at that engine; crc32c_engine() runs any engine the machine has, so tests and benchmarks reach
# every one in one process.
import os

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from libc.stdint cimport uint32_t, uint64_t

cdef extern from "crc32c_impl.h":
    uint32_t fk_crc32c_raw(uint32_t crc, const unsigned char* p, size_t n) noexcept nogil
    uint32_t fk_crc32c_raw_engine(int engine, uint32_t crc, const unsigned char* p,
                                  size_t n) noexcept nogil
    uint32_t fk_crc32c_shift(uint32_t raw, uint64_t nbytes) noexcept nogil
    int fk_crc32c_init(int max_engine) noexcept
    int fk_crc32c_best

# Below this many bytes the checksum takes less time than dropping and retaking the GIL.
cdef enum:
    NOGIL_THRESHOLD = 4096

_ENGINES = ("software", "sse4.2", "sse4.2+pclmul")
_CAPS = {"sw": 0, "software": 0, "sse4.2": 1, "sse4.2+pclmul": 2, "pclmul": 2}
cdef int _engine = fk_crc32c_init(
    _CAPS.get(os.environ.get("FASTKAFKA_CRC32C", "").lower(), len(_ENGINES) - 1))


cdef uint32_t crc32c_update(uint32_t crc, const unsigned char* buf, size_t n) noexcept nogil:
    return ~fk_crc32c_raw(~crc, buf, n)


cdef inline uint32_t _update(int engine, uint32_t crc, const unsigned char* buf,
                            size_t n, size_t reps) noexcept nogil:
    # engine -1 is the one picked at import (the hot path's dispatch), else that engine; reps
    # feeds the buffer that many times (crc32c_repeat, for timing engines in a C loop).
    crc = ~crc
    while reps:
        if engine < 0:
            crc = fk_crc32c_raw(crc, buf, n)
        else:
            crc = fk_crc32c_raw_engine(engine, crc, buf, n)
        reps -= 1
    return ~crc


cdef uint32_t _checksum(object data, uint32_t value, int engine, size_t reps=1) except? 0:
    """The one Python boundary: borrow the bytes, run the engine (without the GIL when large)."""
    cdef const unsigned char* p
    cdef size_t n
    cdef Py_buffer view
    cdef uint32_t crc
    if PyBytes_CheckExact(data):
        # bytes are immutable and `data` holds a reference, so no buffer export is needed.
        p = <const unsigned char*>PyBytes_AS_STRING(data)
        n = <size_t>PyBytes_GET_SIZE(data)
        if n * reps < NOGIL_THRESHOLD:
            return _update(engine, value, p, n, reps)
        with nogil:
            crc = _update(engine, value, p, n, reps)
        return crc
    try:
        # The export pins the memory (a bytearray cannot resize, an mmap cannot close) while the
        # GIL is released below.
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    except BufferError as exc:
        raise BufferError(f"crc32c needs a C-contiguous buffer: {exc}") from exc
    try:
        p = <const unsigned char*>view.buf
        n = <size_t>view.len
        if n * reps < NOGIL_THRESHOLD:
            crc = _update(engine, value, p, n, reps)
        else:
            with nogil:
                crc = _update(engine, value, p, n, reps)
    finally:
        PyBuffer_Release(&view)
    return crc


def crc32c(data, uint32_t value=0):
    """CRC-32C of ``data`` (any C-contiguous buffer: bytes, bytearray, memoryview, mmap, array).

    ``value`` is the CRC of the bytes before ``data``, so checksums chain across pieces.
    Uses the CPU's CRC32 instruction when it has one (see :func:`hardware`); releases the GIL
    for buffers of 4 KiB and more.

    Example::

        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
        >>> crc32c(b"6789", crc32c(b"12345")) == crc32c(b"123456789")
        True
    """
    return _checksum(data, value, -1)


def crc32c_sw(data, uint32_t value=0):
    """:func:`crc32c` forced onto the portable slicing-by-8 engine (for tests and comparison).

    Example::

        >>> crc32c_sw(b"123456789") == crc32c(b"123456789")
        True
    """
    return _checksum(data, value, 0)


def crc32c_engine(data, uint32_t value=0, str name not None="software"):
    """:func:`crc32c` on the engine called ``name`` (one of :func:`engines`), whichever engine
    was picked at import -- for tests and benchmarks. ValueError if this machine lacks it.

    Example::

        >>> crc32c_engine(b"123456789", 0, engines()[-1]) == 0xE3069283
        True
    """
    return _checksum(data, value, _engine_index(name))


def crc32c_repeat(data, size_t reps, str name not None="software"):
    """CRC-32C of ``data`` repeated ``reps`` times, by running engine ``name`` over ``data``
    ``reps`` times in a C loop: times an engine without Python's per-call cost (~0.1 us,
    more than the CRC itself below a few KiB). For bench/bench_crc32c.py and its tests.

    Example::

        >>> crc32c_repeat(b"123", 3) == crc32c(b"123123123")
        True
    """
    return _checksum(data, 0, _engine_index(name), reps)


cdef int _engine_index(str name) except -1:
    try:
        index = _ENGINES.index(name)
    except ValueError:
        raise ValueError(f"unknown crc32c engine {name!r}; known: {_ENGINES}") from None
    if index > fk_crc32c_best:
        raise ValueError(f"crc32c engine {name!r} needs CPU/OS support this machine lacks")
    return index


def engines():
    """Names of the engines this CPU and OS can run, slowest first (whatever the import cap).

    Example::

        >>> engines()[0]
        'software'
    """
    return _ENGINES[:fk_crc32c_best + 1]


def crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2):
    """CRC-32C of ``a + b`` from ``crc32c(a)``, ``crc32c(b)`` and ``len(b)``, without the bytes.

    Example::

        >>> crc32c_combine(crc32c(b"12345"), crc32c(b"6789"), 4) == crc32c(b"123456789")
        True
    """
    # crc(a+b) = crc(a) * x^(8 len2) ^ crc(b): the presets and final inversions cancel out.
    return fk_crc32c_shift(crc1, len2) ^ crc2


def hardware():
    """True when :func:`crc32c` runs on the CPU's CRC32 instruction (SSE4.2), False when it
    uses the software tables (no SSE4.2, not x86-64, or ``FASTKAFKA_CRC32C=sw``).

    Example::

        >>> hardware() in (True, False)
        True
    """
    return _engine != 0


def engine():
    """Name of the engine in use: ``"sse4.2+pclmul"``, ``"sse4.2"`` or ``"software"``.

    Example::

        >>> engine() in engines()
        True
    """
    return _ENGINES[_engine]
