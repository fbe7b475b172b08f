# Varints as Kafka (and protobuf) encode them, inline so every record codec gets them for free.
#
# Byte layout: little-endian base-128 groups of 7 bits, high bit set on every byte but the last.
#   unsigned:  u = 300          -> AC 02
#   zigzag:    z = (v << 1) ^ (v >> 63), so -1 -> 01, 1 -> 02, -64 -> 7F, 64 -> 80 01
# An int32 varint ("varint") takes at most 5 bytes, an int64 ("varlong") at most 10.
#
# Readers return the position after the varint, or a negative status (never raise, nogil):
#   VARINT_TRUNCATED  the buffer ends inside the varint
#   VARINT_OVERLONG   more bytes than the type allows (or bits beyond the type in the last byte)
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef enum:
    VARINT_TRUNCATED = -1
    VARINT_OVERLONG = -2


cdef inline uint64_t zigzag64(int64_t v) noexcept nogil:
    # Shift as unsigned: a left shift of a negative signed value is undefined behaviour in C.
    # The right shift relies on it being arithmetic, as every compiler we build with makes it.
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)


cdef inline int uvarint_size(uint64_t u) noexcept nogil:
    cdef int n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


cdef inline int varlong_size(int64_t v) noexcept nogil:
    return uvarint_size(zigzag64(v))


cdef inline int write_uvarint(unsigned char* out, uint64_t u) noexcept nogil:
    """Write ``u``; return the number of bytes written (out needs room for 10)."""
    cdef int n = 0
    while u >= 0x80:
        out[n] = <unsigned char>((u & 0x7F) | 0x80)
        u >>= 7
        n += 1
    out[n] = <unsigned char>u
    return n + 1


cdef inline int write_varlong(unsigned char* out, int64_t v) noexcept nogil:
    return write_uvarint(out, zigzag64(v))


# A record's key, value or header field: zigzag varlong length (-1 = null), then the bytes.
cdef inline Py_ssize_t blob_size(Py_ssize_t n) noexcept nogil:
    return 1 if n < 0 else varlong_size(n) + n


cdef inline unsigned char* write_blob(unsigned char* w, const void* p, Py_ssize_t n) noexcept nogil:
    """Write the field (length ``n``, -1 for null) at ``w``; returns the end."""
    w += write_varlong(w, n)
    if n > 0:
        memcpy(w, p, n)
        w += n
    return w


cdef inline Py_ssize_t read_uvarint(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                                    int max_bytes, uint64_t* out) noexcept nogil:
    """Read an unsigned varint of at most ``max_bytes`` (5 for 32-bit, 10 for 64-bit)."""
    cdef uint64_t result = 0
    cdef uint64_t b
    cdef int shift = 0
    cdef int i
    for i in range(max_bytes):
        if pos >= end:
            return VARINT_TRUNCATED
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            # The last byte may only carry bits that fit the type: 32-bit -> 4 bits in byte 5,
            # 64-bit -> 1 bit in byte 10. Anything more is an overlong (or overflowing) encoding.
            if i == max_bytes - 1 and (b >> (64 - shift if max_bytes == 10 else 32 - shift)) != 0:
                return VARINT_OVERLONG
            out[0] = result
            return pos
        shift += 7
    return VARINT_OVERLONG


cdef inline Py_ssize_t read_varint(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                                   int32_t* out) noexcept nogil:
    """Zigzag int32 (Kafka "varint")."""
    cdef uint64_t u = 0
    pos = read_uvarint(buf, pos, end, 5, &u)
    if pos >= 0:
        out[0] = <int32_t>((<uint32_t>u >> 1) ^ (-(<int32_t>(u & 1))))
    return pos


cdef inline Py_ssize_t read_varlong(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                                    int64_t* out) noexcept nogil:
    """Zigzag int64 (Kafka "varlong")."""
    cdef uint64_t u = 0
    pos = read_uvarint(buf, pos, end, 10, &u)
    if pos >= 0:
        out[0] = <int64_t>((u >> 1) ^ (-(<int64_t>(u & 1))))
    return pos
