"""Kafka's wire protocol, sans I/O: schemas declared once, codecs generated, framing, headers.

Nothing here touches a socket; the server, our client and the tests all drive it with bytes.

Broker side::

    >>> from fastkafka import protocol as P
    >>> wire = P.encode_request(P.ApiKey.METADATA, 1, 42, {"topics": [{"name": "t"}]}, "cli")
    >>> frames = P.FrameDecoder().feed(wire)
    >>> header, req = P.parse_request(frames[0])
    >>> header.correlation_id, [t.name for t in req.topics]
    (42, ['t'])
    >>> chunks = P.encode_response(header.api_key, header.api_version, header.correlation_id,
    ...                            {"brokers": [{"node_id": 0, "host": "h", "port": 9092}]})
    >>> corr, resp = P.decode_response(P.ApiKey.METADATA, 1, b"".join(chunks)[4:])
    >>> corr, resp.brokers[0].port, resp.controller_id
    (42, 9092, -1)

Objects are generated ``__slots__`` classes (``P.APIS[key].request`` / ``.response``, nested
struct classes as attributes such as ``ProduceResponse.Responses``); encoders also accept dicts.
A Fetch response's ``records`` may be bytes, a :class:`Region` (anything with ``len``) or a list
of both; :func:`encode_response` then returns chunks with the regions in place for sendfile.
"""
from __future__ import annotations

from . import messages  # noqa: F401  (declares every API before the codecs are built)
from .api_versions import API_NAMES, SUPPORTED, Advertised, ApiKey, encode_api_versions_error
from .codec import Codec, build_all, codec_for
from .error_responses import error_response
from .framing import DEFAULT_MAX_REQUEST_BYTES, FrameDecoder, frame
from .headers import RequestHeader, read_request_header
from .schema import APIS
from .types import FramingError, ProtocolError, Region

build_all()
codec = codec_for     # short alias (shadows the ``codec`` submodule attribute, not its import)

__all__ = [
    "APIS", "API_NAMES", "SUPPORTED", "Advertised", "ApiKey", "Codec", "codec", "codec_for",
    "DEFAULT_MAX_REQUEST_BYTES", "FrameDecoder", "frame", "FramingError", "ProtocolError",
    "Region", "RequestHeader", "read_request_header", "decode_request", "parse_request",
    "encode_request", "decode_response", "encode_response", "error_response",
    "encode_api_versions_error",
]


def decode_request(api_key: int, version: int, buf, pos: int = 0):
    """Decode a request body (``buf[pos:]``) of ``(api_key, version)``.

    Raises :class:`ProtocolError` for malformed bytes or an unknown API key and
    ``errors.UnsupportedVersionError`` for a version we do not declare.
    """
    return codec_for(api_key, version).decode_request(buf, pos)


def parse_request(frame_payload) -> tuple[RequestHeader, object]:
    """``(header, request)`` from one frame's payload (as returned by :class:`FrameDecoder`)."""
    header, pos = read_request_header(frame_payload)
    return header, codec_for(header.api_key, header.api_version).decode_request(frame_payload, pos)


def encode_request(api_key: int, version: int, correlation_id: int, obj,
                   client_id: str | None = "fastkafka") -> bytearray:
    """A complete size-prefixed request frame."""
    return codec_for(api_key, version).encode_request(correlation_id, obj, client_id)


def encode_response(api_key: int, version: int, correlation_id: int, obj) -> list:
    """A complete size-prefixed response frame as a list of chunks (bytes-likes and regions)."""
    return codec_for(api_key, version).encode_response(correlation_id, obj)


def decode_response(api_key: int, version: int, frame_payload) -> tuple[int, object]:
    """``(correlation_id, response)`` from one response frame's payload."""
    return codec_for(api_key, version).decode_response_frame(frame_payload)
