"""``partition.metadata``: the id of the topic a partition directory belongs to (KIP-516).

Kafka writes it into every partition directory beside the segments, two lines of text::

    version: 0
    topic_id: vB3F7cJzQ0-2HQ5NhtoQ1A

A topic's name can be reused after a delete, its id never is: a directory whose file names
another id than the topic's is a stray copy of an earlier topic of that name (its broker was
away while the topic was deleted and created again) and must not be served as the new one.
Written through a temporary file, ``fsync`` and ``rename``, so a crash leaves the old file or
the new one.

Example::

    >>> import tempfile, uuid
    >>> tmpdir = tempfile.TemporaryDirectory(); d = tmpdir.name
    >>> read_topic_id(d) is None
    True
    >>> write_topic_id(d, uuid.UUID(int=3)); read_topic_id(d).int
    3
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

import os
import uuid

from fastkafka.uuids import parse_uuid, uuid_text

__all__ = ["PARTITION_METADATA_FILE", "read_topic_id", "write_topic_id"]

PARTITION_METADATA_FILE = "partition.metadata"
_VERSION = 0


def read_topic_id(directory: str) -> uuid.UUID | None:
    """The topic id the directory's file records; None without a file. A file that is not
    Kafka's layout raises ValueError (a person should look: it is never overwritten)."""
    try:
        with open(os.path.join(directory, PARTITION_METADATA_FILE), encoding="ascii") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    if fields.get("version") != str(_VERSION) or "topic_id" not in fields:
        raise ValueError(f"{directory}/{PARTITION_METADATA_FILE}: not version {_VERSION} with a topic_id: {text!r}")
    return parse_uuid(fields["topic_id"])


def write_topic_id(directory: str, topic_id: uuid.UUID) -> None:
    path = os.path.join(directory, PARTITION_METADATA_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"version: {_VERSION}\ntopic_id: {uuid_text(topic_id)}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
