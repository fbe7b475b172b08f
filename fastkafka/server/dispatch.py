"""The one boundary between frames and handlers: header, version check, decode, handle, encode.

Every request passes through :meth:`Dispatcher.handle`, which guarantees the request is
completed exactly once — with a response, with nothing (acks=0), or by closing the connection —
whatever the bytes were and whatever the handler raised (DESIGN §10):

* unparsable header, unknown API key, undecodable body → close the connection (Kafka does too:
  the stream can no longer be trusted);
* a version we do not advertise → ApiVersions answers with error 35 and our ranges; any other
  API closes the connection;
* a handler exception → the API's whole-request error response with the exception's Kafka code
  (``UNKNOWN_SERVER_ERROR`` and a logged traceback for anything that is not a KafkaError);
* on a SASL listener, until the client has authenticated only ApiVersions, SaslHandshake and
  SaslAuthenticate pass (anything else closes the connection, as Kafka's authenticator does);
  after SaslHandshake v0 the next frame is a bare token, not a request; a session past
  ``connections.max.reauth.ms`` is closed at its next request unless it re-authenticates;
* while any client quota is configured, each request is charged to its user and client id
  and its response maybe throttled (:mod:`.quotas`); with none, that costs one attribute test.

Handlers are ``handle_<api>(ctx, request) -> response | None | DELAYED``; ``None`` means no
response (Produce acks=0), ``DELAYED`` that the handler will call :meth:`RequestContext.send`
later (a long-polling Fetch).

In cluster mode the transaction coordinator's requests (``WAITING_APIS``) are handled on threads
of their own (``waiting_threads``): they wait for their writes to replicate and for other
leaders' markers, and the thread that decoded them — by default a network processor, which
also serves the followers' fetches those waits need — must not be held meanwhile.
"""
from __future__ import annotations

import logging
import time
from functools import partial
from typing import Callable

from fastkafka import errors
from fastkafka import protocol as P
from fastkafka.security import AuthenticationFailed

from .authorizer import CLUSTER_NAME, NOT_REQUESTED, AclOperation, ResourceType, every_operation
from .metrics import BrokerMetrics
from .quotas import ClientQuotas, RequestQuota
from .request_channel import RequestChannel
from .services import BrokerServices

__all__ = ["Dispatcher", "RequestContext", "DELAYED", "WAITING_APIS"]

WAITING_APIS = frozenset({P.ApiKey.INIT_PRODUCER_ID, P.ApiKey.ADD_PARTITIONS_TO_TXN, P.ApiKey.ADD_OFFSETS_TO_TXN,
                          P.ApiKey.END_TXN, P.ApiKey.TXN_OFFSET_COMMIT})

log = logging.getLogger("fastkafka.server")
request_log = logging.getLogger("fastkafka.server.requests")

DELAYED = object()
# what a client may send before it has authenticated (or to re-authenticate)
_SASL_APIS = frozenset((P.ApiKey.API_VERSIONS, P.ApiKey.SASL_HANDSHAKE, P.ApiKey.SASL_AUTHENTICATE))


