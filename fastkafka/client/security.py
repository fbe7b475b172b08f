"""How our client reaches a secured listener: ``security.protocol``, ``ssl.*`` and ``sasl.*``
with Kafka's (Java client's) property names, and librdkafka's spellings as aliases.

``SSL``/``SASL_SSL`` wrap the socket in TLS (the broker checked against
``ssl.truststore.location``, its host name too unless ``ssl.endpoint.identification.algorithm``
is empty); ``SASL_*`` then authenticate with SaslHandshake v1 + SaslAuthenticate (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512) right after ApiVersions, as Kafka's clients do, and again on the
same connection before the session lifetime the broker answers runs out (KIP-368,
:class:`fastkafka.client.connection.BrokerConnection`).

Example::

    >>> from fastkafka.client.config import ClientConfig
    >>> s = ClientSecurity.from_config(ClientConfig({"security.protocol": "SASL_PLAINTEXT",
    ...     "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": "pw"}))
    >>> s.protocol, s.mechanism, s.ssl_context is None
    ('SASL_PLAINTEXT', 'SCRAM-SHA-256', True)
"""
from __future__ import annotations

import socket
import ssl

from fastkafka import errors
from fastkafka.config import ConfigException
from fastkafka.protocol import ApiKey
from fastkafka.security import MECHANISMS as SCRAM_MECHANISMS
from fastkafka.security import AuthenticationFailed, PlainClient, ScramClient, parse_jaas_config
from fastkafka.security.tls import TlsConfigError, client_context

__all__ = ["ClientSecurity"]


class ClientSecurity:
    """Immutable; shared by every connection of one client."""

    __slots__ = ("protocol", "ssl_context", "mechanism", "username", "password")

    def __init__(self, protocol: str = "PLAINTEXT", ssl_context: ssl.SSLContext | None = None,
                 mechanism: str | None = None, username: str | None = None, password: str | None = None):
        self.protocol = protocol
        self.ssl_context = ssl_context
        self.mechanism = mechanism
        self.username = username
        self.password = password

    @classmethod
    def from_config(cls, config) -> "ClientSecurity":
        protocol = config["security.protocol"]
        context = None
        if protocol in ("SSL", "SASL_SSL"):
            try:
                context = client_context(lambda name: config[name])
            except TlsConfigError as e:
                raise ConfigException(str(e)) from None
        mechanism = username = password = None
        if protocol.startswith("SASL_"):
            mechanism = config["sasl.mechanism"]
            if mechanism != "PLAIN" and mechanism not in SCRAM_MECHANISMS:
                raise ConfigException(f"sasl.mechanism={mechanism}: fastkafka's client offers PLAIN, "
                                      f"{', '.join(SCRAM_MECHANISMS)}")
            username, password = config["sasl.username"], config["sasl.password"]
            if config["sasl.jaas.config"]:   # the Java client's way: username="..." password="..."
                options = parse_jaas_config(config["sasl.jaas.config"]).options
                username = options.get("username", username)
                password = options.get("password", password)
            if username is None or password is None:
                raise ConfigException(f"security.protocol={protocol} needs sasl.username and "
                                      "sasl.password (or sasl.jaas.config)")
        return cls(protocol, context, mechanism, username, password)

    def wrap(self, sock: socket.socket, host: str) -> socket.socket:
        """TLS around a connected socket (handshake done here); the socket itself otherwise."""
        if self.ssl_context is None:
            return sock
        return self.ssl_context.wrap_socket(sock, server_hostname=host)  # ssl.SSLError: an OSError

    def authenticate(self, conn) -> int:
        """The SASL exchange on a connection that has just negotiated ApiVersions (or is
        re-authenticating); returns the broker's ``session_lifetime_ms`` (0: unlimited)."""
        if self.mechanism is None:
            return 0
        resp = conn.request(ApiKey.SASL_HANDSHAKE, {"mechanism": self.mechanism}, version=1)
        if resp.error_code:
            raise errors.for_code(resp.error_code)(
                f"the broker does not offer SASL mechanism {self.mechanism} (it offers "
                f"{', '.join(resp.mechanisms) or 'none'})")
        if self.mechanism == "PLAIN":
            return self._exchange(conn, PlainClient(self.username, self.password).first_message())[1]
        scram = ScramClient(self.mechanism, self.username, self.password)
        server_first = self._exchange(conn, scram.first_message())[0]
        try:
            server_final, lifetime_ms = self._exchange(conn, scram.step(server_first))
            scram.verify_server_final(server_final)
        except AuthenticationFailed as e:
            raise errors.SaslAuthenticationFailedError(str(e)) from None
        return lifetime_ms

    @staticmethod
    def _exchange(conn, token: bytes) -> tuple[bytes, int]:
        """One SaslAuthenticate round: the broker's token and session_lifetime_ms (v1+, else 0)."""
        resp = conn.request(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token})
        if resp.error_code:
            raise errors.for_code(resp.error_code)(resp.error_message or "SASL authentication failed")
        return bytes(resp.auth_bytes), getattr(resp, "session_lifetime_ms", 0) or 0
