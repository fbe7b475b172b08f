"""Request and response headers.

Byte layouts::

    request header v0   api_key int16, api_version int16, correlation_id int32
    request header v1   v0 + client_id nullable string (int16 length, even in v2)
    request header v2   v1 + tagged fields
    response header v0  correlation_id int32
    response header v1  v0 + tagged fields

An (api, version) uses header v2/v1 exactly when its body is flexible, with one exception:
the ApiVersions *response* header is always v0, because a client that sent a version the broker
does not know must still be able to read the correlation id of the error response.

Example::

    >>> out = bytearray(); write_request_header(out, 18, 3, 7, "cli", 2); bytes(out)
    b'\\x00\\x12\\x00\\x03\\x00\\x00\\x00\\x07\\x00\\x03cli\\x00'
    >>> h, pos = read_request_header(memoryview(bytes(out))); (h.api_key, h.correlation_id, pos)
    (18, 7, 14)
"""
from __future__ import annotations

import struct

from . import types as T
from .schema import APIS

__all__ = ["RequestHeader", "read_request_header", "write_request_header",
           "read_response_header", "write_response_header",
           "request_header_version", "response_header_version"]

API_VERSIONS_KEY = 18
# ControlledShutdown v0 is the one request that used header v0; we never declare it.
_HEADER_V0_REQUESTS = {(7, 0)}
_FIXED = struct.Struct(">hhi")
_CORR = struct.Struct(">i")
_read_nstring = T.READERS["string", False, True]
_write_nstring = T.WRITERS["string", False, True]


def _flexible(api_key: int, version: int) -> bool:
    # Follow the API's flexible threshold even past the versions we declare, so the header of
    # e.g. an ApiVersions v4 request still parses and can be answered with UNSUPPORTED_VERSION.
    api = APIS.get(api_key)
    return api is not None and api.flexible(version)


def request_header_version(api_key: int, version: int) -> int:
    if (api_key, version) in _HEADER_V0_REQUESTS:
        return 0
    return 2 if _flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if _flexible(api_key, version) else 0


class RequestHeader:
    """A decoded request header; ``size`` is how many bytes it took."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "header_version")

    def __init__(self, api_key, api_version, correlation_id, client_id=None, header_version=1):
        self.api_key, self.api_version = api_key, api_version
        self.correlation_id, self.client_id = correlation_id, client_id
        self.header_version = header_version

    def __repr__(self):
        return (f"RequestHeader(api_key={self.api_key}, api_version={self.api_version}, "
                f"correlation_id={self.correlation_id}, client_id={self.client_id!r})")


def read_request_header(frame) -> tuple[RequestHeader, int]:
    """Decode the header at the start of a request frame (size prefix already removed).

    Returns the header and the offset of the body. Raises :class:`~.types.ProtocolError` if the
    frame is too short; unknown API keys are *not* an error here (the caller answers them).
    """
    if not isinstance(frame, memoryview):
        frame = memoryview(frame)
    if len(frame) < 8:
        raise T.ProtocolError(f"request header needs 8 bytes, got {len(frame)}")
    api_key, version, correlation_id = _FIXED.unpack_from(frame, 0)
    hv = request_header_version(api_key, version)
    header = RequestHeader(api_key, version, correlation_id, None, hv)
    pos = 8
    if hv >= 1:
        try:
            header.client_id, pos = _read_nstring(frame, pos)
            if hv >= 2:
                pos = T.skip_tagged_fields(frame, pos)
        except (struct.error, ValueError) as exc:
            raise T.ProtocolError(f"malformed request header: {exc}") from None
    return header, pos


def write_request_header(out: bytearray, api_key: int, version: int, correlation_id: int,
                         client_id: str | None, header_version: int) -> None:
    out += _FIXED.pack(api_key, version, correlation_id)
    if header_version >= 1:
        _write_nstring(out, client_id)
        if header_version >= 2:
            out.append(0)


def read_response_header(frame, header_version: int) -> tuple[int, int]:
    """``(correlation_id, body_offset)`` of a response frame (size prefix removed)."""
    try:
        (correlation_id,) = _CORR.unpack_from(frame, 0)
        return correlation_id, (T.skip_tagged_fields(frame, 4) if header_version >= 1 else 4)
    except struct.error as exc:
        raise T.ProtocolError(f"malformed response header: {exc}") from None


def write_response_header(out: bytearray, correlation_id: int, header_version: int) -> None:
    out += _CORR.pack(correlation_id)
    if header_version >= 1:
        out.append(0)
