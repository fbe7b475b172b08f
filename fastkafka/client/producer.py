"""The seeds' Producer: ``send(ProducerData)`` through a sync or an async (batching) path.

``producer.type=sync`` sends in the caller's thread and returns the
:class:`~fastkafka.client.sender.RecordMetadata` of each acknowledged chunk (raising the
first error). ``producer.type=async`` queues records per partition (see
:mod:`~fastkafka.client.accumulator`) and a background thread — the seeds'
``ProducerSendThread`` — sends a partition's batch once it holds ``batch.size`` bytes or has
waited ``linger.ms`` (the seeds' ``queue.time``). Delivery errors of async sends go to the
callback handler and are raised by the next :meth:`Producer.flush` / :meth:`Producer.close`,
so they are never silently lost.

Values pass through the ``serializer.class`` :class:`Encoder` (default: bytes as they are,
``str`` as UTF-8), keys through ``key.serializer.class``; the ``partitioner.class`` picks a
partition from the encoded key (default murmur2, like Java). A :class:`CallbackHandler` sees
each send at enqueue, before its batch is built, and at acknowledgement.

Example::

    p = Producer({"bootstrap.servers": "127.0.0.1:9092", "producer.type": "async",
                  "queue.time": 5, "compression.type": "lz4"})
    p.send(ProducerData("orders", b"customer-7", [b"order 1", b"order 2"],
                        headers=[("source", b"web")]))
    p.send([ProducerData("clicks", None, [b"x"] * 1000)])
    p.flush()
    p.close()
"""
from __future__ import annotations

import logging
import random
import threading
from typing import Any, Iterable

from fastkafka import errors

from .accumulator import RecordAccumulator
from .config import ClientConfig, ConfigException
from .metadata import Cluster
from .partitioner import Murmur2Partitioner, get_partitioner, murmur2_partition
from .sender import EncodedRecords, RecordMetadata, Sender
from .transactions import TransactionManager

__all__ = ["Producer", "ProducerData", "Encoder", "DefaultEncoder", "StringEncoder",
           "CallbackHandler", "RecordMetadata"]

log = logging.getLogger("fastkafka.client")
_RECORD_OVERHEAD = 12   # rough per-record bytes in a batch beyond key and value (varints, deltas)


class ProducerData:
    """Messages for one topic sharing a key: the seeds' ``ProducerData(topic, key, messages)``.

    ``messages`` is a list (or one message); ``partition`` forces a partition; ``headers``
    (``[(str, bytes)]``) and ``timestamp`` (ms; None = now) apply to every message.
    """

    __slots__ = ("topic", "key", "messages", "partition", "headers", "timestamp")

    def __init__(self, topic: str, key: Any = None, messages: Any = None, *,
                 partition: int | None = None, headers=None, timestamp: int | None = None):
        # Built once per record by per-record callers: the common shapes are tested first.
        self.topic = topic
        self.key = key
        if type(messages) is not list:
            if type(messages) is bytes:
                messages = [messages]
            elif messages is None:
                messages = []
            else:
                messages = list(messages) if isinstance(messages, tuple) else [messages]
        self.messages = messages
        self.partition = partition
        self.headers = None if headers is None else (list(headers) or None)
        self.timestamp = timestamp

    def __repr__(self):
        return f"ProducerData({self.topic!r}, {self.key!r}, <{len(self.messages)} messages>)"


class Encoder:
    """The seeds' ``Encoder``: ``to_message(obj) -> bytes`` (None stays None: a tombstone)."""

    def to_message(self, obj: Any) -> bytes | None:  # pragma: no cover - interface
        raise NotImplementedError


class DefaultEncoder(Encoder):
    """Bytes-likes as they are, ``str`` as UTF-8."""

    def to_message(self, obj):
        if obj is None or isinstance(obj, (bytes, bytearray, memoryview)):
            return obj
        if isinstance(obj, str):
            return obj.encode()
        raise TypeError(f"DefaultEncoder takes bytes or str, not {type(obj).__name__}; "
                        "set serializer.class to an Encoder")


class StringEncoder(Encoder):
    """``str(obj)`` as UTF-8."""

    def to_message(self, obj):
        return None if obj is None else str(obj).encode()


