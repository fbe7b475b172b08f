"""Fetched record batches as ``pyarrow.RecordBatch`` with the columns of Spark's Kafka source.

Columns, in Spark's order: ``key`` binary, ``value`` binary, ``topic`` string, ``partition``
int32, ``offset`` int64, ``timestamp`` timestamp[ms], ``timestampType`` int32, ``headers``
list<struct<key: string, value: binary>>. The record bytes are decoded in Cython straight
into Arrow buffers (:func:`fastkafka.records.decode_columns`); ``topic`` and ``partition`` are
constant columns built with numpy, never per record in Python.

Example::

    >>> from fastkafka import records
    >>> buf = records.build_batch([(b"k", b"v", [], 5), (None, b"w", [], 6)], base_offset=9)
    >>> rb = to_arrow(buf, "t", 3, start_offset=10)
    >>> rb.schema.names
    ['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'headers']
    >>> rb.column("value").to_pylist(), rb.column("topic").to_pylist(), rb.column("offset").to_pylist()
    ([b'w'], ['t'], [10])
"""
from __future__ import annotations

import numpy as np

from fastkafka import records

__all__ = ["to_arrow", "SPARK_COLUMNS", "empty_batch", "schema"]

SPARK_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                 "headers"]


def schema():
    """The pyarrow schema of :func:`to_arrow`'s batches."""
    import pyarrow as pa
    return pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                      ("partition", pa.int32()), ("offset", pa.int64()),
                      ("timestamp", pa.timestamp("ms")), ("timestampType", pa.int32()),
                      ("headers", pa.list_(pa.struct([("key", pa.string()),
                                                      ("value", pa.binary())])))])


def empty_batch():
    import pyarrow as pa
    return pa.RecordBatch.from_pylist([], schema=schema())


def _constant_string(value: str, n: int):
    import pyarrow as pa
    raw = value.encode()
    offsets = np.arange(0, (n + 1) * len(raw), len(raw) or 1, dtype=np.int32)[:n + 1] \
        if raw else np.zeros(n + 1, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(raw * n)])


def to_arrow(buf, topic: str, partition: int, start_offset: int = 0, *, check_crc: bool = True):
    """Every record of the whole batches in ``buf`` at offset >= ``start_offset`` (a fetch
    returns the batch containing the fetch offset, which may start before it)."""
    import pyarrow as pa
    cols = records.decode_columns(buf, check_crc=check_crc)
    n = cols.count
    if n == 0:
        return empty_batch()
    base = records.columns_to_arrow(cols)
    arrays = [base.column(0), base.column(1), _constant_string(topic, n),
              pa.array(np.full(n, partition, dtype=np.int32)),
              base.column(2), base.column(3), base.column(4), base.column(5)]
    rb = pa.RecordBatch.from_arrays(arrays, SPARK_COLUMNS)
    offsets = np.frombuffer(cols.offsets, dtype=np.int64)
    first = int(np.searchsorted(offsets, start_offset)) if offsets[0] < start_offset else 0
    return rb.slice(first) if first else rb
