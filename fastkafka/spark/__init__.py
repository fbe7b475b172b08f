"""PySpark data source ``fastkafka``: Spark's Kafka source and sink, served by fastkafka.

Installed, the format is found by name: Spark 4 registers the ``DefaultSource`` of the installed
top-level module :mod:`pyspark_fastkafka` on its own. Importing this package also registers it
with the active SparkSession, if there is one, and :func:`register` does so explicitly (Spark
before 4.0's static lookup, or a session that started before the install). Options and schema are
those of Spark's own Kafka connector.

Example::

    df = (spark.read.format("fastkafka").option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders").load())
    df.selectExpr("CAST(value AS STRING)").show()

A secured broker takes Spark's ``kafka.``-prefixed security options (``kafka.security.protocol``,
``kafka.ssl.*``, ``kafka.sasl.*``; see :mod:`fastkafka.spark.options`) on reads and writes. A
file option is read by the driver (when it plans a read) and by every executor, so the file must
be there; PEM text (``kafka.ssl.truststore.certificates``) needs none::

    df = (spark.read.format("fastkafka").option("kafka.bootstrap.servers", "broker:9093")
          .option("kafka.security.protocol", "SASL_SSL")
          .option("kafka.sasl.mechanism", "SCRAM-SHA-512")
          .option("kafka.sasl.username", "alice").option("kafka.sasl.password", password)
          .option("kafka.ssl.truststore.location", "/etc/kafka/ca.pem")
          .option("subscribe", "orders").load())
"""
from __future__ import annotations

import os
import sys

from .source import FastKafkaSource, spark_schema

__all__ = ["FastKafkaSource", "spark_schema", "register", "setup_environment", "local_session"]


def setup_environment(local: bool = False) -> None:
    """Point Spark's Python workers at this interpreter (which can import fastkafka); with
    ``local`` also bind Spark to loopback. Variables already set are left alone."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def register(spark) -> None:
    """Register ``format("fastkafka")`` with ``spark`` (a SparkSession)."""
    spark.dataSource.register(FastKafkaSource)


def local_session(app_name: str = "fastkafka", master: str = "local[2]", spark_conf=None, **conf):
    """A SparkSession with the UI off and few shuffle partitions, ``fastkafka`` registered:
    local by default, or a driver of any other ``master`` (``spark://host:7077``); only a local
    one is bound to loopback.

    ``conf`` keys use ``_`` for ``.`` (``sql_shuffle_partitions=4``); ``spark_conf`` takes
    Spark's own names (``{"spark.executorEnv.TZ": "UTC"}``) and wins over both."""
    setup_environment(local=master.startswith("local"))
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4"))
    for key, value in conf.items():
        builder = builder.config("spark." + key.replace("_", "."), str(value))
    for key, value in (spark_conf or {}).items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    register(spark)
    return spark


def _register_with_active_session() -> None:
    setup_environment()
    try:
        from pyspark.sql import SparkSession
        spark = SparkSession.getActiveSession()
    except Exception:  # no JVM yet, or pyspark too old: registration is then explicit
        return
    if spark is not None:
        register(spark)


_register_with_active_session()
