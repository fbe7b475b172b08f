"""SCRAM-SHA-256 / SCRAM-SHA-512 exchanges (RFC 5802, RFC 7677) as Kafka runs them.

    client                                         server (lookup(user) -> ScramCredential)
    first_message()  n,,n=user,r=CNONCE        ->
                                               <-  r=CNONCE+SNONCE,s=SALT,i=4096
    step(...)        c=biws,r=...,p=PROOF      ->  checks H(ClientSignature XOR PROOF) == StoredKey
                                               <-  v=ServerSignature
    verify_server_final(...)

    AuthMessage = client-first-bare "," server-first "," client-final-without-proof
    ClientSignature = HMAC(StoredKey, AuthMessage), ServerSignature = HMAC(ServerKey, AuthMessage)

Kafka's rules: no channel binding (``c=biws``); an authorization id must equal the user name;
extensions after the nonce are accepted and ignored, but ``tokenauth=true`` is refused (no
delegation tokens here); a stored credential with fewer than 4096 iterations is refused. Unlike
Kafka, an unknown user is not refused at once: the exchange goes on with a fake credential
(a salt that is stable per user name) and fails at the proof like a wrong password does.
"""
from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable

from fastkafka import errors

from . import scram_messages as msg
from .sasl import AuthenticationFailed, SaslServer
from .scram_credential import (MAX_ITERATIONS, MIN_ITERATIONS, SALT_LENGTH, ScramCredential, ScramMechanism,
                               salted_password)

__all__ = ["ScramServer", "ScramClient"]

# fake salts for unknown users: HMAC(this, user) so that asking twice gives the same salt
_FAKE_SALT_KEY = secrets.token_bytes(32)


def _new_nonce() -> str:
    return secrets.token_urlsafe(24)          # printable, no ","


def _checked_nonce(nonce: str | None) -> str:
    if nonce is None:
        return _new_nonce()
    if not nonce or not all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce):
        raise ValueError("a SCRAM nonce is printable ASCII without ','")
    return nonce


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


class ScramServer(SaslServer):
    """The broker's side of one SCRAM exchange; ``lookup(user)`` returns the user's stored
    :class:`ScramCredential` for this mechanism, or ``None``. ``nonce`` fixes the server's nonce
    part (tests only). Not thread-safe: one per connection.

    >>> from fastkafka.security import make_credential
    >>> alice = make_credential("SCRAM-SHA-256", "alice-secret", salt=b"salt")
    >>> server = ScramServer("SCRAM-SHA-256", {"alice": alice}.get, nonce="SNONCE")
    >>> server.step(b"n,,n=alice,r=CNONCE")
    b'r=CNONCESNONCE,s=c2FsdA==,i=4096'
    >>> server.step(b"c=biws,r=CNONCESNONCE,p=" + b"A" * 43 + b"=")
    Traceback (most recent call last):
    ...
    fastkafka.security.AuthenticationFailed: Invalid client credentials
    """

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None], *,
                 nonce: str | None = None):
        super().__init__("RECEIVE_CLIENT_FIRST_MESSAGE")
        self.mechanism = mechanism
        self._m = ScramMechanism.for_name(mechanism)
        self._lookup = lookup
        self._server_nonce = _checked_nonce(nonce)
        self._first: msg.ClientFirst | None = None
        self._server_first = ""
        self._credential: ScramCredential | None = None
        self._known = False

    def step(self, response: bytes) -> bytes:
        """Take the client's next message, return the server's answer (see the module docstring)."""
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                out = self._client_first(response)
                self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
            elif self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                out = self._client_final(response)
                self._state = "COMPLETE"
            else:
                raise errors.IllegalSaslStateError(f"Unexpected challenge in Sasl server state {self._state}")
        except BaseException:
            self._state = "FAILED"
            raise
        finally:
            if self._state != "RECEIVE_CLIENT_FINAL_MESSAGE":
                self._credential = None     # Kafka's clearCredentials: keys live for one exchange
        return out

    def _client_first(self, response: bytes) -> bytes:
        first = msg.parse_client_first(response)
        if first.authorization_id and first.authorization_id != first.username:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id "
                                       "that is different from username", public=True)
        if first.extensions.get("tokenauth", "").lower() == "true":
            raise AuthenticationFailed("Authentication failed: delegation token authentication "
                                       "(tokenauth) is not supported", public=True)
        credential = self._lookup(first.username)
        self._known = credential is not None
        if credential is None:
            credential = self._fake_credential(first.username)
        elif credential.iterations < MIN_ITERATIONS:
            raise AuthenticationFailed(f"Iterations {credential.iterations} is less than the minimum "
                                       f"{MIN_ITERATIONS} for {self.mechanism}")
        self._first, self._credential = first, credential
        self._server_first = msg.server_first(first.nonce + self._server_nonce, credential.salt,
                                              credential.iterations)
        return self._server_first.encode("ascii")

    def _fake_credential(self, username: str) -> ScramCredential:
        salt = self._m.hmac(_FAKE_SALT_KEY, f"{self.mechanism}\0{username}".encode())[:SALT_LENGTH]
        n = self._m.key_length
        return ScramCredential(salt, secrets.token_bytes(n), secrets.token_bytes(n), MIN_ITERATIONS)

    def _client_final(self, response: bytes) -> bytes:
        first, credential = self._first, self._credential
        assert first is not None and credential is not None
        final = msg.parse_client_final(response)
        if final.channel_binding not in (first.gs2_header.encode("utf-8"), b"n,,"):
            raise AuthenticationFailed("Invalid channel binding in the final client message")
        # Kafka checks only that the nonce ends with the server's: librdkafka up to 2.0 (Debian's
        # kcat) sends its own nonce in front of the combined one.
        if not final.nonce.endswith(first.nonce + self._server_nonce):
            raise AuthenticationFailed("Invalid client nonce in the final client message.")
        if len(final.proof) != self._m.key_length:
            raise AuthenticationFailed("Invalid client proof length in the final client message")
        auth_message = f"{first.bare},{self._server_first},{final.without_proof}".encode()
        client_signature = self._m.hmac(credential.stored_key, auth_message)
        computed_stored_key = self._m.hash(_xor(client_signature, final.proof))
        if not hmac.compare_digest(computed_stored_key, credential.stored_key) or not self._known:
            raise AuthenticationFailed("Invalid client credentials")
        self._username = first.username
        return f"v={msg.b64(self._m.hmac(credential.server_key, auth_message))}".encode("ascii")


