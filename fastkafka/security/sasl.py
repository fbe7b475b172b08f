"""What every SASL mechanism here shares: the failure it raises and the shape of a server exchange.

A mechanism's server is a state machine the broker's network layer feeds with the bytes of each
SaslAuthenticate request (or raw SASL frame) and whose answer it sends back; it does no I/O.
"""
from __future__ import annotations

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


class SaslServer:
    """The server side of one SASL exchange, as the broker drives it; mechanisms derive from it.

    ``step`` takes the client's next message and returns the answer to send (``b""`` when there is
    nothing to say); it raises :class:`AuthenticationFailed` when the client is refused and
    ``fastkafka.errors.IllegalSaslStateError`` when called again after completing or failing.
    ``username`` is the authenticated principal's name once ``complete``, ``None`` before.
    Subclasses move ``_state`` to ``"COMPLETE"`` and set ``_username``.
    """

    mechanism: str

    def __init__(self, first_state: str):
        self._state = first_state
        self._username: str | None = None

    def step(self, response: bytes) -> bytes:
        raise NotImplementedError

    @property
    def complete(self) -> bool:
        """True once the client has proven who it is."""
        return self._state == "COMPLETE"

    @property
    def username(self) -> str | None:
        """The authenticated user (Kafka's principal name) once complete, else ``None``."""
        return self._username if self.complete else None

    @property
    def authorization_id(self) -> str | None:
        """Kafka's authorization id: always the user name (a different one is refused)."""
        return self.username
