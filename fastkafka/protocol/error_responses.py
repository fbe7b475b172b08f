"""The response an API returns when a whole request fails (Kafka's ``getErrorResponse``).

Generic over the schema: every ``error_code`` field (or ``<x>_error_code``, as
AddPartitionsToTxn's ``partition_error_code``) gets the code, every response array marked
``<src`` gets one element per element of the request's ``src`` array (recursively), and scalar
fields marked ``<src`` copy the request's value, so e.g. each Produce partition is answered.

Example::

    >>> from fastkafka.protocol import APIS, ApiKey
    >>> req = APIS[ApiKey.PRODUCE].request(topic_data=[
    ...     {"name": "t", "partition_data": [{"index": 0}, {"index": 1}]}])
    >>> resp = error_response(ApiKey.PRODUCE, 7, req, 29)
    >>> [(p.index, p.error_code) for p in resp.responses[0].partition_responses]
    [(0, 29), (1, 29)]
"""
from __future__ import annotations

from typing import Any

from .api_versions import Advertised, ApiKey
from .schema import APIS, Struct

__all__ = ["error_response"]


def _get(src, name):
    # Requests built by hand may hold dicts; decoded ones hold generated objects.
    return src.get(name) if isinstance(src, dict) else getattr(src, name, None)


def _fill(struct: Struct, version: int, src, code: int, message):
    values: dict[str, Any] = {}
    for f in struct.present_fields(version):
        if f.name == "error_code" or f.name.endswith("_error_code"):
            values[f.name] = code
        elif f.name == "error_message" and message is not None:
            values[f.name] = message
        elif f.src is not None:
            if f.type == "array" and f.struct is not None:
                items = _get(src, f.src) if src is not None else None
                values[f.name] = [_fill(f.struct, version, item, code, message)
                                  for item in items or ()]
            elif src is not None:
                value = src if f.src == "." else _get(src, f.src)
                # a null the request may carry where the response may not (Metadata v10-11's
                # topic name): the field's default instead
                if value is not None or f.nullable(version):
                    values[f.name] = value
    return struct.cls(**values)


def error_response(api_key: int, version: int, request, error_code: int,
                   message: str | None = None, advertised: Advertised | None = None):
    """The response object for ``request`` failing as a whole with ``error_code``.

    ``request`` may be ``None`` when its body could not be decoded (arrays come back empty).
    ApiVersions answers with the ``advertised`` ranges, as Kafka does for every error.
    """
    api = APIS[api_key]
    if api_key == ApiKey.API_VERSIONS:
        return (advertised or Advertised.everything()).api_versions_response(error_code)
    return _fill(api.response_struct, version, request, error_code, message)
