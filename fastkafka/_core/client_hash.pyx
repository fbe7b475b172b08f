# cython: language_level=3
"""Key hashing for the producer's partitioners: Kafka's murmur2 (the Java client's
``Utils.murmur2``), so a key lands on the partition Java, kafka-python and librdkafka's
``murmur2_random`` put it on.

Layout of the hash (MurmurHash2, 32-bit, seed 0x9747b28c): the key is read as little-endian
uint32 words, each mixed with m = 0x5bd1e995, r = 24; the 1-3 trailing bytes are folded in
last-to-first; a final avalanche. Java computes it on signed ints, which wraps exactly like
uint32 here, so we return the signed value Java returns.

``murmur2_positive_column`` does the same over a whole Arrow binary/string column, read from
its buffers (validity bitmap LSB-first, int32 offsets of length+1 entries from the array's
``offset``, one data buffer), so a writer routes a column without a Python object per key.

Example::

    >>> murmur2(b"21")  # Kafka's own test vector
    -973932308
    >>> murmur2_partition(b"21", 3) == (murmur2(b"21") & 0x7fffffff) % 3
    True
"""
from libc.stdint cimport uint32_t, int32_t, uint8_t

from fastkafka._core.arrow_layout cimport BinaryColumn, column_value, fill_binary_column

__all__ = ["murmur2", "murmur2_partition", "murmur2_positive_column"]


cdef uint32_t _murmur2(const uint8_t* data, Py_ssize_t n) noexcept nogil:
    cdef uint32_t m = 0x5bd1e995
    cdef uint32_t h = <uint32_t>0x9747b28c ^ <uint32_t>n
    cdef Py_ssize_t i = 0
    cdef uint32_t k
    while i + 4 <= n:
        k = (<uint32_t>data[i] | (<uint32_t>data[i + 1] << 8) | (<uint32_t>data[i + 2] << 16)
             | (<uint32_t>data[i + 3] << 24))
        k *= m
        k ^= k >> 24
        k *= m
        h *= m
        h ^= k
        i += 4
    cdef Py_ssize_t rest = n - i
    if rest == 3:
        h ^= <uint32_t>data[i + 2] << 16
    if rest >= 2:
        h ^= <uint32_t>data[i + 1] << 8
    if rest >= 1:
        h ^= <uint32_t>data[i]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return h


def murmur2(key) -> int:
    """Kafka's murmur2 of a bytes-like ``key`` as Java's signed int32."""
    cdef const uint8_t[::1] view = memoryview(key).cast("B") if not isinstance(key, bytes) else key
    return <int32_t>_murmur2(&view[0] if view.shape[0] else NULL, view.shape[0])


def murmur2_partition(key, int num_partitions) -> int:
    """``toPositive(murmur2(key)) % num_partitions`` — the Java client's keyed partition."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    cdef const uint8_t[::1] view = memoryview(key).cast("B") if not isinstance(key, bytes) else key
    cdef uint32_t h = _murmur2(&view[0] if view.shape[0] else NULL, view.shape[0])
    return <int>((h & 0x7fffffff) % <uint32_t>num_partitions)


def murmur2_positive_column(tuple column, int32_t[::1] out):
    """``toPositive(murmur2(key))`` of every row of an Arrow binary/string array into ``out``
    (-1 for a null row); the caller takes ``% num_partitions`` per row (topics differ).

    ``column`` is ``(validity | None, offsets, data | None, offset, length)``: the array's
    ``buffers()`` then ``arr.offset, len(arr)`` (layout in arrow_layout.pxd).

    Example::

        >>> import array
        >>> out = array.array("i", [0, 0])
        >>> offs = array.array("i", [0, 2, 2]).tobytes()
        >>> murmur2_positive_column((b"\\x01", offs, b"21", 0, 2), out)
        >>> out[0] == murmur2(b"21") & 0x7fffffff, out[1]
        (True, -1)
    """
    cdef BinaryColumn col
    cdef list keep = []
    fill_binary_column(&col, column, keep, -1)
    if out.shape[0] < col.length:
        raise ValueError(f"out holds {out.shape[0]} rows, need {col.length}")
    cdef Py_ssize_t i, n
    cdef const uint8_t* p
    with nogil:
        for i in range(col.length):
            n = column_value(&col, i, &p)
            out[i] = -1 if n < 0 else <int32_t>(_murmur2(p, n) & 0x7fffffff)
