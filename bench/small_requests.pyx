# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The small-request limit's mechanism: a null broker's event loop and a load generator, both in C.

A broker answering one-record Produce requests spends its time per request, not per byte, so its
limit is what a server costs that does the least any Kafka server must: cut frames out of a
stream, decode the request header and answer. Python would measure Python's own per-request
cost (the load generator in loadgen.py tops out far below a broker here), so both ends of
the limit are C loops; bench/loadgen.py runs them (``--serve small``, ``replay_small``).

Frame layout (Kafka): ``int32 size`` then a request header v1
  api_key int16 | api_version int16 | correlation_id int32 | client_id int16-length string
Produce v7 request body
  transactional_id nullable int16-length string | acks int16 | timeout_ms int32 |
  [topics: int32 count | name int16-length string | [partitions: int32 count | index int32 | records ...]]
Produce v7 response (response header v0)
  int32 size | correlation_id int32 | int32 1 | name | int32 1 | index int32 | error_code int16 |
  base_offset int64 | log_append_time_ms int64 | log_start_offset int64 | throttle_time_ms int32

Only a Produce v7 with one topic and one partition takes the C path; every other frame (ApiVersions,
Metadata, multi-partition Produce: a few per client, or the 1000-partition case) goes to a Python
``fallback(frame) -> bytes | None`` that answers it with fastkafka's codecs.
Not thread-safe: one loop per process.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.errno cimport EAGAIN, EINTR, errno
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memmove
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec
from posix.unistd cimport close as fd_close

from fastkafka._core.byteorder cimport load_be16, load_i32, store_be16, store_be32, store_be64


cdef extern from "<sys/epoll.h>" nogil:
    ctypedef union epoll_data_t:
        void *ptr
        int fd
        uint32_t u32
        uint64_t u64

    struct epoll_event:
        uint32_t events
        epoll_data_t data

    int epoll_create1(int flags)
    int epoll_ctl(int epfd, int op, int fd, epoll_event *event)
    int epoll_wait(int epfd, epoll_event *events, int maxevents, int timeout)
    enum:
        EPOLLIN
        EPOLL_CTL_ADD
        EPOLL_CTL_DEL

cdef extern from "<poll.h>" nogil:
    struct pollfd:
        int fd
        short events
        short revents
    int poll(pollfd *fds, unsigned long nfds, int timeout)
    enum:
        POLLOUT

cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int fd, void *buf, size_t n, int flags)
    ssize_t send(int fd, const void *buf, size_t n, int flags)
    int accept4(int fd, void *addr, void *addrlen, int flags)
    int setsockopt(int fd, int level, int name, const void *value, unsigned int size)
    enum:
        SOCK_NONBLOCK
        MSG_NOSIGNAL

cdef extern from "<netinet/in.h>" nogil:
    enum:
        IPPROTO_TCP

cdef extern from "<netinet/tcp.h>" nogil:
    enum:
        TCP_NODELAY

DEF MAX_FD = 65536
DEF MAX_EVENTS = 256
DEF READ_MIN = 65536        # room kept free for each recv


cdef struct Buffer:
    unsigned char *data
    Py_ssize_t size
    Py_ssize_t cap


cdef int reserve(Buffer *b, Py_ssize_t room) noexcept nogil:
    """Make ``room`` bytes free after ``size``; -1 when out of memory."""
    cdef Py_ssize_t cap = b.cap if b.cap else READ_MIN
    cdef unsigned char *grown
    while cap - b.size < room:
        cap *= 2
    if cap != b.cap:
        grown = <unsigned char*>realloc(b.data, cap)
        if grown == NULL:
            return -1
        b.data, b.cap = grown, cap
    return 0


cdef int send_all(int fd, const unsigned char *p, Py_ssize_t n) noexcept nogil:
    """Write all of ``p`` to a non-blocking socket, waiting for room when it is full; -1 on error.
    Responses are small and the peers read them, so the wait is rare and short."""
    cdef ssize_t k
    cdef pollfd w
    while n > 0:
        k = send(fd, p, n, MSG_NOSIGNAL)
        if k > 0:
            p += k
            n -= k
        elif k < 0 and errno == EAGAIN:
            w.fd, w.events, w.revents = fd, POLLOUT, 0
            poll(&w, 1, -1)
        elif not (k < 0 and errno == EINTR):
            return -1
    return 0


