# The sendfile step: move bytes from a file (page cache) to a socket without passing through Python.
# Contract: ``sendfile_step(out_fd, in_fd, offset, count)`` sends at most ``count`` bytes of ``in_fd``
# starting at ``offset`` (the file position is not used or moved) and returns how many it sent;
# 0 means the socket would block (EAGAIN) — try again when it is writable. EINTR is retried.
# A file shorter than offset+count raises EOFError; other errors raise OSError. GIL released.
cpdef Py_ssize_t sendfile_step(int out_fd, int in_fd, long long offset, Py_ssize_t count) except -1
# ``frame_buffer(size)``: a bytearray of ``size`` uninitialised bytes, to be filled by recv_into.
cpdef bytearray frame_buffer(Py_ssize_t size)
