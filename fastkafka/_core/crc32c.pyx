# CRC-32C (Castagnoli), the checksum of Kafka record batches (magic 2).
#
# Byte layout it checks: a v2 batch stores CRC-32C as a big-endian uint32 at byte 17 of the
# batch, covering bytes 21.. (attributes through the last record) -- this module only
# computes the checksum; records.pyx decides which bytes to feed it.
#
# CRC-32C here is the standard one (iSCSI, RFC 3720): reflected polynomial 0x82F63B78,
# register preset to ~0, result inverted, so crc32c(b"123456789") == 0xE3069283. The engines
# (CRC32 instruction with six interleaved streams, or slicing-by-8 tables) live in
# crc32c_impl.h and are picked once, at import, from cpuid. FASTKAFKA_CRC32C=sw (or =sse4.2) in
# the environment before import caps the choice at the software (single-stream) engine, so
# tests can exercise every engine on one machine.
import os

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from libc.stdint cimport uint32_t, uint64_t

cdef extern from "crc32c_impl.h":
    uint32_t fk_crc32c_raw(uint32_t crc, const unsigned char* p, size_t n) noexcept nogil
    uint32_t fk_crc32c_sw(uint32_t crc, const unsigned char* p, size_t n) noexcept nogil
    uint32_t fk_crc32c_shift(uint32_t raw, uint64_t nbytes) noexcept nogil
    int fk_crc32c_init(int max_engine) noexcept

# Below this many bytes the checksum takes less time than dropping and retaking the GIL.
cdef enum:
    NOGIL_THRESHOLD = 4096

_ENGINES = ("software", "sse4.2", "sse4.2+pclmul")
cdef int _engine = fk_crc32c_init(
    {"sw": 0, "software": 0, "sse4.2": 1}.get(os.environ.get("FASTKAFKA_CRC32C", "").lower(), 2))


cdef uint32_t crc32c_update(uint32_t crc, const unsigned char* buf, size_t n) noexcept nogil:
    return ~fk_crc32c_raw(~crc, buf, n)


cdef inline uint32_t _sw_update(uint32_t crc, const unsigned char* buf, size_t n) noexcept nogil:
    return ~fk_crc32c_sw(~crc, buf, n)


cdef uint32_t _checksum(object data, uint32_t value, bint software) except? 0:
    """The one Python boundary: borrow the bytes, run the engine (without the GIL when large)."""
    cdef const unsigned char* p
    cdef size_t n
    cdef Py_buffer view
    cdef uint32_t crc
    if PyBytes_CheckExact(data):
        # bytes are immutable and `data` holds a reference, so no buffer export is needed.
        p = <const unsigned char*>PyBytes_AS_STRING(data)
        n = <size_t>PyBytes_GET_SIZE(data)
        if n < NOGIL_THRESHOLD:
            return _sw_update(value, p, n) if software else crc32c_update(value, p, n)
        with nogil:
            crc = _sw_update(value, p, n) if software else crc32c_update(value, p, n)
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
        if n < NOGIL_THRESHOLD:
            crc = _sw_update(value, p, n) if software else crc32c_update(value, p, n)
        else:
            with nogil:
                crc = _sw_update(value, p, n) if software else crc32c_update(value, p, n)
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
    return _checksum(data, value, False)


def crc32c_sw(data, uint32_t value=0):
    """:func:`crc32c` forced onto the portable slicing-by-8 engine (for tests and comparison).

    Example::

        >>> crc32c_sw(b"123456789") == crc32c(b"123456789")
        True
    """
    return _checksum(data, value, True)


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

        >>> engine() in ("sse4.2+pclmul", "sse4.2", "software")
        True
    """
    return _ENGINES[_engine]