class CallbackHandler:
    """Hooks around the producer pipeline (the seeds' ``callback.handler``); override any.

    Called from the sending thread (the caller's in sync mode, the sender thread in async
    mode): keep them quick.
    """

    def on_enqueue(self, data: ProducerData) -> None:
        """A ProducerData was accepted by send()."""

    def before_send(self, topic: str, partition: int, records: list) -> None:
        """``records`` (key, value, headers, timestamp) are about to become one batch."""

    def on_acknowledgement(self, topic: str, partition: int, offset: int, count: int,
                           error: BaseException | None) -> None:
        """A batch of ``count`` records was written at ``offset`` (or failed with ``error``)."""


def _encoder(spec) -> Encoder | None:
    if spec is None:
        return None
    if isinstance(spec, str):
        import importlib  # noqa: PLC0415  (user-supplied class path)
        mod, _, name = spec.replace(":", ".").rpartition(".")
        spec = getattr(importlib.import_module(mod), name)
    return spec() if isinstance(spec, type) else spec


class Producer:
    """Sends :class:`ProducerData` to the cluster in ``config`` (a dict of Kafka properties)."""

    def __init__(self, config: dict | ClientConfig | None = None, **kw):
        self.config = config if isinstance(config, ClientConfig) else ClientConfig(config, **kw)
        c = self.config
        self.cluster = Cluster(c)
        self.encoder = _encoder(c["serializer.class"])
        self.key_encoder = _encoder(c["key.serializer.class"])
        self.partitioner = get_partitioner(c["partitioner.class"])
        # The default partitioner is called as the Cython function itself (one call less per record).
        self._partition = (murmur2_partition if type(self.partitioner) is Murmur2Partitioner
                           else self.partitioner.partition)
        self.callbacks = _encoder(c["callback.handler"])
        self._nparts: dict[str, tuple[int, int]] = {}   # topic -> (cluster.generation, count)
        self._sticky: dict[str, int] = {}                # topic -> partition for null keys
        self.sender = Sender(self.cluster, self.callbacks)
        self.transactions: TransactionManager | None = None
        if c["transactional.id"] is not None:
            if c["acks"] != -1 or not c["enable.idempotence"]:
                raise ConfigException("transactional.id needs enable.idempotence=true and acks=all")
            self.transactions = TransactionManager(
                self.cluster, self.sender, c["transactional.id"], c["transaction.timeout.ms"],
                request_timeout_ms=c["request.timeout.ms"], backoff_s=c["retry.backoff.ms"] / 1000)
        self.is_async = c["producer.type"] == "async"
        self._lock = threading.Lock()          # sync mode: one send at a time on the wire
        self._errors: list[BaseException] = []
        self._closed = False
        self._thread = None
        if self.is_async:
            self.accumulator = RecordAccumulator(c["batch.size"], c["queue.buffering.max.messages"],
                                                 c["queue.enqueue.timeout.ms"])
            self._linger = c["linger.ms"] / 1000
            self._thread = threading.Thread(target=self._run, name="fastkafka-producer-send",
                                            daemon=True)
            self._thread.start()
        # send()'s one-record shortcut needs nothing but bytes to be queued: no encoder to
        # run, no hook to call, a queue to put the record in.
        self._fast = (self.is_async and self.encoder is None and self.key_encoder is None
                      and self.callbacks is None and self.transactions is None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the API --------------------------------------------------------------------------

    def send(self, data: ProducerData | Iterable[ProducerData]) -> list[RecordMetadata] | None:
        """Send one ProducerData or a list. Sync mode returns the acknowledged
        :class:`RecordMetadata` per batch and raises the first delivery error; async mode
        queues (blocking while the queue is full) and returns None."""
        # One bytes record with a bytes-or-None key in async mode, the shape of a per-record
        # loop: ~0.5 µs here instead of the general path's list building and size sums.
        if type(data) is ProducerData and self._fast:
            msgs = data.messages
            if len(msgs) == 1:
                value = msgs[0]
                key = data.key
                if type(value) is bytes and (key is None or type(key) is bytes):
                    topic, partition = data.topic, data.partition
                    if partition is None:
                        partition = self._pick(topic, key)
                    filled = self.accumulator.append_one(
                        (topic, partition), (key, value, data.headers, data.timestamp),
                        len(value) + _RECORD_OVERHEAD if key is None
                        else len(value) + len(key) + _RECORD_OVERHEAD)
                    if filled and key is None and data.partition is None:
                        self._unstick(topic, partition)
                    return None
        if self._closed:
            raise errors.KafkaError("producer is closed")
        items = [data] if isinstance(data, ProducerData) else data
        chunks = []
        for pd in items:
            tp, recs, nbytes = self._prepare(pd)
            if self.callbacks is not None:
                self.callbacks.on_enqueue(pd)
            if not recs:
                continue
            if self.transactions is not None:
                self.transactions.add_partitions((tp,))
            if self.is_async:
                self.accumulator.append(tp, recs, nbytes)
            else:
                chunks.append((tp, recs, nbytes))
        if self.is_async:
            return None
        return self._send_sync(chunks)

    def send_encoded(self, chunks: list[tuple[tuple[str, int], EncodedRecords]]) -> list[RecordMetadata]:
        """Send record streams that are already encoded -- ``[((topic, partition),
        EncodedRecords)]``, e.g. the records of a fetched batch copied as they are -- each as
        one batch with this producer's compression, producer id and sequence numbers (in a
        transaction, the partitions join it first). Sync mode only: returns the
        :class:`RecordMetadata` per chunk, in order, and raises the first delivery error.

        Example::

            >>> from fastkafka._core.records_build import encode_records
            >>> enc = EncodedRecords(*encode_records([(b"k", b"v", [("h", b"1")], 1000)], 0, reserve=61))
            >>> enc.count, enc.base_timestamp      # then: producer.send_encoded([(("t", 0), enc)])
            (1, 1000)
        """
        if self._closed:
            raise errors.KafkaError("producer is closed")
        if self.is_async:
            raise ConfigException("send_encoded needs producer.type=sync")
        chunks = list(chunks)
        if self.transactions is not None:
            self.transactions.add_partitions({tp for tp, _enc in chunks})
        with self._lock:
            return _acknowledged(self.sender.send(chunks))

    def flush(self, timeout: float | None = None) -> None:
        """Async: wait until everything queued so far is acknowledged or failed, then raise the
        first delivery error since the last flush. Sync: nothing to do."""
        if self.is_async and not self.accumulator.wait_empty(timeout):
            raise errors.RequestTimedOutError(f"flush did not finish in {timeout} s")
        self._raise_errors()

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued, stop the sender thread and close the connections."""
        if self._closed:
            return
        self._closed = True
        self._fast = False
        try:
            if self.is_async:
                self.accumulator.wait_empty(timeout)
                self.accumulator.close()
                self._thread.join(timeout)
        finally:
            if self.transactions is not None:
                self.transactions.close()
            self.cluster.close()
        self._raise_errors()

    # -- transactions (transactional.id) ------------------------------------------------------

    def init_transactions(self) -> None:
        """Get this ``transactional.id``'s producer id and epoch: earlier producers with the id
        are fenced and their open transaction aborted. Call once, before the first transaction.

        Example (one consume-transform-produce step against an embedded broker)::

            >>> import tempfile
            >>> from fastkafka.config import KafkaConfig
            >>> from fastkafka.server.broker import Broker
            >>> tmpdir = tempfile.TemporaryDirectory()
            >>> b = Broker(KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0",
            ...                         "log.dirs": tmpdir.name}))
            >>> b.startup(); _ = b.topics.create("out", 1); _ = b.topics.create("in", 1)
            >>> p = Producer({"bootstrap.servers": f"127.0.0.1:{b.port}", "transactional.id": "tx"})
            >>> p.init_transactions()
            >>> p.begin_transaction()
            >>> _ = p.send(ProducerData("out", b"k", [b"v1", b"v2"]))
            >>> p.send_offsets_to_transaction({("in", 0): 7}, "etl")
            >>> p.commit_transaction()     # the records, then the COMMIT marker at offset 2
            >>> b.topics.log("out", 0).last_stable_offset
            3
            >>> p.close(); b.shutdown(); tmpdir.cleanup()
        """
        self._txn().init()

    def begin_transaction(self) -> None:
        """Start a transaction: sends until commit or abort belong to it."""
        self._txn().begin()

    def send_offsets_to_transaction(self, offsets: dict[tuple[str, int], int], group_id: str) -> None:
        """Commit ``group_id``'s ``{(topic, partition): next offset}`` with this transaction."""
        self._txn().send_offsets(offsets, group_id)

    def commit_transaction(self) -> None:
        """Flush, then commit: read_committed consumers see the transaction's records."""
        self.flush()
        self._txn().end(True)

    def abort_transaction(self) -> None:
        """Flush, then abort: the transaction's records and offsets are never visible to
        read_committed consumers."""
        try:
            self.flush()
        finally:
            self._txn().end(False)

    def _txn(self) -> TransactionManager:
        if self.transactions is None:
            raise errors.InvalidTxnStateError("the producer has no transactional.id")
        return self.transactions

    def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic`` (fetching metadata if needed)."""
        return self.cluster.partitions_for(topic)

    # -- internals ------------------------------------------------------------------------

    def _prepare(self, pd: ProducerData):
        enc = self.encoder
        values = pd.messages if enc is None else [enc.to_message(m) for m in pd.messages]
        key = pd.key
        if key is not None:
            key = self.key_encoder.to_message(key) if self.key_encoder is not None else (
                key.encode() if isinstance(key, str) else key)
        partition = pd.partition
        if partition is None:   # an unkeyed list is one batch already: a fresh random partition
            partition = (self._pick(pd.topic, key) if key is not None
                         else random.randrange(self._num_partitions(pd.topic)))
        headers, ts = pd.headers, pd.timestamp
        if enc is None and values and not isinstance(values[0], (bytes, bytearray, memoryview)):
            values = [DefaultEncoder().to_message(v) for v in values]
        recs = [(key, v, headers, ts) for v in values]
        try:
            nbytes = sum(map(len, values)) + len(values) * (
                _RECORD_OVERHEAD + (len(key) if key is not None else 0))
        except TypeError:   # None values (tombstones)
            nbytes = sum(len(v) if v is not None else 0 for v in values) + len(values) * _RECORD_OVERHEAD
        return (pd.topic, partition), recs, nbytes

    def _num_partitions(self, topic: str) -> int:
        hit = self._nparts.get(topic)
        if hit is not None and hit[0] == self.cluster.generation:
            return hit[1]
        n = len(self.cluster.topic(topic).partitions)
        self._nparts[topic] = (self.cluster.generation, n)
        return n

    def _pick(self, topic: str, key: bytes | None) -> int:
        """The partition for ``key``: the partitioner's choice, or for no key a random one
        that sticks until its batch fills (KIP-480), so unkeyed sends still make big batches."""
        if key is not None:
            return self._partition(key, self._num_partitions(topic))
        p = self._sticky.get(topic)
        if p is None:
            p = self._sticky[topic] = random.randrange(self._num_partitions(topic))
        return p

    def _unstick(self, topic: str, partition: int) -> None:
        """KIP-480: a batch of the sticky partition is complete, the next one goes elsewhere."""
        n = self._num_partitions(topic)
        self._sticky[topic] = (partition + random.randrange(1, n)) % n if n > 1 else partition

    def _send_sync(self, chunks) -> list[RecordMetadata]:
        batch_size = self.config["batch.size"]
        split = []
        for tp, recs, nbytes in chunks:
            per = max(1, int(len(recs) * batch_size / nbytes)) if nbytes > batch_size else len(recs)
            split += [(tp, recs[i:i + per]) for i in range(0, len(recs), per)]
        with self._lock:
            return _acknowledged(self.sender.send(split))

    def _run(self) -> None:
        acc = self.accumulator
        while True:
            acc.wait_ready(self._linger)
            chunks = acc.drain(self._linger)
            if not chunks:
                if acc.closed:
                    return
                continue
            try:
                results = self.sender.send(chunks)
            except BaseException as e:  # noqa: BLE001 - the thread must survive to release
                log.exception("producer sender failed")
                results = [(tp, len(recs), None, e) for tp, recs in chunks]
            sent = 0
            for _tp, count, _md, err in results:
                sent += count
                if err is not None:
                    self._errors.append(err)
            acc.release(sent)

    def _raise_errors(self) -> None:
        if self._errors:
            errs, self._errors = self._errors, []
            if len(errs) > 1:
                log.error("%d more producer delivery errors after the first: %s",
                          len(errs) - 1, errs[1:4])
            raise errs[0]


def _acknowledged(results) -> list[RecordMetadata]:
    """The Sender's ``[(tp, count, metadata, error)]`` as metadata; raises the first error."""
    out = []
    for _tp, _count, md, err in results:
        if err is not None:
            raise err
        out.append(md)
    return out
