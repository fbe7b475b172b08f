"""What each listener asks of its connections: TLS, SASL mechanisms, and who a client is.

A listener's security protocol comes from ``listener.security.protocol.map``; every ``ssl.*`` and
``sasl.*`` property may be set per listener (``listener.name.<l>.<property>``), as in Kafka.
PLAIN's users come from the listener's JAAS config
(``listener.name.<l>.plain.sasl.jaas.config`` with ``user_<name>="<password>"`` options); SCRAM's
salted credentials from the user store (``/config/users/<user>`` in ZooKeeper, the metadata file
when embedded).

Each connection gets a :class:`Session`: its principal (``User:ANONYMOUS`` on PLAINTEXT, the
certificate subject on SSL with a client certificate, the SASL user once authenticated) and, on
SASL listeners, the authentication state the dispatcher gates requests on.

Brokers are each other's clients on the inter-broker listener (``inter.broker.listener.name``, or
the listener named like ``security.inter.broker.protocol``): :func:`inter_broker_security` gives
the :class:`ClientSecurity` a follower fetches with — that listener's ``ssl.*`` (trust store; the
key store as client certificate) and ``sasl.mechanism.inter.broker.protocol`` with the username
and password of the listener's ``listener.name.<l>.<mechanism>.sasl.jaas.config``, as Kafka does.

Example::

    >>> from fastkafka.config import KafkaConfig
    >>> cfg = KafkaConfig({"listeners": "PLAINTEXT://:0", "sasl.enabled.mechanisms": "PLAIN"})
    >>> sec = listener_security(cfg, [("PLAINTEXT", "", 0)], scram_credentials=None)["PLAINTEXT"]
    >>> sec.protocol, sec.ssl_context, Session(sec).principal
    ('PLAINTEXT', None, 'User:ANONYMOUS')
"""
from __future__ import annotations

import ssl
import time
from typing import Callable

from fastkafka.security import MECHANISMS as SCRAM_MECHANISMS
from fastkafka.security import (AuthenticationFailed, PlainServer, ScramCredential, ScramServer,
                                parse_jaas_config, plain_users)
from fastkafka.client.security import ClientSecurity
from fastkafka.security.principal_mapping import PrincipalMapper
from fastkafka.security.tls import TlsConfigError, client_context, principal_name, server_context
from fastkafka.config.definitions import (INTER_BROKER_LISTENER_NAME, LISTENER_SECURITY_PROTOCOL_MAP,
                                          SASL_MECHANISM_INTER_BROKER_PROTOCOL, SECURITY_INTER_BROKER_PROTOCOL)