cdef inline Py_ssize_t skip_string(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    """Position after an int16-length nullable string at ``pos``; -1 past ``end``."""
    cdef int16_t n
    if pos + 2 > end:
        return -1
    n = <int16_t>load_be16(p + pos)
    pos += 2 + (n if n > 0 else 0)
    return pos if pos <= end else -1


cdef Py_ssize_t answer_produce(const unsigned char *f, Py_ssize_t n, Buffer *out, int64_t offset) noexcept nogil:
    """Append the canned Produce v7 response to ``f`` (one frame's payload) to ``out``: 1 written,
    0 for acks=0 (no response), -1 when the frame is not a one-partition Produce v7 (or no memory)."""
    cdef Py_ssize_t pos, name_at
    cdef int16_t name_len, acks
    cdef unsigned char *r
    if n < 8 or load_be16(f) != 0 or load_be16(f + 2) != 7:
        return -1
    pos = skip_string(f, 8, n)              # client_id
    if pos < 0:
        return -1
    pos = skip_string(f, pos, n)            # transactional_id
    if pos < 0 or pos + 2 + 4 + 4 + 2 > n:
        return -1
    acks = <int16_t>load_be16(f + pos)
    pos += 6
    if load_i32(f + pos) != 1:              # one topic
        return -1
    pos += 4
    name_at = pos + 2
    name_len = <int16_t>load_be16(f + pos)
    pos = skip_string(f, pos, n)
    if name_len < 0 or pos < 0 or pos + 8 > n or load_i32(f + pos) != 1:   # one partition
        return -1
    if acks == 0:
        return 0
    if reserve(out, 52 + name_len) < 0:
        return -1
    r = out.data + out.size
    store_be32(r, 48 + name_len)
    memcpy(r + 4, f + 4, 4)                 # correlation id
    store_be32(r + 8, 1)
    store_be16(r + 12, name_len)
    memcpy(r + 14, f + name_at, name_len)
    r += 14 + name_len
    store_be32(r, 1)
    memcpy(r + 4, f + pos + 4, 4)           # partition index
    store_be16(r + 8, 0)
    store_be64(r + 10, <uint64_t>offset)
    store_be64(r + 18, <uint64_t>-1)        # log_append_time_ms: CreateTime topic
    store_be64(r + 26, 0)
    store_be32(r + 34, 0)                   # throttle_time_ms
    out.size += 52 + name_len
    return 1


cdef int fallback_answer(object fallback, const unsigned char *f, Py_ssize_t n, Buffer *out) except -1:
    cdef bytes reply = fallback(f[:n])
    if reply is None:
        return 0
    if reserve(out, PyBytes_GET_SIZE(reply)) < 0:
        raise MemoryError()
    memcpy(out.data + out.size, PyBytes_AS_STRING(reply), PyBytes_GET_SIZE(reply))
    out.size += PyBytes_GET_SIZE(reply)
    return 0


def serve(int listen_fd, object fallback):
    """Serve the listening socket ``listen_fd`` forever: accept, cut frames, answer.

    Each readable connection is read once per turn; every complete frame in what it holds is
    answered (in order) and the answers leave in one ``send``.
    """
    cdef int ep = epoll_create1(0)
    cdef epoll_event ev
    cdef epoll_event *events = <epoll_event*>malloc(MAX_EVENTS * sizeof(epoll_event))
    cdef Buffer *conns = <Buffer*>calloc(MAX_FD, sizeof(Buffer))
    cdef Buffer out
    cdef int n, i, fd, one = 1
    cdef ssize_t got
    cdef Py_ssize_t pos, size, done
    cdef int64_t offset = 0
    cdef Buffer *c
    if events == NULL or conns == NULL or ep < 0:
        raise MemoryError()
    out.data, out.size, out.cap = NULL, 0, 0
    ev.events = EPOLLIN
    ev.data.fd = listen_fd
    epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev)
    while True:
        with nogil:
            n = epoll_wait(ep, events, MAX_EVENTS, -1)
        for i in range(n):
            fd = events[i].data.fd
            if fd == listen_fd:
                fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK)
                if 0 <= fd < MAX_FD:
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))
                    ev.events = EPOLLIN
                    ev.data.fd = fd
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)
                elif fd >= 0:
                    fd_close(fd)
                continue
            c = &conns[fd]
            if reserve(c, READ_MIN) < 0:
                raise MemoryError()
            got = recv(fd, c.data + c.size, c.cap - c.size, 0)
            if got < 0 and (errno == EAGAIN or errno == EINTR):
                continue
            if got <= 0:
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL)
                fd_close(fd)
                free(c.data)
                c.data, c.size, c.cap = NULL, 0, 0
                continue
            c.size += got
            pos = 0
            out.size = 0
            while c.size - pos >= 4:
                size = load_i32(c.data + pos)
                if c.size - pos - 4 < size:
                    if reserve(c, size + 4 - (c.size - pos)) < 0:
                        raise MemoryError()
                    break
                done = answer_produce(c.data + pos + 4, size, &out, offset)
                if done < 0:
                    fallback_answer(fallback, c.data + pos + 4, size, &out)
                offset += 1
                pos += 4 + size
            if pos:
                memmove(c.data, c.data + pos, c.size - pos)
                c.size -= pos
            if out.size:
                with nogil:
                    send_all(fd, out.data, out.size)


