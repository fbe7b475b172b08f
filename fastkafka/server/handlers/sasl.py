"""SaslHandshake and SaslAuthenticate: a connection proves who it is (KIP-43, KIP-152, KIP-368).

The mechanism exchange itself lives in :mod:`fastkafka.security`; the connection's
:class:`~fastkafka.server.listener_security.Session` holds its progress. A failed
authentication is answered (SASL_AUTHENTICATION_FAILED, or UNSUPPORTED_SASL_MECHANISM)
``connection.failed.authentication.delay.ms`` later, reading nothing meanwhile, and the connection
closed behind the answer, as Kafka does: a guesser waits the delay for every answer. Outcomes are
counted per listener for Prometheus (Kafka's socket-server-metrics: successful and failed
(re-)authentications, re-authentication latency).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import time

from fastkafka import errors
from fastkafka.protocol import ApiKey
from fastkafka.security import AuthenticationFailed

from ..dispatch import DELAYED

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["SASL_RANGES"]

log = logging.getLogger("fastkafka.server")


def _fail_later(ctx: RequestContext, response) -> object:
    if ctx.metrics is not None:
        ctx.metrics.authentication_failed(ctx.listener, reauthentication=ctx.session.authenticated)
    ctx.send_then_close(response, ctx.session.security.failed_auth_delay_ms / 1000.0)
    return DELAYED


def handle_sasl_handshake(ctx: RequestContext, req):
    session = ctx.session
    security = session.security
    if not security.sasl:  # Kafka answers this on listeners without SASL
        return ctx.response(error_code=errors.IllegalSaslStateError.code, mechanisms=[])
    mechanism = req.mechanism
    enabled = list(security.mechanisms)
    if mechanism not in security.mechanisms:
        return _fail_later(ctx, ctx.response(error_code=errors.UnsupportedSaslMechanismError.code,
                                             mechanisms=enabled))
    if session.authenticated and (ctx.version == 0 or mechanism != session.mechanism):
        # KIP-368: re-authentication is SaslHandshake v1+ with the mechanism of the session
        return _fail_later(ctx, ctx.response(error_code=errors.IllegalSaslStateError.code,
                                             mechanisms=enabled))
    if session.authenticated:
        session.reauth_began = ctx.received     # Kafka's re-authentication latency starts here
    session.start(mechanism, raw_tokens=ctx.version == 0)
    return ctx.response(error_code=0, mechanisms=enabled)


def handle_sasl_authenticate(ctx: RequestContext, req):
    session = ctx.session
    if session.authenticator is None:
        return _fail_later(ctx, ctx.response(
            error_code=errors.IllegalSaslStateError.code,
            error_message="SaslAuthenticate without a SaslHandshake v1 first", auth_bytes=b""))
    reauthentication = session.authenticated
    try:
        reply = session.step(req.auth_bytes)
    except AuthenticationFailed as e:
        log.info("%s: SASL %s authentication failed: %s", ctx.request.connection_id, session.mechanism, e)
        return _fail_later(ctx, ctx.response(
            error_code=e.code, auth_bytes=b"",
            error_message=e.client_message(session.mechanism, reauthentication=reauthentication)))
    lifetime = session.lifetime_ms() if session.authenticator is None else 0
    if session.authenticator is None and ctx.metrics is not None:
        if reauthentication:
            ctx.metrics.reauthenticated(ctx.listener, time.monotonic() - session.reauth_began)
        else:   # KIP-368: SaslAuthenticate v1+ is a client that can re-authenticate
            ctx.metrics.authenticated(ctx.listener, can_reauthenticate=ctx.version > 0)
    if reauthentication and session.authenticator is None:
        log.info("%s: %s re-authenticated (SASL %s), session lifetime %d ms", ctx.request.connection_id,
                 session.principal, session.mechanism, lifetime)
    return ctx.response(error_code=0, auth_bytes=reply, session_lifetime_ms=lifetime)


SASL_RANGES = {
    ApiKey.SASL_HANDSHAKE: (handle_sasl_handshake, 0, 1),
    ApiKey.SASL_AUTHENTICATE: (handle_sasl_authenticate, 0, 2),
}