__all__ = ["ListenerSecurity", "Session", "listener_security", "inter_broker_security",
           "SecurityConfigError", "PROTOCOLS", "SASL_MECHANISMS"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN",) + SCRAM_MECHANISMS
ANONYMOUS = "User:ANONYMOUS"

# user, mechanism -> the stored credential (None: no such user)
ScramLookup = Callable[[str, str], "ScramCredential | None"]


class SecurityConfigError(ValueError):
    """A listener's security settings cannot work; the message names the property."""


class ListenerSecurity:
    """One listener's security: immutable after start-up, shared by its connections."""

    __slots__ = ("name", "protocol", "ssl_context", "mechanisms", "plain_users", "scram_credentials",
                 "reauth_ms", "failed_auth_delay_ms", "principal_mapper")

    def __init__(self, name: str, protocol: str, ssl_context: ssl.SSLContext | None = None,
                 mechanisms: tuple[str, ...] = (), plain_users: dict[str, str] | None = None,
                 scram_credentials: ScramLookup | None = None, reauth_ms: int = 0,
                 failed_auth_delay_ms: int = 100, principal_mapper: PrincipalMapper | None = None):
        self.name = name
        self.protocol = protocol
        self.ssl_context = ssl_context
        self.mechanisms = mechanisms
        self.plain_users = plain_users or {}
        self.scram_credentials = scram_credentials
        self.reauth_ms = reauth_ms
        self.failed_auth_delay_ms = failed_auth_delay_ms
        self.principal_mapper = principal_mapper or PrincipalMapper.parse("DEFAULT")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def mechanism_server(self, mechanism: str):
        """A fresh server side of ``mechanism`` (one of :attr:`mechanisms`)."""
        if mechanism == "PLAIN":
            return PlainServer(self.plain_users.get)
        lookup = self.scram_credentials
        return ScramServer(mechanism, lambda user: lookup(user, mechanism) if lookup else None)


class Session:
    """One connection's identity and SASL progress. Touched by the thread handling the
    connection's current request only (one request in flight per connection)."""

    __slots__ = ("security", "principal", "mechanism", "authenticator", "expects_raw_token",
                 "authenticated", "expires_at", "reauth_began")

    def __init__(self, security: ListenerSecurity, peer_cert: dict | None = None):
        """NoMatchingRule when ``ssl.principal.mapping.rules`` cannot name the certificate."""
        self.security = security
        self.principal = ANONYMOUS if peer_cert is None else \
            "User:" + security.principal_mapper.name(principal_name(peer_cert))
        self.mechanism: str | None = None
        self.authenticator = None          # the mechanism's server while a SASL exchange runs
        self.expects_raw_token = False     # SaslHandshake v0: the next frame is a bare token
        self.authenticated = not security.sasl
        self.expires_at = 0.0              # monotonic end of a SASL session (0: none)
        self.reauth_began = 0.0            # when the running re-authentication's SaslHandshake came

    def expired(self, now: float) -> bool:
        return self.expires_at != 0.0 and now >= self.expires_at

    def start(self, mechanism: str, raw_tokens: bool) -> None:
        """SaslHandshake accepted ``mechanism``; the exchange follows."""
        self.mechanism = mechanism
        self.authenticator = self.security.mechanism_server(mechanism)
        self.expects_raw_token = raw_tokens

    def step(self, token: bytes) -> bytes:
        """Feed one client token; returns the server's. Raises the mechanism's
        ``AuthenticationFailed``. When the exchange completes the session is authenticated."""
        auth = self.authenticator
        if auth is None:
            raise AuthenticationFailed("no SASL handshake preceded this token")
        reply = auth.step(bytes(token))
        if auth.complete:
            user = "User:" + auth.username
            if self.authenticated and user != self.principal:  # KIP-368: re-authenticate as yourself
                raise AuthenticationFailed(f"re-authentication changed the principal from {self.principal} to {user}")
            self.principal = user
            self.authenticated = True
            self.authenticator = None
            self.expects_raw_token = False
            ms = self.security.reauth_ms
            self.expires_at = time.monotonic() + ms / 1000.0 if ms else 0.0
        return reply

    def lifetime_ms(self) -> int:
        """``session_lifetime_ms`` of SaslAuthenticate v1+: what is left of the session (0: unlimited)."""
        if not self.expires_at:
            return 0
        return max(1, int((self.expires_at - time.monotonic()) * 1000))


def _protocol_map(entries: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in entries:
        name, sep, proto = pair.partition(":")
        if not sep:
            raise SecurityConfigError(f"listener.security.protocol.map: {pair!r} is not NAME:PROTOCOL")
        proto = proto.strip().upper()
        if proto not in PROTOCOLS:
            raise SecurityConfigError(f"listener.security.protocol.map: {proto} is not one of "
                                      f"{', '.join(PROTOCOLS)}")
        mapping[name.strip().upper()] = proto
    return mapping


def _jaas_options(cfg, listener: str, mechanism: str, why: str) -> dict[str, str]:
    """The options of ``listener.name.<l>.<mechanism>.sasl.jaas.config`` (else the listener's or
    the broker's ``sasl.jaas.config``)."""
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = cfg.originals.get(key)
    if text is None:
        text = cfg.for_listener(listener, "sasl.jaas.config")
    if not text:
        raise SecurityConfigError(f"listener {listener} {why} but has no {key}")
    try:
        return parse_jaas_config(str(text)).options
    except ValueError as e:
        raise SecurityConfigError(f"{key}: {e}") from None


def _plain_users(cfg, listener: str) -> dict[str, str]:
    """``user_<name>`` options of the listener's PLAIN JAAS config."""
    return plain_users(_jaas_options(cfg, listener, "PLAIN", "offers PLAIN"))


def inter_broker_security(cfg) -> tuple[str, ClientSecurity]:
    """(the inter-broker listener's name, how this broker connects to the others on it)."""
    named, protocol_name = cfg[INTER_BROKER_LISTENER_NAME], cfg[SECURITY_INTER_BROKER_PROTOCOL]
    if named and "security.inter.broker.protocol" in cfg.originals:
        raise SecurityConfigError("Only one of inter.broker.listener.name and "
                                  "security.inter.broker.protocol should be set.")
    listener = (named or protocol_name).upper()
    protocol = _protocol_map(cfg[LISTENER_SECURITY_PROTOCOL_MAP]).get(listener)
    if protocol is None:
        raise SecurityConfigError(f"inter-broker listener {listener} has no security protocol in "
                                  "listener.security.protocol.map")
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        try:
            context = client_context(lambda key: cfg.for_listener(listener, key))
        except TlsConfigError as e:
            raise SecurityConfigError(f"inter-broker listener {listener}: {e}") from None
    mechanism = username = password = None
    if protocol.startswith("SASL_"):
        mechanism = cfg[SASL_MECHANISM_INTER_BROKER_PROTOCOL].upper()
        if mechanism not in SASL_MECHANISMS:
            raise SecurityConfigError(f"sasl.mechanism.inter.broker.protocol={mechanism}: fastkafka "
                                      f"offers {', '.join(SASL_MECHANISMS)}")
        options = _jaas_options(cfg, listener, mechanism, "is the inter-broker listener")
        username, password = options.get("username"), options.get("password")
        if username is None or password is None:
            raise SecurityConfigError(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config "
                                      "needs username and password options: the broker logs in with them")
    return listener, ClientSecurity(protocol, context, mechanism, username, password)


def listener_security(cfg, listeners: list[tuple[str, str, int]],
                      scram_credentials: ScramLookup | None) -> dict[str, ListenerSecurity]:
    """Every listener's :class:`ListenerSecurity`; SecurityConfigError names what cannot work."""
    mapping = _protocol_map(cfg[LISTENER_SECURITY_PROTOCOL_MAP])
    out = {}
    for name, _host, _port in listeners:
        proto = mapping.get(name)
        if proto is None:
            raise SecurityConfigError(f"No security protocol defined for listener {name}")
        get = lambda key, _n=name: cfg.for_listener(_n, key)  # noqa: E731
        context = None
        mapper = None
        if proto in ("SSL", "SASL_SSL"):
            try:
                context = server_context(get)
                mapper = PrincipalMapper.parse(get("ssl.principal.mapping.rules"))
            except TlsConfigError as e:
                raise SecurityConfigError(f"listener {name}: {e}") from None
            except ValueError as e:
                raise SecurityConfigError(f"listener {name}: ssl.principal.mapping.rules: {e}") from None
        mechanisms: tuple[str, ...] = ()
        plain = {}
        if proto.startswith("SASL_"):
            mechanisms = tuple(m.strip().upper() for m in get("sasl.enabled.mechanisms"))
            unsupported = [m for m in mechanisms if m not in SASL_MECHANISMS]
            if unsupported or not mechanisms:
                raise SecurityConfigError(
                    f"listener {name}: sasl.enabled.mechanisms={','.join(mechanisms)}: "
                    f"{', '.join(unsupported) or 'none given'} cannot be served (fastkafka offers "
                    f"{', '.join(SASL_MECHANISMS)})")
            if "PLAIN" in mechanisms:
                plain = _plain_users(cfg, name)
        out[name] = ListenerSecurity(
            name, proto, context, mechanisms, plain, scram_credentials,
            reauth_ms=get("connections.max.reauth.ms"),
            failed_auth_delay_ms=get("connection.failed.authentication.delay.ms"), principal_mapper=mapper)
    return out
