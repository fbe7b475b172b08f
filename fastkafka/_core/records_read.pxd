# Contract of fastkafka._core.records_read: record streams -> Python records or columns.
cdef class Record:
    cdef readonly object offset
    cdef readonly object timestamp
    cdef readonly object key
    cdef readonly object value
    cdef readonly object headers


cdef class Columns:
    cdef readonly Py_ssize_t count
    cdef readonly Py_ssize_t batch_count
    cdef readonly Py_ssize_t valid_bytes
    cdef readonly object offsets
    cdef readonly object timestamps
    cdef readonly object timestamp_types
    cdef readonly object key_offsets
    cdef readonly object key_validity
    cdef readonly Py_ssize_t key_null_count
    cdef readonly object key_data
    cdef readonly object value_offsets
    cdef readonly object value_validity
    cdef readonly Py_ssize_t value_null_count
    cdef readonly object value_data
    cdef readonly object header_offsets
    cdef readonly object header_key_offsets
    cdef readonly object header_key_data
    cdef readonly object header_value_offsets
    cdef readonly object header_value_validity
    cdef readonly Py_ssize_t header_value_null_count
    cdef readonly object header_value_data
