"""Kafka's Uuid (topic ids, KIP-516; cluster ids): the zero id, the text form, random ids.

The wire form is 16 bytes (the protocol's ``uuid`` type); people, ZooKeeper and
``partition.metadata`` see the text form, 22 characters of URL-safe base64.

Example::

    >>> t = random_uuid()
    >>> parse_uuid(uuid_text(t)) == t, len(uuid_text(t))
    (True, 22)
"""
from __future__ import annotations

import base64
import uuid

__all__ = ["UUID_ZERO", "uuid_text", "parse_uuid", "random_uuid"]

UUID_ZERO = uuid.UUID(int=0)
# Kafka reserves 1 for the KRaft metadata topic; random ids never take it (nor zero)
_RESERVED_UUIDS = (UUID_ZERO, uuid.UUID(int=1))


def uuid_text(u: uuid.UUID) -> str:
    """Kafka's text form of a Uuid (``Uuid.toString``): URL-safe base64 of its 16 bytes, unpadded.

    >>> uuid_text(uuid.UUID(int=0))
    'AAAAAAAAAAAAAAAAAAAAAA'
    >>> parse_uuid(uuid_text(uuid.UUID(int=7))) == uuid.UUID(int=7)
    True
    """
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def parse_uuid(text: str) -> uuid.UUID:
    """The Uuid of Kafka's text form (ValueError unless it is 22 characters of URL-safe base64)."""
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ValueError(f"not a Kafka Uuid: {text!r}") from None
    return uuid.UUID(bytes=raw)


def random_uuid() -> uuid.UUID:
    """A new random Uuid as Kafka makes topic and cluster ids (``Uuid.randomUuid``): never zero or
    reserved, and never one whose text starts with '-' (it would read as a command-line option)."""
    while True:
        u = uuid.uuid4()
        if u not in _RESERVED_UUIDS and not uuid_text(u).startswith("-"):
            return u
