"""SCRAM's four messages (RFC 5802 §7) as Kafka's clients and brokers send them: parse and build.

    client-first  = gs2-header client-first-bare
    gs2-header    = "n," ["a=" saslname] ","        ; "y"/"p=" (channel binding) refused
    client-first-bare = "n=" saslname ",r=" c-nonce ["," ext]*
                                                  ; a leading "m=" (mandatory extension) refused
    server-first  = "r=" c-nonce s-nonce ",s=" base64(salt) ",i=" iterations ["," ext]*
    client-final  = "c=" base64(gs2-header) ",r=" c-nonce s-nonce ["," ext]* ",p=" base64(proof)
    server-final  = ("e=" error | "v=" base64(ServerSignature)) ["," ext]*
    ext           = ALPHA+ "=" value              ; Kafka's extensions, e.g. tokenauth=true
    saslname      = the user name with "=" as "=3D" and "," as "=2C"
    nonce         = printable ASCII but ","

Every message is a ``,``-separated list of ``name=value`` attributes (the gs2 header's first two
fields aside), walked by :func:`_attributes`. Parsers raise :class:`AuthenticationFailed` on any
malformed input; their messages never repeat the input (it may hold a password typed as a name).
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import NamedTuple

from .sasl import AuthenticationFailed

__all__ = ["sasl_name", "username_of", "b64",
           "ClientFirst", "parse_client_first", "client_first_bare",
           "ServerFirst", "parse_server_first", "server_first",
           "ClientFinal", "parse_client_final", "client_final_without_proof", "parse_server_final"]

_SASLNAME = re.compile(r"(?:[^=,\x00]|=2C|=3D)+")
_ESCAPED = re.compile(r"=2C|=3D")
_EXT_NAME = re.compile(r"[A-Za-z]+")


def sasl_name(username: str) -> str:
    """``username`` as it travels in ``n=`` and ``a=``.

    >>> sasl_name("a=b,c")
    'a=3Db=2Cc'
    """
    return username.replace("=", "=3D").replace(",", "=2C")


def username_of(saslname: str) -> str:
    """The user name a ``saslname`` spells; ``AuthenticationFailed`` for a stray ``=``.

    >>> username_of("a=3Db=2Cc")
    'a=b,c'
    """
    if not _SASLNAME.fullmatch(saslname):
        raise AuthenticationFailed("Invalid SCRAM username: bad =XX escape or empty")
    return _ESCAPED.sub(lambda m: "," if m.group() == "=2C" else "=", saslname)


def b64(data: bytes) -> str:
    """Standard padded base64, as SCRAM and Kafka write it."""
    return base64.b64encode(data).decode("ascii")


def _unb64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise AuthenticationFailed(f"Invalid SCRAM {what}: not base64") from None


def _nonce(value: str, what: str) -> str:
    if not value or not all(0x21 <= ord(c) <= 0x7E for c in value):
        raise AuthenticationFailed(f"Invalid SCRAM {what}: bad nonce")
    return value


def _text(message: bytes, what: str) -> str:
    try:
        text = bytes(message).decode("utf-8")
    except (UnicodeDecodeError, TypeError):
        raise AuthenticationFailed(f"Invalid SCRAM {what}: not UTF-8") from None
    if "\x00" in text:
        raise AuthenticationFailed(f"Invalid SCRAM {what}: NUL byte")
    return text


def _attributes(text: str, what: str) -> list[tuple[str, str]]:
    """``name=value`` pairs in order; every value non-empty."""
    out = []
    for field in text.split(","):
        name, eq, value = field.partition("=")
        if not name or not eq or not value:
            raise AuthenticationFailed(f"Invalid SCRAM {what} format: expected name=value")
        out.append((name, value))
    return out


def _expect(attrs: list[tuple[str, str]], i: int, name: str, what: str) -> str:
    if i >= len(attrs) or attrs[i][0] != name:
        raise AuthenticationFailed(f"Invalid SCRAM {what} format: expected {name}= attribute")
    return attrs[i][1]


def _extensions(attrs: list[tuple[str, str]], what: str) -> dict[str, str]:
    for name, _ in attrs:
        if not _EXT_NAME.fullmatch(name):
            raise AuthenticationFailed(f"Invalid SCRAM {what} format: bad extension name")
    return dict(attrs)


def _no_mandatory_extension(attrs: list[tuple[str, str]], what: str) -> None:
    if attrs and attrs[0][0] == "m":
        raise AuthenticationFailed(f"Invalid SCRAM {what}: mandatory extension m= is not supported")


class ClientFirst(NamedTuple):
    """A parsed client-first message; ``bare`` is its text after the gs2 header, verbatim."""

    gs2_header: str
    authorization_id: str
    username: str
    nonce: str
    extensions: dict[str, str]
    bare: str


def parse_client_first(message: bytes) -> ClientFirst:
    """The server's view of the client's first message.

    >>> parse_client_first(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL").username
    'user'
    >>> parse_client_first(b"p=tls-unique,,n=user,r=abc")
    Traceback (most recent call last):
    ...
    fastkafka.security.AuthenticationFailed: Invalid SCRAM client first message: channel binding is not supported
    """
    what = "client first message"
    text = _text(message, what)
    flag, sep1, rest = text.partition(",")
    authz, sep2, bare = rest.partition(",")
    if flag != "n":
        if flag == "y" or flag.startswith("p="):
            raise AuthenticationFailed(f"Invalid SCRAM {what}: channel binding is not supported")
        raise AuthenticationFailed(f"Invalid SCRAM {what} format: expected gs2 header n,")
    if not (sep1 and sep2) or (authz and not authz.startswith("a=")):
        raise AuthenticationFailed(f"Invalid SCRAM {what} format: bad gs2 header")
    authzid = username_of(authz[2:]) if authz else ""
    attrs = _attributes(bare, what)
    _no_mandatory_extension(attrs, what)
    username = username_of(_expect(attrs, 0, "n", what))
    nonce = _nonce(_expect(attrs, 1, "r", what), what)
    return ClientFirst(f"n,{authz},", authzid, username, nonce, _extensions(attrs[2:], what), bare)


def client_first_bare(username: str, nonce: str) -> str:
    """The client-first message without its gs2 header (Kafka's client sends no extensions)."""
    return f"n={sasl_name(username)},r={nonce}"


class ServerFirst(NamedTuple):
    """A parsed server-first message; ``text`` verbatim (it is part of AuthMessage)."""

    nonce: str
    salt: bytes
    iterations: int
    text: str


def parse_server_first(message: bytes) -> ServerFirst:
    """The client's view of the server's first message (range checks are the caller's).

    >>> parse_server_first(b"r=abcdef,s=QSXCR+Q6sek8bf92,i=4096").iterations
    4096
    """
    what = "server first message"
    text = _text(message, what)
    attrs = _attributes(text, what)
    _no_mandatory_extension(attrs, what)
    nonce = _nonce(_expect(attrs, 0, "r", what), what)
    salt = _unb64(_expect(attrs, 1, "s", what), what)
    iterations = _expect(attrs, 2, "i", what)
    _extensions(attrs[3:], what)
    if not salt:
        raise AuthenticationFailed(f"Invalid SCRAM {what}: empty salt")
    if not (iterations.isascii() and iterations.isdigit()) or len(iterations) > 10:
        raise AuthenticationFailed(f"Invalid SCRAM {what}: invalid iterations")
    return ServerFirst(nonce, salt, int(iterations), text)


def server_first(nonce: str, salt: bytes, iterations: int) -> str:
    """The server-first message (no extensions)."""
    return f"r={nonce},s={b64(salt)},i={iterations}"


class ClientFinal(NamedTuple):
    """A parsed client-final message; ``without_proof`` verbatim (it ends AuthMessage)."""

    channel_binding: bytes
    nonce: str
    proof: bytes
    without_proof: str


def parse_client_final(message: bytes) -> ClientFinal:
    """The server's view of the client's final message.

    >>> parse_client_final(b"c=biws,r=abcdef,p=AAEC").channel_binding
    b'n,,'
    """
    what = "client final message"
    text = _text(message, what)
    attrs = _attributes(text, what)
    binding = _unb64(_expect(attrs, 0, "c", what), what)
    nonce = _nonce(_expect(attrs, 1, "r", what), what)
    proof = _unb64(_expect(attrs, len(attrs) - 1, "p", what), what) if len(attrs) > 2 else None
    if proof is None:
        raise AuthenticationFailed(f"Invalid SCRAM {what} format: expected p= attribute")
    _extensions(attrs[2:-1], what)
    return ClientFinal(binding, nonce, proof, text[:text.rindex(",p=")])


def client_final_without_proof(gs2_header: str, nonce: str) -> str:
    """The client-final message up to its proof."""
    return f"c={b64(gs2_header.encode('utf-8'))},r={nonce}"


def parse_server_final(message: bytes) -> tuple[str | None, bytes | None]:
    """``(error, None)`` for ``e=``, ``(None, signature)`` for ``v=``.

    >>> parse_server_final(b"e=invalid-proof")
    ('invalid-proof', None)
    """
    what = "server final message"
    attrs = _attributes(_text(message, what), what)
    _extensions(attrs[1:], what)
    if attrs[0][0] == "e":
        return attrs[0][1], None
    return None, _unb64(_expect(attrs, 0, "v", what), what)
