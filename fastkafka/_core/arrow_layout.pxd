# Reading Arrow variable-size binary arrays (binary, utf8; list offsets too) from their buffers.
#
# Layout of one array of ``length`` rows starting at row ``offset`` (pyarrow's ``arr.offset``):
#   validity  LSB-first bitmap, bit (offset + i) set = row i present; absent when nothing is null
#   offsets   int32[offset + length + 1]; row i is data[offsets[offset+i] : offsets[offset+i+1]]
#   data      the bytes of every row back to back (may be empty or absent when all rows are empty)
# The caller hands the buffers as ``(validity | None, offsets, data | None, offset, length)``
# (``arr.buffers()`` plus ``arr.offset, len(arr)``), so _core never imports pyarrow.
# pyarrow exports buffers with format "b"; they are re-viewed as "B" and pinned in ``keep``.
from libc.stdint cimport int32_t, uint8_t


cdef struct BinaryColumn:
    const uint8_t* validity     # NULL: every row present
    const int32_t* offsets      # already advanced by ``offset``: row i spans offsets[i]..offsets[i+1]
    const uint8_t* data
    Py_ssize_t bit_offset       # validity bit of row i is bit_offset + i
    Py_ssize_t length


cdef inline const uint8_t* _pin(object buf, list keep, Py_ssize_t* size) except? NULL:
    cdef const uint8_t[::1] view
    if buf is None:
        size[0] = 0
        return NULL
    mv = memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    keep.append(mv)
    size[0] = mv.nbytes
    if mv.nbytes == 0:
        return NULL
    view = mv
    return &view[0]


cdef inline int fill_binary_column(BinaryColumn* col, tuple spec, list keep,
                                   Py_ssize_t limit) except -1:
    """Check ``spec`` against its own lengths and point ``col`` at its buffers. ``limit`` -1
    bounds offsets by the data buffer; a list column passes its child's length instead."""
    cdef Py_ssize_t vsize, osize, dsize
    validity, offsets, data, off, length = spec
    cdef Py_ssize_t offset = off, n = length
    if offset < 0 or n < 0:
        raise ValueError("negative Arrow offset or length")
    col.validity = _pin(validity, keep, &vsize)
    cdef const uint8_t* o = _pin(offsets, keep, &osize)
    col.data = _pin(data, keep, &dsize)
    if osize < (offset + n + 1) * 4:
        raise ValueError("Arrow offsets buffer shorter than the array")
    if col.validity != NULL and vsize * 8 < offset + n:
        raise ValueError("Arrow validity buffer shorter than the array")
    col.offsets = (<const int32_t*>o) + offset
    col.bit_offset = offset
    col.length = n
    # One pass over the offsets so no later read can leave the data buffer (the readers below
    # trust them): non-decreasing, within data.
    cdef Py_ssize_t i
    if limit >= 0:
        dsize = limit
    cdef bint bad = col.offsets[0] < 0 or col.offsets[n] > dsize
    with nogil:
        for i in range(n):
            if col.offsets[i + 1] < col.offsets[i]:
                bad = True
                break
    if bad:
        raise ValueError("Arrow offsets out of order or beyond the data buffer")
    return 0


cdef inline bint column_valid(const BinaryColumn* col, Py_ssize_t i) noexcept nogil:
    cdef Py_ssize_t j
    if col.validity == NULL:
        return True
    j = col.bit_offset + i
    return (col.validity[j >> 3] >> (j & 7)) & 1


cdef inline Py_ssize_t column_value(const BinaryColumn* col, Py_ssize_t i,
                                    const uint8_t** out) noexcept nogil:
    """Row ``i``'s bytes in ``out``; returns their length, or -1 for null."""
    if not column_valid(col, i):
        out[0] = NULL
        return -1
    out[0] = col.data + col.offsets[i]
    return col.offsets[i + 1] - col.offsets[i]
