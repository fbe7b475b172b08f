"""SCRAM mechanisms and the credential a broker stores per user and mechanism (RFC 5802 §3).

    SaltedPassword = Hi(password, salt, i)            ; PBKDF2-HMAC, password as UTF-8 (Kafka
                                                      ; applies no SASLprep)
    StoredKey      = H(HMAC(SaltedPassword, "Client Key"))
    ServerKey      = HMAC(SaltedPassword, "Server Key")

The broker keeps ``(salt, StoredKey, ServerKey, i)``, never the password. Kafka writes it to
ZooKeeper (``/config/users/<user>``, one property per mechanism) as
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<i>`` (ScramCredentialUtils), and
AlterUserScramCredentials carries ``(salt, SaltedPassword, i)`` computed by the admin client.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import NamedTuple

from fastkafka import errors

__all__ = ["MECHANISMS", "MIN_ITERATIONS", "MAX_ITERATIONS", "ScramMechanism", "ScramCredential",
           "salted_password", "make_credential", "credential_from_salted_password"]

MIN_ITERATIONS = 4096     # Kafka's ScramMechanism.minIterations: fewer is refused at login
MAX_ITERATIONS = 16384    # Kafka's ScramControlManager.MAX_ITERATIONS: more is refused on alter
SALT_LENGTH = 24          # random salt bytes when none is given (what kafka-python's admin uses)


class ScramMechanism(NamedTuple):
    """One SCRAM mechanism: its SASL name, hashlib name, key length and Kafka's type id (the
    ``Mechanism`` field of Describe/AlterUserScramCredentials).

    >>> m = ScramMechanism.for_name("SCRAM-SHA-512")
    >>> m.hash_name, m.key_length, m.type_id, ScramMechanism.for_type(1).name
    ('sha512', 64, 2, 'SCRAM-SHA-256')
    """

    name: str
    hash_name: str
    key_length: int
    type_id: int

    @classmethod
    def for_name(cls, name: str) -> ScramMechanism:
        """The mechanism called ``name``; ``UnsupportedSaslMechanismError`` for any other."""
        try:
            return _BY_NAME[name]
        except (KeyError, TypeError):
            raise errors.UnsupportedSaslMechanismError(f"Unknown SCRAM mechanism {name!r}: "
                                                       f"supported are {', '.join(MECHANISMS)}") from None

    @classmethod
    def for_type(cls, type_id: int) -> ScramMechanism:
        """The mechanism with Kafka's type id (1 or 2); ``UnsupportedSaslMechanismError`` else."""
        for m in _BY_NAME.values():
            if m.type_id == type_id:
                return m
        raise errors.UnsupportedSaslMechanismError("Unknown SCRAM mechanism")

    def hmac(self, key: bytes, message: bytes) -> bytes:
        """HMAC(key, message) with this mechanism's hash."""
        return hmac.digest(key, message, self.hash_name)

    def hash(self, data: bytes) -> bytes:
        """H(data)."""
        return hashlib.new(self.hash_name, data).digest()


_BY_NAME = {m.name: m for m in (ScramMechanism("SCRAM-SHA-256", "sha256", 32, 1),
                                ScramMechanism("SCRAM-SHA-512", "sha512", 64, 2))}
MECHANISMS = tuple(_BY_NAME)


