"""ApiVersions: the ranges this broker advertises.

Unsupported versions never reach here: the dispatcher answers them with a v0-shaped body
carrying UNSUPPORTED_VERSION (35) and the same ranges, as Kafka does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_api_versions"]


def handle_api_versions(ctx: RequestContext, req):
    """Every advertised (api_key, min, max); v3's client software name/version are accepted as given."""
    return ctx.services.advertised.api_versions_response(error_code=0)