class ScramClient:
    """Our client's side of one SCRAM exchange. ``nonce`` fixes the client nonce (tests only).

    Servers asking for fewer than 4096 or more than 16384 iterations are refused (the second so
    that a hostile server cannot make the client spin).

    >>> from fastkafka.security import make_credential
    >>> client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret", nonce="CNONCE")
    >>> client.first_message()
    b'n,,n=alice,r=CNONCE'
    >>> client.step(b"r=CNONCE,s=c2FsdA==,i=4096")
    Traceback (most recent call last):
    ...
    fastkafka.security.AuthenticationFailed: Invalid server nonce: does not extend the client nonce
    """

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: str | None = None):
        if not username:
            raise ValueError("a SCRAM user name is not empty")
        self.mechanism = mechanism
        self._m = ScramMechanism.for_name(mechanism)
        self._password = password
        self._nonce = _checked_nonce(nonce)
        self._state = "SEND_CLIENT_FIRST_MESSAGE"
        self._bare = msg.client_first_bare(username, self._nonce)
        self._expected_signature = b""

    @property
    def complete(self) -> bool:
        """True once the server has proven it knows the credential."""
        return self._state == "COMPLETE"

    def first_message(self) -> bytes:
        """The client-first message: ``n,,n=<user>,r=<nonce>``."""
        self._require("SEND_CLIENT_FIRST_MESSAGE")
        self._state = "RECEIVE_SERVER_FIRST_MESSAGE"
        return ("n,," + self._bare).encode()

    def step(self, server_message: bytes) -> bytes:
        """Take the server-first message, return the client-final message (with the proof)."""
        self._require("RECEIVE_SERVER_FIRST_MESSAGE")
        try:
            out = self._server_first(server_message)
        except BaseException:
            self._state = "FAILED"
            raise
        self._state = "RECEIVE_SERVER_FINAL_MESSAGE"
        return out

    def verify_server_final(self, server_final: bytes) -> None:
        """Check the server-final message: ``AuthenticationFailed`` on ``e=`` or a wrong signature."""
        self._require("RECEIVE_SERVER_FINAL_MESSAGE")
        self._state = "FAILED"
        error, signature = msg.parse_server_final(server_final)
        if error is not None:
            raise AuthenticationFailed(f"Sasl authentication using {self.mechanism} failed with error: {error}")
        if not hmac.compare_digest(signature or b"", self._expected_signature):
            raise AuthenticationFailed("Invalid server signature in server final message")
        self._state = "COMPLETE"

    def _require(self, state: str) -> None:
        if self._state != state:
            raise errors.IllegalSaslStateError(f"Unexpected challenge in Sasl client state {self._state}")

    def _server_first(self, server_message: bytes) -> bytes:
        first = msg.parse_server_first(server_message)
        if not first.nonce.startswith(self._nonce) or len(first.nonce) == len(self._nonce):
            raise AuthenticationFailed("Invalid server nonce: does not extend the client nonce")
        if first.iterations < MIN_ITERATIONS:
            raise AuthenticationFailed(f"Requested iterations {first.iterations} is less than the minimum "
                                       f"{MIN_ITERATIONS} for {self.mechanism}")
        if first.iterations > MAX_ITERATIONS:
            raise AuthenticationFailed(f"Requested iterations {first.iterations} is more than the maximum "
                                       f"{MAX_ITERATIONS} for {self.mechanism}")
        m = self._m
        salted = salted_password(self.mechanism, self._password, first.salt, first.iterations)
        client_key = m.hmac(salted, b"Client Key")
        without_proof = msg.client_final_without_proof("n,,", first.nonce)
        auth_message = f"{self._bare},{first.text},{without_proof}".encode()
        proof = _xor(client_key, m.hmac(m.hash(client_key), auth_message))
        self._expected_signature = m.hmac(m.hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={msg.b64(proof)}".encode("ascii")