cdef double now() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_MONOTONIC, &t)
    return t.tv_sec + t.tv_nsec * 1e-9


def drive(list fds, bytes frame, long total, int window):
    """Send ``frame`` ``total`` times spread over the connected sockets ``fds`` (non-blocking),
    each keeping up to ``window`` requests unanswered; returns (seconds, responses, response bytes).

    A response is counted from its size prefix only; as each turn's responses arrive, that many
    new requests leave in one ``send`` (a burst of ``window`` copies is built once).
    """
    cdef int nconn = len(fds)
    cdef Py_ssize_t flen = len(frame)
    cdef unsigned char *burst = <unsigned char*>malloc(flen * window)
    cdef long *left = <long*>calloc(nconn, sizeof(long))          # requests still to send
    cdef int32_t *need = <int32_t*>calloc(nconn, sizeof(int32_t))  # bytes of the response being read
    cdef unsigned char *head = <unsigned char*>calloc(nconn, 4)    # its size prefix so far
    cdef int *head_have = <int*>calloc(nconn, sizeof(int))
    cdef int *fd_of = <int*>calloc(nconn, sizeof(int))
    cdef unsigned char *buf = <unsigned char*>malloc(1 << 18)
    cdef epoll_event *events = <epoll_event*>malloc(MAX_EVENTS * sizeof(epoll_event))
    cdef epoll_event ev
    cdef int ep = epoll_create1(0)
    cdef long answered = 0, k, start
    cdef long long nbytes = 0
    cdef int i, j, n, failed = 0
    cdef ssize_t got, p, take
    cdef double t0, t1
    if not (burst and left and need and head and head_have and fd_of and buf and events) or ep < 0:
        raise MemoryError()
    for j in range(window):
        memcpy(burst + j * flen, PyBytes_AS_STRING(frame), flen)
    for i in range(nconn):
        fd_of[i] = fds[i]
    with nogil:
        t0 = now()
        for i in range(nconn):
            left[i] = total // nconn + (1 if i < total % nconn else 0)
            start = left[i] if left[i] < window else window
            left[i] -= start
            ev.events = EPOLLIN
            ev.data.u32 = i
            epoll_ctl(ep, EPOLL_CTL_ADD, fd_of[i], &ev)
            if send_all(fd_of[i], burst, start * flen) < 0:
                failed = 1
        while answered < total and not failed:
            n = epoll_wait(ep, events, MAX_EVENTS, 30000)
            if n <= 0:
                failed = 2
                break
            for j in range(n):
                i = events[j].data.u32
                got = recv(fd_of[i], buf, 1 << 18, 0)
                if got < 0 and (errno == EAGAIN or errno == EINTR):
                    continue
                if got <= 0:
                    failed = 3
                    break
                nbytes += got
                k = 0
                p = 0
                while p < got:
                    if head_have[i] < 4:
                        head[i * 4 + head_have[i]] = buf[p]
                        head_have[i] += 1
                        p += 1
                        if head_have[i] == 4:
                            need[i] = load_i32(head + i * 4)
                    else:
                        take = got - p if got - p < need[i] else need[i]
                        need[i] -= take
                        p += take
                    if head_have[i] == 4 and need[i] == 0:
                        head_have[i] = 0
                        k += 1
                answered += k
                if k > left[i]:
                    k = left[i]
                if k:
                    left[i] -= k
                    if send_all(fd_of[i], burst, k * flen) < 0:
                        failed = 1
                        break
        t1 = now()
    fd_close(ep)
    free(burst); free(left); free(need); free(head); free(head_have); free(fd_of); free(buf); free(events)
    if failed:
        raise ConnectionError(f"load generator failed ({failed}) after {answered} of {total} responses")
    return t1 - t0, answered, nbytes