@dataclass(frozen=True, repr=False)
class ScramCredential:
    """What the broker stores to check a SCRAM login: never the password itself.

    >>> c = ScramCredential.from_kafka_string("salt=c2FsdA==,stored_key=AQI=,server_key=AwQ=,iterations=4096")
    >>> c.salt, c.stored_key, c.iterations
    (b'salt', b'\\x01\\x02', 4096)
    >>> c.to_kafka_string()
    'salt=c2FsdA==,stored_key=AQI=,server_key=AwQ=,iterations=4096'
    >>> c    # keys stay out of logs
    ScramCredential(iterations=4096)
    """

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations})"

    def to_kafka_string(self) -> str:
        """Kafka's ZooKeeper form (ScramCredentialUtils.credentialToString)."""
        b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
        return (f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},"
                f"server_key={b64(self.server_key)},iterations={self.iterations}")

    @classmethod
    def from_kafka_string(cls, text: str) -> ScramCredential:
        """Parse :meth:`to_kafka_string`'s form; ``ValueError`` naming the problem otherwise.

        >>> ScramCredential.from_kafka_string("salt=c2FsdA==,iterations=4096")
        Traceback (most recent call last):
        ...
        ValueError: Credentials not valid: missing stored_key, server_key
        """
        fields: dict[str, str] = {}
        for token in text.split(","):
            key, eq, value = token.partition("=")
            if not key or not eq:
                raise ValueError(f"Credentials not valid: {token!r} is not key=value")
            if key in fields:
                raise ValueError(f"Credentials not valid: {key} given twice")
            fields[key] = value
        wanted = ("salt", "stored_key", "server_key", "iterations")
        if missing := [k for k in wanted if k not in fields]:
            raise ValueError(f"Credentials not valid: missing {', '.join(missing)}")
        if extra := sorted(set(fields) - set(wanted)):
            raise ValueError(f"Credentials not valid: unknown {', '.join(extra)}")
        if not (fields["iterations"].isascii() and fields["iterations"].isdigit()) or len(fields["iterations"]) > 10:
            raise ValueError(f"Credentials not valid: iterations={fields['iterations']!r}")
        try:
            salt, stored, server = (base64.b64decode(fields[k], validate=True) for k in wanted[:3])
        except binascii.Error as e:
            raise ValueError(f"Credentials not valid: bad base64 ({e})") from None
        return cls(salt, stored, server, int(fields["iterations"]))


def _check_iterations(iterations: int) -> None:
    """Kafka's AlterUserScramCredentials rule (UNACCEPTABLE_CREDENTIAL with its messages)."""
    if iterations < MIN_ITERATIONS:
        raise errors.UnacceptableCredentialError("Too few iterations")
    if iterations > MAX_ITERATIONS:
        raise errors.UnacceptableCredentialError("Too many iterations")


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): what a client computes, and what AlterUserScramCredentials carries.

    >>> salted_password("SCRAM-SHA-256", "pencil", b"salt", 4096).hex()[:16]
    '0997564f29292327'
    """
    m = ScramMechanism.for_name(mechanism)
    return hashlib.pbkdf2_hmac(m.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted_password(mechanism: str, salt: bytes, salted: bytes,
                                    iterations: int) -> ScramCredential:
    """The stored credential for an AlterUserScramCredentials upsertion (its ``salt``,
    ``salted_password`` and ``iterations``), as Kafka's controller derives it. Iterations outside
    4096..16384 raise ``UnacceptableCredentialError`` ("Too few/many iterations").

    >>> salt = b"NaCl"
    >>> c = credential_from_salted_password("SCRAM-SHA-256", salt,
    ...                                     salted_password("SCRAM-SHA-256", "pw", salt, 4096), 4096)
    >>> c == make_credential("SCRAM-SHA-256", "pw", salt=salt)
    True
    >>> credential_from_salted_password("SCRAM-SHA-256", salt, b"x" * 32, 100)
    Traceback (most recent call last):
    ...
    fastkafka.errors.UnacceptableCredentialError: Too few iterations
    """
    m = ScramMechanism.for_name(mechanism)
    _check_iterations(iterations)
    client_key = m.hmac(salted, b"Client Key")
    return ScramCredential(bytes(salt), m.hash(client_key), m.hmac(salted, b"Server Key"), iterations)


def make_credential(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    """A new credential for ``password`` (a random 24-byte salt unless ``salt`` is given).

    >>> c = make_credential("SCRAM-SHA-512", "alice-secret")
    >>> len(c.salt), len(c.stored_key), c.iterations
    (24, 64, 4096)
    """
    if salt is None:
        salt = secrets.token_bytes(SALT_LENGTH)
    _check_iterations(iterations)
    return credential_from_salted_password(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                           iterations)
