"""A Spark driver as users write one: it never imports fastkafka and registers nothing, so
``format("fastkafka")`` must be found by name wherever the plan runs (the standalone driver and
executors, or the Spark Connect server and its executors).

    python cluster_child.py (--master spark://... | --remote sc://...) BOOTSTRAP SRC DST WORKDIR [MODE]

MODE ``read-write`` (the default) batch-reads SRC, writes its key/value to DST with the batch
writer, streams SRC with ``availableNow`` into a Parquet directory, and prints one JSON line: the
master, the records read, streamed, and which JVM ran each read task. MODE ``stream-write``
streams SRC into DST with ``writeStream.format("fastkafka")`` (``availableNow``), each row keeping
its partition and carrying, as header ``jvm``, the JVM its task ran in.
"""
import json
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

EXECUTOR_MAIN = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"


def task_jvm(_):
    """The JVM this Python worker runs under, found by walking up the process tree:
    ``executor <id> pid <pid>`` for an executor, else the first JVM's main class."""
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        if EXECUTOR_MAIN in argv:
            return f"executor {argv[argv.index(b'--executor-id') + 1].decode()} pid {pid}"
        if os.path.basename(argv[0]) == b"java":
            return "jvm " + next((a for a in argv if a.startswith(b"org.apache.spark")), b"?").decode()
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return "no jvm"


def read_write(spark, kafka: dict, src: str, dst: str, workdir: str) -> dict:
    read = spark.read.format("fastkafka").options(subscribe=src, **kafka).load()
    batch = sorted(bytes(r.value).decode() for r in read.collect())
    jvms = sorted({r.jvm for r in read.select(F.udf(task_jvm, "string")("partition").alias("jvm"))
                   .collect()})
    read.select("key", "value").write.format("fastkafka").options(topic=dst, **kafka) \
        .mode("append").save()
    out = os.path.join(workdir, "streamed")
    query = (spark.readStream.format("fastkafka").options(subscribe=src, startingOffsets="earliest",
                                                          maxOffsetsPerTrigger="20", **kafka).load()
             .selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
             .writeStream.format("parquet").option("path", out)
             .option("checkpointLocation", os.path.join(workdir, "ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination(180)
    streamed = sorted(r.value for r in spark.read.parquet(out).collect())
    return {"batch": batch, "jvms": jvms, "streamed": streamed,
            "stream_batches": len(query.recentProgress)}


def stream_write(spark, kafka: dict, src: str, dst: str, workdir: str) -> dict:
    # The header comes from a Python UDF evaluated in the task that writes the row, so it names
    # the JVM the streaming writer ran in.
    jvm = F.udf(task_jvm, "string")("partition").cast("binary")
    query = (spark.readStream.format("fastkafka").options(subscribe=src, startingOffsets="earliest",
                                                          maxOffsetsPerTrigger="20", **kafka).load()
             .select("key", "value", "partition",
                     F.array(F.struct(F.lit("jvm").alias("key"), jvm.alias("value"))).alias("headers"))
             .writeStream.format("fastkafka").options(topic=dst, **kafka)
             .option("checkpointLocation", os.path.join(workdir, "ckpt-write"))
             .trigger(availableNow=True).start())
    query.awaitTermination(180)
    return {"batch_rows": [p.numInputRows for p in query.recentProgress]}


def main() -> int:
    how, url, bootstrap, src, dst, workdir = sys.argv[1:7]
    mode = sys.argv[7] if len(sys.argv) > 7 else "read-write"
    builder = SparkSession.builder
    if how == "--remote":
        spark = builder.remote(url).getOrCreate()
    else:
        spark = (builder.master(url).appName("fastkafka-cluster-child")
                 .config("spark.ui.enabled", "false").config("spark.executor.memory", "512m")
                 .config("spark.sql.shuffle.partitions", "2")
                 # start once every Worker's executor is up, so tasks spread over both
                 .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
                 .getOrCreate())
    kafka = {"kafka.bootstrap.servers": bootstrap}
    got = {"read-write": read_write, "stream-write": stream_write}[mode](spark, kafka, src, dst, workdir)
    got["master"] = spark.conf.get("spark.master")
    spark.stop()
    got["fastkafka_imported"] = any(m == "fastkafka" or m.startswith("fastkafka.") for m in sys.modules)
    print(json.dumps(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
