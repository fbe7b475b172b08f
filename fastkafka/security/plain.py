"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer runs it: one message, no challenge.

    message = [authzid] NUL authcid NUL passwd      ; UTF-8; Kafka's client sends no authzid

The user name and password must not be empty, an authorization id must equal the user name, and
the password is compared in constant time. Every failure is a public :class:`AuthenticationFailed`
(Kafka answers PLAIN failures with their message). PLAIN sends the password itself: use it on
SASL_SSL listeners.
"""
from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

from fastkafka import errors

from .sasl import AuthenticationFailed, SaslServer

__all__ = ["PlainServer", "PlainClient"]


def _digest(password: str) -> bytes:
    # compare digests, not strings: compare_digest's time then says nothing about the length
    return hashlib.sha256(password.encode("utf-8", "surrogatepass")).digest()


class PlainServer(SaslServer):
    """The broker's side of a PLAIN exchange; ``lookup_password(user)`` returns the expected
    password (e.g. a JAAS ``user_<name>`` entry, see :func:`plain_users`) or ``None``.

    >>> server = PlainServer({"alice": "alice-secret"}.get)
    >>> server.step(b"\\0alice\\0alice-secret"), server.complete, server.username
    (b'', True, 'alice')
    >>> PlainServer({"alice": "alice-secret"}.get).step(b"\\0alice\\0guess")
    Traceback (most recent call last):
    ...
    fastkafka.security.AuthenticationFailed: Authentication failed: Invalid username or password
    """

    mechanism = "PLAIN"

    def __init__(self, lookup_password: Callable[[str], str | None]):
        super().__init__("RECEIVE_RESPONSE")
        self._lookup = lookup_password

    def step(self, response: bytes) -> bytes:
        """Check the client's one message; returns ``b""`` (Kafka's empty answer) on success."""
        if self._state != "RECEIVE_RESPONSE":
            raise errors.IllegalSaslStateError(f"Unexpected response in SASL/PLAIN state {self._state}")
        self._state = "FAILED"
        self._username = self._authenticate(response)
        self._state = "COMPLETE"
        return b""

    def _authenticate(self, response: bytes) -> str:
        try:
            text = bytes(response).decode("utf-8")
        except (UnicodeDecodeError, TypeError):
            raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8", public=True) from None
        tokens = text.split("\0", 3)
        if len(tokens) != 3:
            raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}",
                                       public=True)
        authzid, username, password = tokens
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified", public=True)
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified", public=True)
        expected = self._lookup(username)
        matches = hmac.compare_digest(_digest(password), _digest(expected if expected is not None else ""))
        if expected is None or not matches:
            raise AuthenticationFailed("Authentication failed: Invalid username or password", public=True)
        if authzid and authzid != username:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username", public=True)
        return username


class PlainClient:
    """Our client's PLAIN message (no authorization id, as Kafka's client sends it).

    >>> PlainClient("alice", "alice-secret").first_message()
    b'\\x00alice\\x00alice-secret'
    """

    mechanism = "PLAIN"

    def __init__(self, username: str, password: str):
        if not username or not password or "\0" in username + password:
            raise ValueError("a PLAIN user name and password are non-empty and hold no NUL")
        self._username = username
        self._password = password

    def first_message(self) -> bytes:
        """``NUL user NUL password`` in UTF-8: the one message the client sends."""
        return f"\0{self._username}\0{self._password}".encode("utf-8")
