"""A `fastkafka load` run in its own process, with a fault injected through run_load's
``transform`` (a UDF over ``value``), so the product carries no test hooks.

    python load_child.py MODE MARKER MASTER LOAD-ARGS...

MODE ``fail-first-attempt``: the first attempt of every micro-batch's task 0 raises after
appending a line to MARKER; Spark retries it (MASTER ``local[2,4]`` allows 4 attempts).
MODE ``stall``: every task of micro-batch 1 appends to MARKER and sleeps, so the test can
SIGKILL the whole process group in the middle of that micro-batch.
"""
import sys
import time


def main() -> int:
    mode, marker, master, load_argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    import fastkafka.spark as fks
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from fastkafka.cli.load import build_parser, run_load

    def fault(v):
        from pyspark import TaskContext
        ctx = TaskContext.get()
        if mode == "fail-first-attempt" and ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
            with open(marker, "a") as f:
                f.write(f"stage {ctx.stageId()} attempt 0 failed\n")
            raise RuntimeError("injected failure of a task's first attempt")
        if mode == "stall" and ctx.getLocalProperty("streaming.sql.batchId") == "1":
            with open(marker, "a") as f:
                f.write("stalled in batch 1\n")
            time.sleep(600)  # stall the batch until the test kills the query
        return v

    udf = F.udf(fault, T.StringType())
    spark = fks.local_session("load-child", master=master, sql_shuffle_partitions=2)
    try:
        run_load(spark, build_parser().parse_args(load_argv),
                 transform=lambda df: df.withColumn("value", udf("value")))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
