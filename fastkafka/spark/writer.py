"""Writes: ``df.write.format("fastkafka")`` and ``writeStream.format("fastkafka")``.

The columns are those of Spark's Kafka sink: ``value`` (required, string or binary), ``key``
(string or binary), ``topic`` (string; the ``topic`` option wins when both are given),
``partition`` (int; otherwise murmur2 of the key like Java's producer, or one partition per
chunk for null keys) and ``headers`` (array<struct<key string, value binary>>). Each task works
on whole Arrow batches -- keys hashed, rows grouped and record streams encoded from the Arrow
buffers in Cython (``_core.records_arrow``), no Python object per row -- and sends them through
:class:`fastkafka.client.sender.Sender` (pipelined per leader, retried on retriable errors). It
fails the task on the first error, so Spark retries it: delivery is at-least-once, as with
Spark's own sink.

Example::

    (df.selectExpr("CAST(id AS STRING) AS key", "payload AS value")
       .write.format("fastkafka").option("kafka.bootstrap.servers", "127.0.0.1:9092")
       .option("topic", "orders").mode("append").save())

Spark accepts only the append (and overwrite) modes for Python data sources; both append.
"""
from __future__ import annotations

import random
import time
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructType)

from fastkafka._core.records_arrow import ArrowColumns, ArrowRecordsBuilder
from fastkafka.client import Cluster
from fastkafka.client.partitioner import murmur2_positive_column
from fastkafka.client.sender import EncodedRecords, Sender

from .options import KafkaOptionError, SinkOptions, client_config

__all__ = ["BatchWriter", "StreamWriter", "KafkaCommitMessage", "validate_write_schema"]

_TARGET_CHUNK_BYTES = 512 << 10   # one batch per chunk; several chunks make one request
_ROWS_PER_SLICE = 32_768


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


def _binary_spec(arr: pa.Array) -> tuple:
    """``(validity, offsets, data, offset, length)`` of a binary/string array (a string's bytes
    are its UTF-8, so both share one layout; large variants are narrowed, zero-copy if small)."""
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.binary())
    validity, offsets, data = arr.buffers()[:3]
    return (validity if arr.null_count else None, offsets, data, arr.offset, len(arr))


