"""Record keys and values of ``__transaction_state``, in Kafka's layouts (so Kafka's tools read them).

::

    TransactionLogKey    v0:  version int16 | transactional_id string
    TransactionLogValue  v0:  version int16 | producer_id int64 | producer_epoch int16
                              | transaction_timeout_ms int32 | transaction_status int8
                              | transaction_partitions [topic string | partition_ids [int32]]?
                              | last_update_timestamp_ms int64 | start_timestamp_ms int64

Strings are int16-length UTF-8, arrays int32-counted (-1: null). A null value is a tombstone:
the transactional id expired (``transactional.id.expiration.ms``). The status numbers are
Kafka's ``TransactionState`` ids (:data:`STATE_NAMES`).

Example::

    >>> v = txn_value(TxnRecord(7, 2, 60000, ONGOING, {("t", 0), ("t", 1)}, 1000, 900))
    >>> r = decode_txn_value(v)
    >>> r.producer_id, r.producer_epoch, STATE_NAMES[r.state], sorted(r.partitions)
    (7, 2, 'Ongoing', [('t', 0), ('t', 1)])
    >>> decode_txn_key(txn_key("app-1"))
    'app-1'
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from .. import errors
from .formats import RecordReader, write_string

__all__ = ["TxnRecord", "txn_key", "txn_value", "decode_txn_key", "decode_txn_value", "EMPTY",
           "ONGOING", "PREPARE_COMMIT", "PREPARE_ABORT", "COMPLETE_COMMIT", "COMPLETE_ABORT", "DEAD",
           "PREPARE_EPOCH_FENCE", "STATE_NAMES"]

EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, \
    PREPARE_EPOCH_FENCE = range(8)
STATE_NAMES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
               "CompleteAbort", "Dead", "PrepareEpochFence")

_KEY_VERSION = 0
_VALUE_VERSION = 0
_HEAD = struct.Struct(">hqhib")     # version, producer id, epoch, timeout, status
_I32, _I64 = struct.Struct(">i"), struct.Struct(">q")


class TxnRecord(NamedTuple):
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int
    partitions: set[tuple[str, int]]
    last_update_ms: int
    start_ms: int


def txn_key(transactional_id: str) -> bytes:
    out = bytearray(struct.pack(">h", _KEY_VERSION))
    write_string(out, transactional_id)
    return bytes(out)


def decode_txn_key(buf) -> str | None:
    """The transactional id of a key; None for a key version we do not know."""
    r = RecordReader(buf)
    return r.str() if r.i16() == _KEY_VERSION else None


def txn_value(t: TxnRecord) -> bytes:
    out = bytearray(_HEAD.pack(_VALUE_VERSION, t.producer_id, t.producer_epoch, t.timeout_ms, t.state))
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(t.partitions):
        by_topic.setdefault(topic, []).append(p)
    out += _I32.pack(len(by_topic))
    for topic, parts in by_topic.items():
        write_string(out, topic)
        out += _I32.pack(len(parts))
        for p in parts:
            out += _I32.pack(p)
    out += _I64.pack(t.last_update_ms)
    out += _I64.pack(t.start_ms)
    return bytes(out)


def decode_txn_value(buf) -> TxnRecord:
    """Raises CorruptRecordError for truncated bytes or a version other than 0 (Kafka 3.8+'s
    flexible v1, written only with its transaction version 2): the loader skips such a record."""
    r = RecordReader(buf)
    version = r.i16()
    if version != _VALUE_VERSION:
        raise errors.CorruptRecordError(f"__transaction_state value version {version} is not read")
    pid, epoch, timeout, state = r.i64(), r.i16(), r.i32(), r.i8()
    partitions: set[tuple[str, int]] = set()
    for _ in range(max(r.i32(), 0)):
        topic = r.str() or ""
        partitions.update((topic, r.i32()) for _ in range(max(r.i32(), 0)))
    return TxnRecord(pid, epoch, timeout, state, partitions, r.i64(), r.i64())
