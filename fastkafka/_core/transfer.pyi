def sendfile_step(out_fd: int, in_fd: int, offset: int, count: int) -> int:
    """Send up to ``count`` bytes of ``in_fd`` from ``offset`` to ``out_fd``; 0 when it would block."""
    ...

def frame_buffer(size: int) -> bytearray:
    """A bytearray of ``size`` bytes with uninitialised contents (to be overwritten by ``recv_into``)."""
    ...
