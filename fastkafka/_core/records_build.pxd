# What records_build shares with the other record encoders (records_arrow).
cimport cython


@cython.final
cdef class RecordsOutput:
    """A record stream under construction: a bytearray that starts with ``reserve`` zero bytes
    (room for the batch header) and grows geometrically; ``ptr`` is refreshed after every resize."""
    cdef bytearray buf
    cdef Py_ssize_t used
    cdef Py_ssize_t cap
    cdef unsigned char* ptr

    # a pointer to n writable bytes at ``used`` (the caller advances ``used``)
    cdef unsigned char* room(self, Py_ssize_t n) except NULL
    # the bytearray cut to ``used``; the output is spent
    cdef bytearray finish(self)
