"""Record keys and values of ``__transaction_state``, in Kafka's layouts (so Kafka's tools read them).

::

    TransactionLogKey    v0:  version int16 | transactional_id string
    TransactionLogValue  v0:  version int16 | producer_id int64 | producer_epoch int16
                              | transaction_timeout_ms int32 | transaction_status int8
                              | transaction_partitions [topic string | partition_ids [int32]]?
                              | last_update_timestamp_ms int64 | start_timestamp_ms int64

    TransactionLogValue  v1:  v0's fields, flexible (compact strings and arrays), with tagged
                              previous_producer_id (0), next_producer_id (1) and
                              client_transaction_version (2): Kafka 4 on transaction.version 1+

Strings are int16-length UTF-8, arrays int32-counted (-1: null). A null value is a tombstone:
the transactional id expired (``transactional.id.expiration.ms``). The status numbers are
Kafka's ``TransactionState`` ids (:data:`STATE_NAMES`). The structs are declared in the
messages' notation (:mod:`fastkafka.protocol.schema`), field for field as Kafka's JSON.

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
from ..protocol.codec import decode_struct, encode_struct
from ..protocol.schema import parse_struct
from ..protocol.types import ProtocolError

__all__ = ["TxnRecord", "txn_key", "txn_value", "decode_txn_key", "decode_txn_value", "EMPTY",
           "ONGOING", "PREPARE_COMMIT", "PREPARE_ABORT", "COMPLETE_COMMIT", "COMPLETE_ABORT", "DEAD",
           "PREPARE_EPOCH_FENCE", "STATE_NAMES"]

EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, \
    PREPARE_EPOCH_FENCE = range(8)
STATE_NAMES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
               "CompleteAbort", "Dead", "PrepareEpochFence")

_KEY_VERSION = 0
# v1, flexible, is what Kafka 4 writes once transaction.version is 1 or more (KIP-890)
_FIRST_FLEXIBLE_VALUE = 1
_VALUE_VERSION = 0
_I16 = struct.Struct(">h")

# field for field as Kafka's JSON (transaction-coordinator's TransactionLogKey/Value.json)
_KEY = parse_struct("TransactionLogKey", """
    transactional_id                      string  v0
""")
_VALUE = parse_struct("TransactionLogValue", """
    producer_id                           int64
    previous_producer_id                  int64   v1+  tag=0  =-1
    next_producer_id                      int64   v1+  tag=1  =-1
    producer_epoch                        int16
    transaction_timeout_ms                int32
    transaction_status                    int8
    transaction_partitions                []      null
      topic                               string
      partition_ids                       []int32
    transaction_last_update_timestamp_ms  int64
    transaction_start_timestamp_ms        int64
    client_transaction_version            int16   v1+  tag=2  =0
""")


class TxnRecord(NamedTuple):
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int
    partitions: set[tuple[str, int]]
    last_update_ms: int
    start_ms: int


def txn_key(transactional_id: str) -> bytes:
    return _I16.pack(_KEY_VERSION) + encode_struct(_KEY, _KEY_VERSION, {"transactional_id": transactional_id})


def decode_txn_key(buf) -> str | None:
    """The transactional id of a key; None for a key version we do not know."""
    if len(buf) < 2:
        raise errors.CorruptRecordError("__transaction_state key without a version")
    if _I16.unpack_from(buf, 0)[0] != _KEY_VERSION:
        return None
    try:
        return decode_struct(_KEY, _KEY_VERSION, buf, 2)[0].transactional_id
    except ProtocolError as e:
        raise errors.CorruptRecordError(str(e)) from None


def txn_value(t: TxnRecord) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(t.partitions):
        by_topic.setdefault(topic, []).append(p)
    return _I16.pack(_VALUE_VERSION) + encode_struct(_VALUE, _VALUE_VERSION, {
        "producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
        "transaction_timeout_ms": t.timeout_ms, "transaction_status": t.state,
        "transaction_partitions": [{"topic": topic, "partition_ids": parts} for topic, parts in by_topic.items()],
        "transaction_last_update_timestamp_ms": t.last_update_ms,
        "transaction_start_timestamp_ms": t.start_ms})


def decode_txn_value(buf) -> TxnRecord:
    """v0, or the flexible v1 of a client on transaction version 0 or 1. Raises CorruptRecordError
    for truncated bytes, an unknown version, or a transaction of a client on transaction version 2
    (an epoch bump per transaction, which this coordinator does not run): the loader skips it."""
    try:
        if len(buf) < 2:
            raise ProtocolError("no value version")
        version = _I16.unpack_from(buf, 0)[0]
        if not 0 <= version <= _FIRST_FLEXIBLE_VALUE:
            raise ProtocolError(f"value version {version} is not known")
        v = decode_struct(_VALUE, version, buf, 2, flexible=version >= _FIRST_FLEXIBLE_VALUE)[0]
    except ProtocolError as e:
        raise errors.CorruptRecordError(f"__transaction_state: {e}") from None
    if v.client_transaction_version >= 2:
        raise errors.CorruptRecordError(
            f"__transaction_state: a transaction of transaction version {v.client_transaction_version} is not read")
    partitions = {(tp.topic, p) for tp in v.transaction_partitions or () for p in tp.partition_ids}
    return TxnRecord(v.producer_id, v.producer_epoch, v.transaction_timeout_ms, v.transaction_status,
                     partitions, v.transaction_last_update_timestamp_ms, v.transaction_start_timestamp_ms)
