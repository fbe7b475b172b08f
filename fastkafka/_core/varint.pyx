# Python face of the varint helpers in varint.pxd (record codecs cimport those directly).
#
# Byte layout: little-endian base-128, 7 bits a byte, high bit set on all but the last byte.
#   UNSIGNED_VARINT  uint32, at most 5 bytes        300 -> AC 02
#   VARINT           int32 zigzag, at most 5 bytes  0 -> 00, -1 -> 01, 1 -> 02, 64 -> 80 01
#   VARLONG          int64 zigzag, at most 10 bytes
# Decoders reject a varint that runs past the buffer, or is longer than its type allows, or
# whose last byte carries bits beyond the type (the 5th byte of a 32-bit varint may hold 4 bits,
# the 10th of a varlong 1 bit), with fastkafka.errors.VarintError. Non-minimal encodings that
# fit (80 00 for 0) are accepted, as Kafka's own reader does.
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.number cimport PyNumber_Index
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

# read_*/write_*/*_size and the VARINT_* statuses come from varint.pxd, included implicitly.
from fastkafka.errors import VarintError

cdef object _INT32_MIN = -(1 << 31)
cdef object _INT32_MAX = (1 << 31) - 1
cdef object _INT64_MIN = -(1 << 63)
cdef object _INT64_MAX = (1 << 63) - 1
cdef object _UINT32_MAX = (1 << 32) - 1


cdef object _in_range(object v, object lo, object hi, str kind):
    """``v`` as an int within [lo, hi]; OverflowError names the Kafka type it does not fit."""
    v = PyNumber_Index(v)
    if not lo <= v <= hi:
        raise OverflowError(f"{v} does not fit a {kind} ({lo}..{hi})")
    return v


cdef bytes _encode_zigzag(int64_t v):
    cdef unsigned char out[10]
    return PyBytes_FromStringAndSize(<char*>out, write_varlong(out, v))


def encode_varint(v):
    """Kafka VARINT: ``v`` (int32) zigzag-encoded as a base-128 varint.

    Example::

        >>> encode_varint(-1), encode_varint(64)
        (b'\\x01', b'\\x80\\x01')
    """
    return _encode_zigzag(_in_range(v, _INT32_MIN, _INT32_MAX, "varint"))


def encode_varlong(v):
    """Kafka VARLONG: ``v`` (int64) zigzag-encoded, at most 10 bytes.

    Example::

        >>> encode_varlong(-(1 << 63)).hex()
        'ffffffffffffffffff01'
    """
    return _encode_zigzag(_in_range(v, _INT64_MIN, _INT64_MAX, "varlong"))


def encode_uvarint(u):
    """Kafka UNSIGNED_VARINT: ``u`` (uint32) as a base-128 varint.

    Example::

        >>> encode_uvarint(300)
        b'\\xac\\x02'
    """
    cdef unsigned char out[10]
    cdef uint64_t x = _in_range(u, 0, _UINT32_MAX, "unsigned varint")
    return PyBytes_FromStringAndSize(<char*>out, write_uvarint(out, x))


def size_varint(v):
    """Bytes :func:`encode_varint` would produce for ``v``.

    Example::

        >>> size_varint(63), size_varint(64)
        (1, 2)
    """
    return varlong_size(_in_range(v, _INT32_MIN, _INT32_MAX, "varint"))


def size_varlong(v):
    """Bytes :func:`encode_varlong` would produce for ``v``.

    Example::

        >>> size_varlong(-(1 << 63))
        10
    """
    return varlong_size(_in_range(v, _INT64_MIN, _INT64_MAX, "varlong"))


def size_uvarint(u):
    """Bytes :func:`encode_uvarint` would produce for ``u``.

    Example::

        >>> size_uvarint(127), size_uvarint(128)
        (1, 2)
    """
    return uvarint_size(_in_range(u, 0, _UINT32_MAX, "unsigned varint"))


cdef enum Kind:
    KIND_UVARINT
    KIND_VARINT
    KIND_VARLONG


cdef tuple _decode(object buf, Py_ssize_t pos, Kind kind):
    """The one boundary that turns the helpers' status codes into VarintError."""
    cdef Py_buffer view
    cdef Py_ssize_t end
    cdef uint64_t u = 0
    cdef int32_t i32 = 0
    cdef int64_t i64 = 0
    cdef object value
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        if pos < 0 or pos > view.len:
            raise ValueError(f"pos {pos} outside the buffer (0..{view.len})")
        if kind == KIND_VARINT:
            end = read_varint(<const unsigned char*>view.buf, pos, view.len, &i32)
            value = i32
        elif kind == KIND_VARLONG:
            end = read_varlong(<const unsigned char*>view.buf, pos, view.len, &i64)
            value = i64
        else:
            end = read_uvarint(<const unsigned char*>view.buf, pos, view.len, 5, &u)
            value = u
    finally:
        PyBuffer_Release(&view)
    if end == VARINT_TRUNCATED:
        raise VarintError(f"truncated varint at offset {pos}")
    if end == VARINT_OVERLONG:
        raise VarintError(f"overlong varint at offset {pos}")
    return value, end


def decode_varint(buf, Py_ssize_t pos=0):
    """Read a Kafka VARINT (zigzag int32) at ``pos``; return ``(value, position after it)``.

    Raises :class:`fastkafka.errors.VarintError` if it is truncated or longer than 5 bytes.

    Example::

        >>> decode_varint(b"\\x00\\x80\\x01", 1)
        (64, 3)
    """
    return _decode(buf, pos, KIND_VARINT)


def decode_varlong(buf, Py_ssize_t pos=0):
    """Read a Kafka VARLONG (zigzag int64) at ``pos``; return ``(value, position after it)``.

    Example::

        >>> decode_varlong(bytes.fromhex("feffffffffffffffff01"))
        (9223372036854775807, 10)
    """
    return _decode(buf, pos, KIND_VARLONG)


def decode_uvarint(buf, Py_ssize_t pos=0):
    """Read a Kafka UNSIGNED_VARINT (uint32) at ``pos``; return ``(value, position after it)``.

    Example::

        >>> decode_uvarint(b"\\xac\\x02")
        (300, 2)
    """
    return _decode(buf, pos, KIND_UVARINT)
