"""The ``fastkafka`` data source: Spark's Kafka source schema and options, read and write.

Spark pickles this class to its planner and worker processes, which import it by module path
(``fastkafka.spark.source``): fastkafka must be importable by the Python Spark runs
(``PYSPARK_PYTHON``), which :func:`fastkafka.spark.setup_environment` points at this one.

Example::

    >>> from fastkafka.spark.source import FastKafkaSource, spark_schema
    >>> FastKafkaSource.name(), spark_schema(False).fieldNames()
    ('fastkafka', ['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType'])
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

from .options import parse_sink_options, parse_source_options

__all__ = ["FastKafkaSource", "spark_schema"]

_HEADER = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


def spark_schema(include_headers: bool) -> StructType:
    """The schema of Spark's Kafka source (``headers`` with ``includeHeaders``)."""
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()),
              StructField("topic", StringType()), StructField("partition", IntegerType()),
              StructField("offset", LongType()), StructField("timestamp", TimestampType()),
              StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", ArrayType(_HEADER)))
    return StructType(fields)


class FastKafkaSource(DataSource):
    """``format("fastkafka")``: batch and streaming reads, batch and streaming writes."""

    @classmethod
    def name(cls) -> str:
        return "fastkafka"

    def schema(self) -> StructType:
        flag = {k.lower(): v for k, v in self.options.items()}.get("includeheaders", "false")
        return spark_schema(str(flag).strip().lower() == "true")

    def reader(self, schema: StructType):
        from .batch import BatchReader, PushdownBatchReader
        opts = parse_source_options(self.options, streaming=False)
        return (PushdownBatchReader if opts.push_filters else BatchReader)(opts)

    def streamReader(self, schema: StructType):
        from .stream import StreamReader
        return StreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool):
        from .writer import BatchWriter
        return BatchWriter(parse_sink_options(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool):
        from .writer import StreamWriter
        return StreamWriter(parse_sink_options(self.options), schema)
