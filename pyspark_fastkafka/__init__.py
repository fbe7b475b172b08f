"""Spark 4 finds Python data sources statically: at the first data-source lookup it imports every
installed top-level module named ``pyspark_*`` and registers its ``DefaultSource``. This module
is that hook for fastkafka, so installing ``fastkafka[spark]`` is all it takes::

    df = (spark.read.format("fastkafka")                 # no import, no register() call
          .option("kafka.bootstrap.servers", "127.0.0.1:9092").option("subscribe", "orders").load())

The source itself lives in :mod:`fastkafka.spark`.
"""
from fastkafka.spark.source import FastKafkaSource as DefaultSource

__all__ = ["DefaultSource"]
