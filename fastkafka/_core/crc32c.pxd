# CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of record batches v2.
# Contract: ``crc32c_update(0, buf, n)`` is the standard CRC-32C of buf (b"123456789" -> 0xE3069283);
# chaining: crc32c_update(crc32c_update(0, a, na), b, nb) == CRC-32C of a + b.
# Safe without the GIL; picks the SSE4.2 instruction at import when the CPU has it.
from libc.stdint cimport uint32_t

cdef uint32_t crc32c_update(uint32_t crc, const unsigned char* buf, size_t n) noexcept nogil
