"""Python data sources that yield pre-built Arrow batches: the most Spark's Python data source
path can carry, with no broker and no decoding — the limit a ``fastkafka`` scan is judged against.

``format("arrow_ceiling")`` yields batches in Spark's Kafka schema (7 columns);
option ``columns=value`` yields the ``value`` column alone, i.e. what the scan would carry if
Spark's Python data source API could prune columns (it cannot in Spark 4.3).

Spark's Python workers import this module by name: its directory must be on ``PYTHONPATH``.

Example::

    spark.dataSource.register(CeilingSource)
    df = spark.read.format("arrow_ceiling").options(records=10_000_000, partitions=2,
                                                    value_bytes=100).load()
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition


class _CeilingReader(DataSourceReader):
    """One batch of ``rows`` rows, built once per task and yielded until the task's share of
    ``records`` is out."""

    def __init__(self, records: int, partitions: int, value_bytes: int, rows: int,
                 value_only: bool):
        self.records, self.parts, self.value_bytes = records, partitions, value_bytes
        self.rows, self.value_only = rows, value_only

    def partitions(self):
        return [InputPartition(i) for i in range(self.parts)]

    def read(self, partition):
        import numpy as np
        import pyarrow as pa
        from fastkafka.spark.broker import _string_column, arrow_schema
        k, vb = self.rows, self.value_bytes
        values = pa.Array.from_buffers(pa.binary(), k, [
            None, pa.py_buffer(np.arange(k + 1, dtype=np.int32) * vb), pa.py_buffer(b"x" * vb * k)])
        if self.value_only:
            rb = pa.RecordBatch.from_arrays([values], names=["value"])
        else:
            rb = pa.RecordBatch.from_arrays([
                pa.nulls(k, pa.binary()), values, _string_column("bench", k),
                pa.array(np.zeros(k, np.int32)), pa.array(np.arange(k, dtype=np.int64)),
                pa.array(np.zeros(k, np.int64)).cast(pa.timestamp("us", tz="UTC")),
                pa.array(np.zeros(k, np.int32))], schema=arrow_schema(False))
        mine = self.records // self.parts
        for _ in range(mine // k):
            yield rb
        if mine % k:
            yield rb.slice(0, mine % k)


class CeilingSource(DataSource):
    """``format("arrow_ceiling")``; options ``records``, ``partitions``, ``value_bytes``,
    ``rows`` (per Arrow batch, default 150,000) and ``columns`` (``all`` or ``value``)."""

    @classmethod
    def name(cls):
        return "arrow_ceiling"

    def _value_only(self) -> bool:
        return self.options.get("columns", "all") == "value"

    def schema(self):
        from fastkafka.spark.source import spark_schema
        return "value binary" if self._value_only() else spark_schema(False)

    def reader(self, schema):
        o = self.options
        return _CeilingReader(int(o["records"]), int(o["partitions"]), int(o["value_bytes"]),
                              int(o.get("rows", 150_000)), self._value_only())
