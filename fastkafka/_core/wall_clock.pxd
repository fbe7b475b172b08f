# The wall clock in milliseconds (CLOCK_REALTIME), callable without the GIL: the log's default
# clock, read once per append (segment.wall_clock_ms for Python, Appender in C).
from libc.stdint cimport int64_t
from posix.time cimport CLOCK_REALTIME, clock_gettime, timespec


cdef inline int64_t wall_clock_now_ms() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000
