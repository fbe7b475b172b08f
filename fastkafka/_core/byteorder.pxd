# Big-endian (network order) loads and stores: Kafka writes every fixed-width field this way.
# Shared by every _core module that reads batch headers, indexes or message sets; inline only,
# so cimporting this file adds no import-time dependency.
#   load_be*/store_be*  unsigned 16/32/64-bit
#   load_i32/load_i64   the same bytes read as the signed fields they usually are (offsets, lengths)
from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t


cdef inline uint16_t load_be16(const unsigned char* p) noexcept nogil:
    return (<uint16_t>p[0] << 8) | p[1]


cdef inline uint32_t load_be32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline uint64_t load_be64(const unsigned char* p) noexcept nogil:
    return (<uint64_t>load_be32(p) << 32) | load_be32(p + 4)


cdef inline int32_t load_i32(const unsigned char* p) noexcept nogil:
    return <int32_t>load_be32(p)


cdef inline int64_t load_i64(const unsigned char* p) noexcept nogil:
    return <int64_t>load_be64(p)


cdef inline void store_be16(unsigned char* p, uint16_t v) noexcept nogil:
    p[0] = <unsigned char>(v >> 8)
    p[1] = <unsigned char>v


cdef inline void store_be32(unsigned char* p, uint32_t v) noexcept nogil:
    p[0] = <unsigned char>(v >> 24)
    p[1] = <unsigned char>(v >> 16)
    p[2] = <unsigned char>(v >> 8)
    p[3] = <unsigned char>v


cdef inline void store_be64(unsigned char* p, uint64_t v) noexcept nogil:
    store_be32(p, <uint32_t>(v >> 32))
    store_be32(p + 4, <uint32_t>v)
