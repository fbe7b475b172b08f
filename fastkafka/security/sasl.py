"""What every SASL mechanism here shares: the failure it raises and the shape of a server exchange.

A mechanism's server is a state machine the broker's network layer feeds with the bytes of each
SaslAuthenticate request (or raw SASL frame) and whose answer it sends back; it does no I/O.
"""
from __future__ import annotations

from typing import Protocol

from fastkafka import errors

__all__ = ["AuthenticationFailed", "SaslServer"]


class AuthenticationFailed(errors.SaslAuthenticationFailedError):
    """A SASL exchange failed: Kafka error 58 SASL_AUTHENTICATION_FAILED.

    ``str(exc)`` is for the broker's log. ``public`` says whether the client may read it as well
    (Kafka's ``SaslAuthenticationException``, e.g. an authorization id that is not the user);
    otherwise the client gets :meth:`client_message`'s fixed text (Kafka's ``SaslException``),
    which never tells whether the user exists.

    >>> e = AuthenticationFailed("Invalid client credentials")
    >>> e.code, e.client_message("SCRAM-SHA-256")
    (58, 'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256')
    >>> AuthenticationFailed("Authentication failed: password not specified", public=True).client_message("PLAIN")
    'Authentication failed: password not specified'
    """

    def __init__(self, message: str, *, public: bool = False):
        super().__init__(message)
        self.public = public

    def client_message(self, mechanism: str, *, reauthentication: bool = False) -> str:
        """The error message for the SaslAuthenticate response, worded as Kafka's broker words it."""
        if self.public:
            return str(self)
        what = "re-authentication" if reauthentication else "authentication"
        return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {mechanism}"


class SaslServer(Protocol):
    """The server side of one SASL exchange, as the broker drives it.

    ``step`` takes the client's next message and returns the answer to send (``b""`` when there is
    nothing to say); it raises :class:`AuthenticationFailed` when the client is refused and
    ``fastkafka.errors.IllegalSaslStateError`` when called again after completing or failing.
    ``username`` is the authenticated principal's name once ``complete``, ``None`` before.
    """

    mechanism: str

    def step(self, response: bytes) -> bytes: ...

    @property
    def complete(self) -> bool: ...

    @property
    def username(self) -> str | None: ...