def _headers_spec(arr: pa.Array) -> tuple:
    """list<struct<key, value>> as the list's offsets plus its two children (struct offset
    applied by ``field``); the encoder indexes the children with the list's offsets."""
    if pa.types.is_large_list(arr.type):
        arr = arr.cast(pa.list_(arr.type.value_type))
    entries = arr.values
    validity, offsets = arr.buffers()[:2]
    return ((validity if arr.null_count else None, offsets, None, arr.offset, len(arr)),
            _binary_spec(entries.field(0)), _binary_spec(entries.field(1)))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _TaskProducer:
    """Routes one task's rows to partitions and sends them, a whole Arrow batch at a time.

    Per Arrow batch: topic codes (dictionary encoding of the topic column), partitions (the
    partition column, else murmur2 of the key over the whole column in Cython, else a sticky
    partition), one stable sort by (topic, partition), then each group's rows are appended
    straight from the Arrow buffers to that partition's open record stream (Cython). Streams
    are sealed at ~512 KiB and sent once ~2 MiB are ready; the Sender adds headers,
    compression and sequence numbers.
    """

    def __init__(self, opts: SinkOptions):
        self.opts = opts
        self.cluster = Cluster(client_config(opts, "fastkafka-spark-writer", **{
            "acks": opts.acks, "compression.type": opts.compression,
            "max.request.size": opts.max_request_size}))
        self.sender = Sender(self.cluster)
        self.open: dict[tuple, ArrowRecordsBuilder] = {}
        self.ready: list[tuple[tuple, EncodedRecords]] = []
        self.ready_bytes = 0
        self.sent = 0
        self._sticky: dict[str, int] = {}

    def _topics(self, rb: pa.RecordBatch) -> tuple[list[str], np.ndarray | None]:
        """Distinct topics and each row's index into them (None: every row the option's)."""
        if self.opts.topic is not None:
            return [self.opts.topic], None
        col = rb.column(rb.schema.get_field_index("topic"))
        if col.null_count:
            raise KafkaOptionError("Null topic present in the data. Use the topic option "
                                   "for setting a default topic.")
        enc = pc.dictionary_encode(col)
        return enc.dictionary.to_pylist(), enc.indices.to_numpy().astype(np.int64)

    def _sticky_partition(self, topic: str, n: int) -> int:
        p = self._sticky.get(topic)
        if p is None:   # null keys stick to one partition per chunk, like Java's sticky partitioner
            p = self._sticky[topic] = random.randrange(n)
        return p

    def _partitions(self, rb: pa.RecordBatch, topics: list[str],
                    codes: np.ndarray | None) -> np.ndarray:
        n = rb.num_rows
        out = np.full(n, -1, np.int64)
        todo = np.ones(n, bool)     # rows without a partition yet
        pi = rb.schema.get_field_index("partition")
        if pi >= 0:
            given = rb.column(pi)
            # A given partition, even a bad (negative) one, is sent as given: the broker's
            # answer fails the task, as before.
            out = pc.fill_null(given, 0).to_numpy(zero_copy_only=False).astype(np.int64)
            if not given.null_count:
                return out   # every row says where it goes: no metadata needed
            todo = given.is_null().to_numpy(zero_copy_only=False)
        sizes = np.array([len(self.cluster.partitions_for(t)) for t in topics], np.int64)
        per_row = sizes[codes] if codes is not None else sizes[0]
        ki = rb.schema.get_field_index("key")
        if ki >= 0:
            hashes = np.empty(n, np.int32)
            murmur2_positive_column(_binary_spec(rb.column(ki)), hashes)
            keyed = todo & (hashes >= 0)
            out = np.where(keyed, hashes % per_row, out)
            todo &= ~keyed
        if todo.any():
            for code, topic in enumerate(topics):
                rows = todo if codes is None else todo & (codes == code)
                if rows.any():
                    out[rows] = self._sticky_partition(topic, int(sizes[code]))
        return out

    def add(self, rb: pa.RecordBatch) -> None:
        # Slices (zero-copy) bound what is encoded before it is sent when Spark hands over one
        # huge batch: sending then overlaps with encoding and memory stays flat.
        for start in range(0, rb.num_rows, _ROWS_PER_SLICE):
            self._add(rb.slice(start, _ROWS_PER_SLICE))

    def _add(self, rb: pa.RecordBatch) -> None:
        n = rb.num_rows
        topics, codes = self._topics(rb)
        parts = self._partitions(rb, topics, codes)
        # Partitions are int32 (possibly negative if given so): codes * 2**33 keeps topics apart.
        group = parts if codes is None else codes * (1 << 33) + parts
        if group.min() == group.max():
            order = np.arange(n, dtype=np.int64)
            starts = np.zeros(1, np.int64)
        else:
            order = np.argsort(group, kind="stable").astype(np.int64)
            group = group[order]
            starts = np.concatenate(([0], np.flatnonzero(group[1:] != group[:-1]) + 1))
        ends = np.append(starts[1:], n)
        ki = rb.schema.get_field_index("key")
        hi = rb.schema.get_field_index("headers") if self.opts.include_headers else -1
        cols = ArrowColumns(_binary_spec(rb.column(ki)) if ki >= 0 else None,
                            _binary_spec(rb.column(rb.schema.get_field_index("value"))),
                            _headers_spec(rb.column(hi)) if hi >= 0 else None)
        ts = _now_ms()
        for s, e in zip(starts.tolist(), ends.tolist()):
            row = int(order[s])
            tp = (topics[int(codes[row])] if codes is not None else topics[0], int(parts[row]))
            builder = self.open.get(tp)
            if builder is None:
                builder = self.open[tp] = ArrowRecordsBuilder()
            while s < e:
                s = builder.append(cols, order, s, e, ts, _TARGET_CHUNK_BYTES)
                if s < e:   # the stream is full: seal it, keep appending to a fresh one
                    self._seal(tp, builder)
        if self.ready_bytes >= 4 * _TARGET_CHUNK_BYTES:
            self.flush(final=False)

    def _seal(self, tp, builder: ArrowRecordsBuilder) -> None:
        enc = EncodedRecords(*builder.finish())
        self.ready.append((tp, enc))
        self.ready_bytes += len(enc.buf)

    def flush(self, final: bool = True) -> None:
        if final:
            for tp, builder in self.open.items():
                if builder.count:
                    self._seal(tp, builder)
            self.open.clear()
        if not self.ready:
            return
        chunks, self.ready, self.ready_bytes = self.ready, [], 0
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
