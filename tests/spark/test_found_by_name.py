"""``format("fastkafka")`` is found by name on a fresh SparkSession, with no fastkafka import or
register() call in the driver: Spark 4 registers the installed ``pyspark_fastkafka`` module's
DefaultSource itself. Batch read, batch write, streaming read and streaming write, in a child
process whose driver never imports fastkafka."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import create_topic, produce

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

CHILD = textwrap.dedent("""
    import json, os, sys
    from pyspark.sql import SparkSession
    bootstrap, src, dst, ckpt = sys.argv[1:5]
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())
    read = (spark.read.format("fastkafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", src).load())
    batch = sorted(bytes(r.value) .decode() for r in read.collect())
    read.select("key", "value").write.format("fastkafka").option("kafka.bootstrap.servers", bootstrap) \\
        .option("topic", dst).mode("append").save()
    stream = (spark.readStream.format("fastkafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", src).option("startingOffsets", "earliest").load())
    q = (stream.select("key", "value").writeStream.format("fastkafka")
         .option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
         .option("checkpointLocation", ckpt).trigger(availableNow=True).start())
    q.awaitTermination(120)
    copied = sorted(bytes(r.value).decode() for r in spark.read.format("fastkafka")
                    .option("kafka.bootstrap.servers", bootstrap).option("subscribe", dst).load().collect())
    spark.stop()
    print(json.dumps({"fastkafka_imported_by_driver": any(m == "fastkafka" or m.startswith("fastkafka.")
                                                           for m in sys.modules),
                      "batch": batch, "copied": copied}))
""")


def test_format_found_without_registration(broker, topic_name, tmp_path):
    create_topic(broker, topic_name, partitions=2)
    produce(broker, topic_name, [{"value": b"r%d" % i, "partition": i % 2} for i in range(20)])
    dst = topic_name + "-copy"
    create_topic(broker, dst, partitions=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    out = subprocess.run([sys.executable, "-c", CHILD, broker.bootstrap, topic_name, dst,
                          str(tmp_path / "ckpt")], capture_output=True, text=True, timeout=280,
                         cwd=str(tmp_path), env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    expected = sorted(f"r{i}" for i in range(20))
    assert got["fastkafka_imported_by_driver"] is False
    assert got["batch"] == expected
    assert got["copied"] == sorted(expected * 2)          # the batch write, then the stream
