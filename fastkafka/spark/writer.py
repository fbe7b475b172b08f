"""Writes: ``df.write.format("fastkafka")`` and ``writeStream.format("fastkafka")``.

The columns are those of Spark's Kafka sink: ``value`` (required, string or binary), ``key``
(string or binary), ``topic`` (string; the ``topic`` option wins when both are given),
``partition`` (int; otherwise murmur2 of the key like Java's producer, or one partition per
chunk for null keys) and ``headers`` (array<struct<key string, value binary>>). Each task sends
its rows through :class:`fastkafka.client.sender.Sender` (batches built in Cython, pipelined per
leader, retried on retriable errors) and fails the task on the first error, so Spark retries it:
delivery is at-least-once, as with Spark's own sink.

Example::

    (df.selectExpr("CAST(id AS STRING) AS key", "payload AS value")
       .write.format("fastkafka").option("kafka.bootstrap.servers", "127.0.0.1:9092")
       .option("topic", "orders").mode("append").save())

Spark accepts only the append (and overwrite) modes for Python data sources; both append.
"""
from __future__ import annotations

import random
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import (DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructType)

from fastkafka.client import Cluster
from fastkafka.client.partitioner import murmur2_partition
from fastkafka.client.sender import Sender

from .options import KafkaOptionError, SinkOptions

__all__ = ["BatchWriter", "StreamWriter", "KafkaCommitMessage", "validate_write_schema"]

_TARGET_CHUNK_BYTES = 512 << 10   # one batch per chunk; several chunks make one request


class KafkaCommitMessage(WriterCommitMessage):
    """What one task sent: ``records`` rows."""

    def __init__(self, records: int):
        self.records = records


def validate_write_schema(schema: StructType, opts: SinkOptions) -> None:
    """Reject columns Spark's Kafka sink rejects, with its messages."""
    types = {f.name: f.dataType for f in schema.fields}
    if opts.topic is None:
        if "topic" not in types:
            raise KafkaOptionError("topic option required when no 'topic' attribute is present. "
                                   "Use the topic option for setting a topic.")
        if not isinstance(types["topic"], StringType):
            raise KafkaOptionError(f"topic attribute unsupported type "
                                   f"{types['topic'].simpleString()}. topic must be a string")
    if "value" not in types:
        raise KafkaOptionError("Required attribute 'value' not found")
    for name in ("key", "value"):
        if name in types and not isinstance(types[name], (StringType, BinaryType)):
            raise KafkaOptionError(f"{name} attribute unsupported type "
                                   f"{types[name].simpleString()}")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise KafkaOptionError(f"partition attribute unsupported type "
                               f"{types['partition'].simpleString()}. partition must be a(n) int")
    h = types.get("headers")
    if h is not None and not (
            isinstance(h, ArrayType) and isinstance(h.elementType, StructType)
            and [(f.name, type(f.dataType)) for f in h.elementType.fields]
            == [("key", StringType), ("value", BinaryType)]):
        raise KafkaOptionError(f"headers attribute unsupported type {h.simpleString()}")


def _column(rb: pa.RecordBatch, name: str) -> list | None:
    i = rb.schema.get_field_index(name)
    if i < 0:
        return None
    col = rb.column(i)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        col = col.cast(pa.binary())   # zero-copy: a string's bytes are its UTF-8
    return col.to_pylist()


class _TaskProducer:
    """Routes one task's rows to partitions and sends them in chunks."""

    def __init__(self, opts: SinkOptions):
        self.opts = opts
        self.cluster = Cluster({
            "bootstrap.servers": opts.bootstrap_servers, "client.id": "fastkafka-spark-writer",
            "acks": opts.acks, "compression.type": opts.compression,
            "request.timeout.ms": opts.request_timeout_ms,
            "max.request.size": opts.max_request_size})
        self.sender = Sender(self.cluster)
        self.pending: dict[tuple, list] = {}
        self.pending_bytes = 0
        self.sent = 0
        self._sticky: dict[str, int] = {}

    def _partition(self, topic: str, key, given) -> int:
        if given is not None:
            return given
        n = len(self.cluster.partitions_for(topic))
        if key is not None:
            return murmur2_partition(key, n)
        p = self._sticky.get(topic)
        if p is None:   # null keys stick to one partition per chunk, like Java's sticky partitioner
            p = self._sticky[topic] = random.randrange(n)
        return p

    def add(self, rb: pa.RecordBatch) -> None:
        n = rb.num_rows
        values = _column(rb, "value")
        keys = _column(rb, "key") or [None] * n
        topics = ([self.opts.topic] * n if self.opts.topic is not None
                  else [t.decode() if t is not None else None for t in _column(rb, "topic")])
        parts = _column(rb, "partition") or [None] * n
        headers = _column(rb, "headers") if self.opts.include_headers else None
        for i in range(n):
            topic = topics[i]
            if topic is None:
                raise KafkaOptionError("Null topic present in the data. Use the topic option "
                                       "for setting a default topic.")
            hs = [(h["key"], h["value"]) for h in headers[i]] if headers and headers[i] else []
            value = values[i]
            tp = (topic, self._partition(topic, keys[i], parts[i]))
            self.pending.setdefault(tp, []).append((keys[i], value, hs, None))
            self.pending_bytes += (len(value) if value is not None else 0) + 16
        if self.pending_bytes >= 4 * _TARGET_CHUNK_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        chunks = []
        for tp, recs in self.pending.items():
            per = max(1, len(recs) * _TARGET_CHUNK_BYTES // max(1, self.pending_bytes))
            chunks += [(tp, recs[i:i + per]) for i in range(0, len(recs), per)]
        self.pending, self.pending_bytes = {}, 0
        self._sticky.clear()
        for _tp, count, _md, err in self.sender.send(chunks):
            if err is not None:
                raise err
            self.sent += count

    def close(self) -> None:
        self.cluster.close()


def _write(opts: SinkOptions, batches: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
    producer = _TaskProducer(opts)
    try:
        for rb in batches:
            producer.add(rb)
        producer.flush()
        return KafkaCommitMessage(producer.sent)
    finally:
        producer.close()


class BatchWriter(DataSourceArrowWriter):
    """``df.write.format("fastkafka")``: every task sends its rows; nothing to commit."""

    def __init__(self, opts: SinkOptions, schema: StructType):
        validate_write_schema(schema, opts)
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return _write(self.opts, iterator)

    def commit(self, messages) -> None:
        # The records are on the broker once write() returned; Kafka has no commit to make.
        pass

    def abort(self, messages) -> None:
        # Records sent by tasks that succeeded stay: at-least-once, as Spark's Kafka sink.
        pass


class StreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("fastkafka")``: each micro-batch's tasks send their rows."""

    def __init__(self, opts: SinkOptions, schema: StructType):
        validate_write_schema(schema, opts)
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return _write(self.opts, iterator)

    def commit(self, messages, batchId: int) -> None:
        pass

    def abort(self, messages, batchId: int) -> None:
        pass
