"""Legacy message sets (magic 0 and 1): build, read, validate, and convert to and from v2.

Producers older than Kafka 0.11 (Produce v0-v2) send message sets; consumers that old
(Fetch v0-v3) can only read them. The broker stores record batches v2 only, so it converts on
the way in (:func:`to_v2`) and on the way out (:func:`down_convert`). Byte layout and the
per-message work live in :mod:`fastkafka._core.legacy`; this module decides which codec runs
where, with what bound, and which codec/magic combinations are legal:

* codecs 0-3 only: zstd (4) exists from magic 2 on, so it is refused for magic 0/1 with
  :class:`~fastkafka.errors.UnsupportedCompressionError` (Kafka's UNSUPPORTED_COMPRESSION_TYPE);
* lz4 under magic 0 carries the frame header checksum Kafka 0.8/0.9 computed over the frame's
  magic bytes too (KAFKA-3160): written that way, and read whether broken or standard;
* every decompression is bounded by ``max_size`` (a decompression bomb is corrupt input).

Example::

    >>> from fastkafka import legacy
    >>> wire = legacy.build_message_set([(b"k", b"v", 1000), (None, b"w", 1001)], magic=1,
    ...                                 compression=legacy.GZIP, base_offset=40)
    >>> [(m.offset, m.timestamp, m.key, m.value) for m in legacy.iter_messages(wire)]
    [(40, 1000, b'k', b'v'), (41, 1001, None, b'w')]
    >>> back = legacy.down_convert(legacy.to_v2(wire), magic=0)  # what a Fetch v0 reader gets
    >>> [(m.offset, m.timestamp, m.value) for m in legacy.iter_messages(back)]
    [(0, -1, b'v'), (1, -1, b'w')]
"""
from __future__ import annotations

import time
from typing import Iterable, Iterator, NamedTuple, Optional

from . import compression as _compression
from . import errors
from ._core import legacy as _legacy
from ._core import legacy_down as _down
from ._core.legacy import MessageSetInfo
from ._core.records_build import finish_batch

_BATCH_HEADER = 61  # record batch v2 header: finish_batch writes it in front of the records

NONE, GZIP, SNAPPY, LZ4, ZSTD = (_compression.NONE, _compression.GZIP, _compression.SNAPPY,
                                 _compression.LZ4, _compression.ZSTD)
NO_TIMESTAMP = -1
#: Timestamp types as Kafka numbers them; magic 0 messages have none (-1).
NO_TIMESTAMP_TYPE, CREATE_TIME, LOG_APPEND_TIME = -1, 0, 1
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08


class LegacyMessage(NamedTuple):
    """One message as a consumer sees it (inner messages of wrappers included)."""
    offset: int
    timestamp: int
    timestamp_type: int
    key: Optional[bytes]
    value: Optional[bytes]


def _check(codec: int, magic: int) -> None:
    if magic not in (0, 1):
        raise ValueError(f"legacy message sets have magic 0 or 1, not {magic}")
    if not 0 <= codec <= LZ4:
        raise errors.UnsupportedCompressionError(
            f"compression codec {codec} is not valid for magic {magic} (zstd needs magic 2)")


def _compress(codec: int, magic: int, data: bytes) -> bytes:
    blob = _compression.compress(codec, data)
    if codec == LZ4 and magic == 0:
        blob = _legacy.lz4_set_header_checksum(blob, True)
    return blob


def _decompress(codec: int, magic: int, payload, max_size: int) -> bytes:
    if codec == LZ4 and magic == 0:
        broken, stored = _legacy.lz4_header_checksum(payload, True)
        if stored == broken:
            payload = _legacy.lz4_set_header_checksum(bytes(payload), False)
    return _compression.decompress(codec, payload, max_size)


# ----------------------------------------------------------------------------- build / read

def build_message_set(messages: Iterable[tuple], magic: int, compression: int = NONE,
                      base_offset: int = 0, timestamp_type: int = CREATE_TIME) -> bytes:
    """A message set of ``(key, value, timestamp)`` tuples, offsets from ``base_offset``.

    Magic 1 messages whose timestamp is None get the current time (ms); magic 0 has none.
    With a codec the set is one wrapper: inner offsets relative (magic 1) or absolute (magic 0),
    the wrapper at the last message's absolute offset, timestamped with the largest timestamp.

    >>> len(build_message_set([(None, b"x", None)], magic=0))
    27
    """
    _check(compression, magic)
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"timestamp_type must be 0 (CreateTime) or 1 (LogAppendTime), not {timestamp_type}")
    messages = list(messages)
    if magic == 1:
        now = None
        filled = []
        for key, value, timestamp in messages:
            if timestamp is None:
                now = now if now is not None else int(time.time() * 1000)
                timestamp = now
            filled.append((key, value, timestamp))
        messages = filled
    ts_bit = _TIMESTAMP_TYPE_BIT * timestamp_type if magic == 1 else 0
    if compression == NONE or not messages:
        return _legacy.encode(messages, magic, base_offset, ts_bit)
    inner = _legacy.encode(messages, magic, 0 if magic == 1 else base_offset, 0)
    wrapper_ts = max(m[2] for m in messages) if magic == 1 else NO_TIMESTAMP
    value = _compress(compression, magic, inner)
    return _legacy.encode([(None, value, wrapper_ts)], magic, base_offset + len(messages) - 1,
                          compression | ts_bit)