class RequestContext:
    """What a handler knows about its request besides the body. ``send`` may be called from any thread."""

    __slots__ = ("request", "header", "codec", "services", "received", "session", "quota", "metrics", "started",
                 "returned")

    def __init__(self, request, header: P.RequestHeader, codec: P.Codec, services: BrokerServices):
        self.request = request
        self.header = header
        self.codec = codec
        self.services = services         # what the handler may reach of the broker
        self.received = request.received
        self.session = request.session   # who the client is (listener_security.Session)
        self.quota: RequestQuota | None = None       # while client quotas apply
        self.metrics: BrokerMetrics | None = None    # while metrics.port is set
        self.started = self.returned = 0.0   # handler called / returned (time.monotonic), for metrics

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def listener(self) -> str:
        return self.request.listener

    @property
    def client_host(self) -> str:
        return self.request.conn.peer[0]

    # --- authorization (always allowed when the broker has no authorizer) ---
    def authorize(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        """Whether this request's principal may do ``op`` on the resource ``rtype:name``."""
        auth = self.services.authorizer
        return auth is None or auth.authorize(self.session.principal, self.client_host, op, rtype, name)

    def authorize_cluster(self, op: AclOperation) -> bool:
        return self.authorize(op, ResourceType.CLUSTER, CLUSTER_NAME)

    def authorize_any(self, op: AclOperation, rtype: ResourceType) -> bool:
        """Whether ``op`` is allowed on at least one resource of ``rtype``."""
        auth = self.services.authorizer
        return auth is None or auth.authorize_any(self.session.principal, self.client_host, op, rtype)

    def authorized_operations(self, rtype: ResourceType, name: str, asked: bool) -> int:
        """KIP-430's field: the operations allowed on ``rtype:name`` when ``asked``."""
        if not asked:
            return NOT_REQUESTED
        auth = self.services.authorizer
        if auth is None:
            return every_operation(rtype)
        return auth.operations(self.session.principal, self.client_host, rtype, name)

    def response(self, **fields):
        """This API's generated response class filled with ``fields`` (the rest take their
        defaults): what a handler returns. Nested classes hang off it (``ctx.codec.api.response``)."""
        return self.codec.api.response(**fields)

    def send(self, response) -> None:
        """Encode ``response`` and queue it on the connection (or nothing for ``None``);
        under a client quota, charged and maybe throttled."""
        if self.metrics is not None:
            self._record_time(self.metrics, response is not None)
        if self.quota is not None:
            self.quota.send(self, response)
            return
        if response is None:
            self.request.no_response()
            return
        chunks = self.encode(response)
        if chunks is not None:
            self.request.respond(chunks)

    def _record_time(self, metrics: BrokerMetrics, on_the_wire: bool) -> None:
        """The request's times, recorded once its response has left (at once without one)."""
        now = time.monotonic()
        # a delayed response may be sent before its handler has returned (completed at once)
        done = partial(metrics.request_done, self.header.api_key, self.received, self.started or now,
                       self.returned or now, now)
        if on_the_wire:
            self.request.on_response_sent(done)
        else:
            done(now)

    def send_then_close(self, response, delay_s: float) -> None:
        """Answer ``delay_s`` from now, then close the connection (a failed authentication)."""
        if self.metrics is not None:
            self._record_time(self.metrics, True)
        chunks = self.encode(response)
        if chunks is not None:
            self.request.respond_then_close(chunks, delay_s)

    def encode(self, response) -> list | None:
        """The response frame's chunks, or None after closing the connection (unencodable)."""
        try:
            return self.codec.encode_response(self.header.correlation_id, response)
        except Exception:
            log.exception("cannot encode %s v%d response; closing the connection",
                          P.API_NAMES.get(self.header.api_key), self.version)
            self.request.close_connection()
            return None


class Dispatcher:
    """Thread-safe: called concurrently by processors (inline) or handler threads."""

    def __init__(self, handlers: dict[int, Callable], advertised: P.Advertised, quotas: ClientQuotas,
                 waiting_threads: int = 0, metrics: BrokerMetrics | None = None):
        self.services: BrokerServices | None = None    # set by the broker before the first request is read
        self.metrics = metrics
        self._handlers = handlers
        self.advertised = advertised
        self.quotas = quotas
        self._waiting = RequestChannel(self._call_waiting, waiting_threads) if waiting_threads > 0 else None

    def shutdown(self, timeout: float = 5.0) -> None:
        if self._waiting is not None:
            self._waiting.shutdown(timeout)

    def handle(self, request) -> None:
        frame = request.frame
        session = request.session
        if session.expects_raw_token:
            self._raw_sasl_token(request, session)
            return
        try:
            header, pos = P.read_request_header(frame)
        except P.ProtocolError as e:
            log.info("closing %s: unreadable request header (%s)", request.connection_id, e)
            request.close_connection()
            return
        key, version = header.api_key, header.api_version
        if (not session.authenticated or session.expires_at) and key not in _SASL_APIS:
            if not session.authenticated:
                log.info("closing %s: unexpected %s request during SASL authentication",
                         request.connection_id, P.API_NAMES.get(key, f"api key {key}"))
                if self.metrics is not None:     # Kafka's IllegalSaslStateException: a failed authentication
                    self.metrics.authentication_failed(request.listener)
                request.close_connection()
                return
            if session.expired(time.monotonic()):
                log.info("closing %s: its SASL session expired without re-authentication "
                         "(connections.max.reauth.ms)", request.connection_id)
                request.close_connection()
                return
        if not self.advertised.supports(key, version):
            if key == P.ApiKey.API_VERSIONS:
                request.respond(P.encode_api_versions_error(header.correlation_id, self.advertised))
            else:
                log.info("closing %s: %s v%d is not supported", request.connection_id,
                         P.API_NAMES.get(key, f"api key {key}"), version)
                request.close_connection()
            return
        codec = P.codec(key, version)
        try:
            body = codec.decode_request(frame, pos)
        except P.ProtocolError as e:
            log.info("closing %s: malformed %s v%d request (%s)", request.connection_id,
                     P.API_NAMES[key], version, e)
            request.close_connection()
            return
        assert self.services is not None, "requests are read only once the broker's services exist"
        ctx = RequestContext(request, header, codec, self.services)
        ctx.metrics = self.metrics
        if self.quotas.enabled:
            ctx.quota = self.quotas.track(request, header, body)
        if request_log.isEnabledFor(logging.DEBUG):
            request_log.debug("%s v%d corr=%d from %s", P.API_NAMES[key], version,
                              header.correlation_id, request.connection_id)
        if self._waiting is not None and key in WAITING_APIS:
            self._waiting.submit((ctx, body))
            return
        self._call(ctx, body)

    def _call_waiting(self, item) -> None:
        self._call(*item)

    def _call(self, ctx: "RequestContext", body) -> None:
        """Run the handler and send what it answers (or the API's error response)."""
        request, header = ctx.request, ctx.header
        key, version = header.api_key, header.api_version
        metrics = ctx.metrics
        if metrics is not None:
            ctx.started = time.monotonic()
        try:
            response = self._handlers[key](ctx, body)
        except Exception as e:
            if not isinstance(e, errors.KafkaError):
                log.exception("%s v%d handler failed", P.API_NAMES[key], version)
            response = self._error_response(key, version, body, e)
            if response is None:
                request.close_connection()
                return
        if metrics is not None:
            ctx.returned = time.monotonic()
        if response is DELAYED:
            if ctx.quota is not None:
                ctx.quota.handler_returned()
            return
        ctx.send(response)
        if request_log.isEnabledFor(logging.DEBUG):
            request_log.debug("%s v%d corr=%d done in %.3f ms", P.API_NAMES[key], version,
                              header.correlation_id, (time.monotonic() - request.received) * 1000)

    def _raw_sasl_token(self, request, session) -> None:
        """SaslHandshake v0's exchange: bare size-prefixed tokens both ways; failure closes."""
        try:
            reply = session.step(request.frame)
        except AuthenticationFailed as e:
            log.info("closing %s: SASL authentication failed: %s", request.connection_id, e)
            if self.metrics is not None:
                self.metrics.authentication_failed(request.listener)
            request.close_connection(session.security.failed_auth_delay_ms / 1000.0)
            return
        if session.authenticator is None and self.metrics is not None:
            # done; the unframed exchange predates re-authentication (KIP-368)
            self.metrics.authenticated(request.listener, can_reauthenticate=False)
        request.respond([len(reply).to_bytes(4, "big"), reply])

    def _error_response(self, key: int, version: int, body, exc: BaseException):
        try:
            return P.error_response(key, version, body, errors.code_of(exc), str(exc) or None,
                                    advertised=self.advertised)
        except Exception:
            log.exception("cannot build the error response of %s v%d", P.API_NAMES[key], version)
            return None
