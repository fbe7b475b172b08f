# Contract of fastkafka._core.legacy: legacy message sets (magic 0 and 1). Byte layout at the
# top of legacy.pyx. Mechanism only: codecs are applied by fastkafka.legacy (L1).
from libc.stdint cimport int32_t, int64_t, uint32_t

cdef enum:
    MSG_OK = 0
    MSG_TRUNCATED = 1     # the buffer ends inside the entry: normal at the end of a fetch
    MSG_BAD_SIZE = 2      # messageSize below the smallest message of its magic (or negative)
    MSG_BAD_MAGIC = 3     # magic other than 0 or 1
    MSG_BAD_CRC = 4
    MSG_BAD_FIELD = 5     # key/value length < -1, or the fields do not fill messageSize exactly

    ENTRY_OVERHEAD = 12   # offset int64 + messageSize int32
    MESSAGE_V0_MIN = 14   # crc 4 + magic 1 + attributes 1 + key length 4 + value length 4
    MESSAGE_V1_MIN = 22   # ... + timestamp 8


cdef struct LegacyMessage:
    Py_ssize_t pos              # start of the entry (the offset field)
    Py_ssize_t end              # position after the entry
    int64_t offset
    int32_t size                # messageSize
    uint32_t crc                # stored CRC
    int magic
    int attributes
    int64_t timestamp           # -1 (NO_TIMESTAMP) for magic 0
    Py_ssize_t key_pos
    int32_t key_len             # -1 = null
    Py_ssize_t value_pos
    int32_t value_len           # -1 = null


cdef inline Py_ssize_t message_size(int magic, int32_t key_len, int32_t value_len) noexcept nogil:
    """messageSize of a message with these key/value lengths (-1 = null)."""
    return ((MESSAGE_V1_MIN if magic == 1 else MESSAGE_V0_MIN)
            + (key_len if key_len > 0 else 0) + (value_len if value_len > 0 else 0))


cdef int scan_message(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end, bint check_crc,
                      LegacyMessage* m) noexcept nogil

cdef Py_ssize_t write_message(unsigned char* out, int64_t offset, int magic, int attributes,
                              int64_t timestamp, const unsigned char* key, int32_t key_len,
                              const unsigned char* value, int32_t value_len) noexcept nogil

cdef uint32_t xxh32(const unsigned char* p, size_t n, uint32_t seed) noexcept nogil
