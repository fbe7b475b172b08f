"""The mirror's internal topics on the target: creating them, reading them back, and MirrorMaker 2's
record layout.

Offset translation keeps its state in two topics of the *target* cluster (so it survives the loss
of the source): the offset syncs (:mod:`~fastkafka.mirror.syncs`) and the checkpoints
(:mod:`~fastkafka.mirror.checkpoints`). Both are MirrorMaker 2's: one partition, compacted (a key
per source partition, or per group and partition: only the latest record of each matters), and
records in MM2's binary layout -- Kafka's protocol types, big-endian: STRING is an INT16 length
and UTF-8 bytes -- so Kafka's own tools (``RemoteClusterUtils.translateOffsets``, the
``OffsetSyncFormatter`` and ``CheckpointFormatter`` of ``kafka-console-consumer``) read ours.
Their keys and values are declared in the messages' notation (:mod:`fastkafka.protocol.schema`),
like Kafka's other internal topics' (:mod:`fastkafka.coordinator.formats`), in the modules that use them.

Example::

    >>> from fastkafka.protocol.schema import parse_struct
    >>> key = parse_struct("OffsetSyncKey", "topic string\\npartition int32")
    >>> b = encode_record(key, {"topic": "orders", "partition": 2})
    >>> b.hex(), decode_record(key, b).topic
    ('00066f726465727300000002', 'orders')
"""
from __future__ import annotations

import logging
import time

from fastkafka import errors
from fastkafka.client import AdminClient, ClientConfig
from fastkafka.client.fetcher import EARLIEST, Fetcher
from fastkafka.protocol.codec import decode_struct, encode_struct
from fastkafka.protocol.schema import Struct
from fastkafka.protocol.types import ProtocolError

__all__ = ["encode_record", "decode_record", "ensure_topic", "TopicReader", "INTERNAL_CONFIGS"]

log = logging.getLogger("fastkafka.mirror")
INTERNAL_CONFIGS = {"cleanup.policy": "compact"}


def encode_record(s: Struct, obj) -> bytes:
    """The bytes of ``obj`` (a dict or an object with the fields' names) in MM2's fixed layout ``s``."""
    return encode_struct(s, 0, obj)


def decode_record(s: Struct, buf, pos: int = 0):
    """The object of layout ``s`` at ``pos`` of ``buf``; a truncated or malformed one raises
    CorruptRecordError (the readers skip it)."""
    try:
        return decode_struct(s, 0, buf, pos)[0]
    except ProtocolError as e:
        raise errors.CorruptRecordError(str(e)) from None


def _exists(admin: AdminClient, name: str) -> bool:
    try:
        return bool(admin.describe_topics([name])[name].partitions)
    except errors.UnknownTopicOrPartitionError:
        return False


def ensure_topic(admin: AdminClient, name: str, replication_factor: int = -1) -> None:
    """Create the internal topic ``name`` (one partition, compacted) unless it exists."""
    if _exists(admin, name):
        return
    try:
        admin.create_topic(name, 1, replication_factor, dict(INTERNAL_CONFIGS))
        log.info("created %s", name)
    except errors.TopicAlreadyExistsError:
        pass


class TopicReader:
    """Reads the one partition of an internal topic from its start, more on each :meth:`read`.
    Never creates the topic (a missing one reads as empty). One thread uses it."""

    def __init__(self, config: dict | ClientConfig, topic: str):
        config = config if isinstance(config, ClientConfig) else ClientConfig(config)
        self.admin = AdminClient(config.with_overrides(auto_offset_reset="earliest"))
        self.topic = topic
        self.fetcher: Fetcher | None = None

    def close(self) -> None:
        if self.fetcher is not None:
            self.fetcher.close()
        self.admin.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def read(self, timeout: float = 30.0) -> list[tuple[bytes | None, bytes | None]]:
        """``[(key, value)]`` of the records appended since the last read, up to the end the
        partition had when called."""
        tp = (self.topic, 0)
        if self.fetcher is None and not _exists(self.admin, self.topic):
            return []
        end = self.admin.list_offsets(self.topic, -1)[0]
        if self.fetcher is None:
            self.fetcher = Fetcher(self.admin.cluster, max_wait_ms=0)
            self.fetcher.assign({tp: EARLIEST})
        out = []
        deadline = time.monotonic() + timeout
        while self.fetcher.positions[tp] < end:
            if time.monotonic() > deadline:
                raise errors.RequestTimedOutError(f"reading {self.topic} to offset {end} took over {timeout} s")
            for ms in self.fetcher.poll():
                for mo in ms:
                    out.append((mo.message.key, mo.message.value))
        return out