def iter_messages(buf, *, max_size: int = _compression.DEFAULT_MAX) -> Iterator[LegacyMessage]:
    """Every message of a message set, wrappers opened; a partial last entry is skipped.

    Raises :class:`~fastkafka.errors.CorruptRecordError` (or its CompressionError subclass)
    for bad CRCs, sizes, payloads, or a compressed message inside a wrapper. A reader's API:
    the broker itself never iterates messages in Python.
    """
    for offset, magic, attributes, timestamp, key, value in _legacy.decode(buf):
        codec = attributes & _CODEC_MASK
        ts_type = (attributes & _TIMESTAMP_TYPE_BIT) >> 3 if magic == 1 else NO_TIMESTAMP_TYPE
        if codec == NONE:
            yield LegacyMessage(offset, timestamp, ts_type, key, value)
            continue
        _check(codec, magic)
        if value is None:
            raise errors.CorruptRecordError(f"compressed wrapper at offset {offset} has a null value")
        inner_set = _decompress(codec, magic, value, max_size)
        info = _legacy.validate(inner_set)
        if info.error is not None or info.truncated:
            raise errors.CorruptRecordError(f"inner set of wrapper at offset {offset}: "
                                            f"{info.error or 'ends inside a message'}")
        inner = _legacy.decode(inner_set)
        # Magic 1: inner offsets are relative to the wrapper's (the last one's absolute offset).
        # A producer leaves the wrapper at 0, making the base negative: then, as Java and
        # kafka-python do, the inner offsets are taken as they are.
        base = offset - inner[-1][0] if inner and magic == 1 else -1
        for i_offset, i_magic, i_attributes, i_timestamp, i_key, i_value in inner:
            if i_attributes & _CODEC_MASK or i_magic != magic:
                raise errors.CorruptRecordError(
                    f"wrapper at offset {offset} holds a compressed or magic-{i_magic} message")
            if base >= 0:
                i_offset += base
            if ts_type == LOG_APPEND_TIME:
                i_timestamp = timestamp
            yield LegacyMessage(i_offset, i_timestamp, ts_type, i_key, i_value)


def validate(buf, check_crc: bool = True) -> MessageSetInfo:
    """Sizes, magic and CRC-32 of every top-level entry (see :class:`MessageSetInfo`)."""
    return _legacy.validate(buf, check_crc)


# ----------------------------------------------------------------------------- conversion

def to_v2(buf, *, max_size: int = _compression.DEFAULT_MAX) -> bytes:
    """Record batch(es) v2 from a produced message set (Produce v0-v2).

    One batch per run of uncompressed messages and per wrapper, the wrapper's codec re-applied;
    keys, values and timestamps kept (magic 0: -1), headers none, producer id -1. Offsets are
    relative: the first batch's baseOffset is 0 and each next one continues where the previous
    ended -- the log assigns the real ones. A partial last message is dropped, as Kafka trims
    it; any other damage raises :class:`~fastkafka.errors.CorruptRecordError`.
    """
    batches = []
    next_offset = 0
    for codec, magic, attributes, offset, timestamp, payload in _legacy.legacy_units(buf):
        if codec == NONE:
            batch, count, base_ts, max_ts = _legacy.to_v2_records(payload, False, reserve=_BATCH_HEADER,
                                                                      check_crc=False)  # legacy_units did
        else:
            _check(codec, magic)
            inner = _decompress(codec, magic, payload, max_size)
            stream, count, base_ts, max_ts = _legacy.to_v2_records(inner, True, magic, attributes, timestamp)
            if count == 0:
                continue
            batch = bytearray(_BATCH_HEADER) + _compression.compress(codec, stream)
        finish_batch(batch, record_count=count, last_offset_delta=count - 1, base_timestamp=base_ts,
                     max_timestamp=max_ts, base_offset=next_offset, compression=codec,
                     timestamp_type=(attributes & _TIMESTAMP_TYPE_BIT) >> 3 if magic == 1 else 0)
        batches.append(batch)
        next_offset += count
    return b"".join(batches)


def down_convert(buf, magic: int, *, max_size: int = _compression.DEFAULT_MAX) -> bytes:
    """A magic 0 or 1 message set from v2 batches as stored in the log (Fetch v0-v3).

    Absolute offsets kept; each compressed batch becomes one wrapper with the same codec;
    headers, control batches and a partial last batch are dropped. zstd batches raise
    :class:`~fastkafka.errors.UnsupportedCompressionError`, which the fetch handler answers
    with UNSUPPORTED_COMPRESSION_TYPE as Kafka does.
    """
    _check(NONE, magic)
    parts = []
    for part in _down.down_convert_parts(buf, magic):
        if isinstance(part, bytes):
            parts.append(part)
            continue
        codec, base_offset, base_ts, max_ts, attributes, count, payload = part
        _check(codec, magic)
        stream = _compression.decompress(codec, payload, max_size)
        inner, last_offset, wrapper_ts = _down.v2_to_legacy(stream, magic, base_offset, base_ts,
                                                            max_ts, attributes, count, True)
        if not inner:
            continue
        ts_bit = attributes & _TIMESTAMP_TYPE_BIT if magic == 1 else 0
        parts.append(_legacy.encode([(None, _compress(codec, magic, inner), wrapper_ts)], magic,
                                    last_offset, codec | ts_bit))
    return b"".join(parts)


__all__ = ["LegacyMessage", "MessageSetInfo", "build_message_set", "iter_messages", "validate",
           "to_v2", "down_convert", "NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD", "NO_TIMESTAMP",
           "NO_TIMESTAMP_TYPE", "CREATE_TIME", "LOG_APPEND_TIME"]
