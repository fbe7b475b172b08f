"""``format("fastkafka")`` where users run Spark: a real standalone cluster (Master, two Workers,
executors in their own JVMs) and Spark Connect (the server runs as an application on that same
cluster), with the broker as its own ``fastkafka serve`` process. Drivers are child processes
that never import fastkafka (cluster_child.py): batch read, the batch writer, a streaming
``availableNow`` read and the streaming writer each find the format by name; ``fastkafka load`` runs with ``--master``
and ``--remote``. The standalone tests come first: the Connect server, once up, holds the
cluster's cores until this module ends.

Each driver's job is checked with an independent reader (librdkafka): the batch writer's copy,
and the streaming writer's (``writeStream.format("fastkafka")``, ``availableNow`` in two
micro-batches) record by record, partition by partition, in offset order."""
import json
import os
import subprocess
import sys

import pytest
from cluster_support import broker_process, connect_server, standalone_cluster
from conftest import create_topic, produce

pytestmark = [pytest.mark.clients, pytest.mark.spark, pytest.mark.spark_cluster, pytest.mark.timeout(400)]

CHILD = os.path.join(os.path.dirname(__file__), "cluster_child.py")
RECORDS = 40


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import pyspark  # noqa: F401 (a declared dependency: missing, it fails here by name)
    with standalone_cluster(str(tmp_path_factory.mktemp("standalone"))) as c:
        yield c


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """Shadows conftest's in-process broker: here the broker is a process of its own."""
    with broker_process(str(tmp_path_factory.mktemp("broker"))) as b:
        yield b


@pytest.fixture(scope="module")
def connect(cluster, tmp_path_factory):
    import grpc  # noqa: F401 (a declared dependency: missing, it fails here by name)
    with connect_server(str(tmp_path_factory.mktemp("connect")), cluster.master_url,
                        **{"spark.scheduler.minRegisteredResourcesRatio": "1.0"}) as server:
        yield server


def _child_env():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    return env


def _source(broker, topic, copy_partitions=1):
    """A 4-partition topic of RECORDS values "v0".. (key "k<i>", partition i % 4) and an empty
    topic ``<topic>-copy`` for the writer."""
    create_topic(broker, topic, partitions=4)
    create_topic(broker, topic + "-copy", partitions=copy_partitions)
    produce(broker, topic, [{"key": b"k%d" % i, "value": b"v%d" % i, "partition": i % 4}
                            for i in range(RECORDS)])
    return sorted(f"v{i}" for i in range(RECORDS))


def _run_driver(how, url, broker, topic, tmp_path, mode="read-write"):
    out = subprocess.run([sys.executable, CHILD, how, url, broker.bootstrap, topic, topic + "-copy",
                          str(tmp_path), mode], capture_output=True, text=True, timeout=360,
                         cwd=str(tmp_path), env=_child_env())
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _consume_all(broker, topic, n):
    """Every (key, value) of ``topic`` through librdkafka, an independent reader."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check-" + topic,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    try:
        for _ in range(60):
            got += [(m.key(), m.value()) for m in c.consume(100, 1.0) if m.error() is None]
            if len(got) >= n:
                break
    finally:
        c.close()
    return sorted(got)


def _consume_partitions(broker, topic, partitions, n):
    """Each partition's records, in offset order, as (offset, key, value, headers), read with
    librdkafka from the beginning of every partition (assigned: no group to join)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check-" + topic,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got = {p: [] for p in range(partitions)}
    try:
        for _ in range(60):
            for m in c.consume(100, 1.0):
                assert m.error() is None, m.error()
                got[m.partition()].append((m.offset(), m.key(), m.value(), m.headers()))
            if sum(map(len, got.values())) >= n:
                break
    finally:
        c.close()
    return got


def _check_stream_write(got, broker, topic):
    assert got["fastkafka_imported"] is False           # found by name, registered nowhere
    assert got["batch_rows"] == [20, 20]                # maxOffsetsPerTrigger 20: two micro-batches
    written = _consume_partitions(broker, topic + "-copy", 4, RECORDS)
    jvms = set()
    for p, records in written.items():
        # each source partition's records, in their order, in the partition the row named
        assert [(o, k, v) for o, k, v, _ in records] == [
            (j, b"k%d" % i, b"v%d" % i) for j, i in enumerate(range(p, RECORDS, 4))], (p, records)
        for *_, headers in records:
            [(name, jvm)] = headers
            assert name == "jvm"
            jvms.add(jvm.decode())
    # every write task ran in an executor JVM, over both Workers
    assert all(j.startswith("executor ") for j in jvms), jvms
    assert len({j.split()[1] for j in jvms}) == 2, jvms


def _check_driver(got, broker, topic, expected):
    assert got["fastkafka_imported"] is False           # found by name, registered nowhere
    assert got["batch"] == expected
    assert got["streamed"] == expected
    assert got["stream_batches"] >= 2                   # 40 records at 20 per trigger
    # every read task ran in an executor JVM (a Worker's child, not the driver), over both Workers
    assert all(j.startswith("executor ") for j in got["jvms"]), got["jvms"]
    assert len({j.split()[1] for j in got["jvms"]}) == 2, got["jvms"]
    assert _consume_all(broker, topic + "-copy", RECORDS) == sorted(
        (b"k%d" % i, b"v%d" % i) for i in range(RECORDS))


def _load(broker, topic, out, *where):
    argv = [sys.executable, "-m", "fastkafka", "load", *where, "--bootstrap-server", broker.bootstrap,
            "--topic", topic, "--output", str(out), "--cast-strings", "--max-offsets-per-trigger", "25"]
    env = _child_env()
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run(argv, capture_output=True, text=True, timeout=360, cwd=str(out.parent),
                         env=env)
    assert run.returncode == 0, run.stderr[-4000:]
    return run.stdout


def _loaded(out):
    import pyarrow.dataset as ds                        # skips _checkpoint and _spark_metadata
    table = ds.dataset(str(out), format="parquet").to_table(columns=["value", "partition", "offset"])
    assert len(set(zip(table["partition"].to_pylist(), table["offset"].to_pylist()))) == table.num_rows
    return sorted(table["value"].to_pylist())


def test_standalone_cluster_driver(cluster, broker, topic_name, tmp_path):
    expected = _source(broker, topic_name)
    got = _run_driver("--master", cluster.master_url, broker, topic_name, tmp_path)
    assert got["master"] == cluster.master_url
    _check_driver(got, broker, topic_name, expected)
    apps = cluster.state()["completedapps"]
    assert any(a["name"] == "fastkafka-cluster-child" for a in apps), apps


def test_standalone_cluster_load(cluster, broker, topic_name, tmp_path):
    expected = _source(broker, topic_name)
    out = tmp_path / "warehouse"
    text = _load(broker, topic_name, out, "--master", cluster.master_url,
                 "--conf", "spark.executor.memory=512m")
    assert f"loaded {RECORDS} rows in 2 batches" in text, text
    assert _loaded(out) == expected
    apps = [a for a in cluster.state()["completedapps"] if a["name"] == "fastkafka-load"]
    assert [a["memoryperexecutor"] for a in apps] == [512], apps     # --conf reached the session


def test_standalone_cluster_stream_write(cluster, broker, topic_name, tmp_path):
    _source(broker, topic_name, copy_partitions=4)
    got = _run_driver("--master", cluster.master_url, broker, topic_name, tmp_path, "stream-write")
    assert got["master"] == cluster.master_url
    _check_stream_write(got, broker, topic_name)


def test_connect_driver(connect, cluster, broker, topic_name, tmp_path):
    expected = _source(broker, topic_name)
    got = _run_driver("--remote", connect.url, broker, topic_name, tmp_path)
    assert got["master"] == cluster.master_url          # the server's application on the cluster
    _check_driver(got, broker, topic_name, expected)
    assert any(a["name"] == "fastkafka-connect-tests" for a in cluster.state()["activeapps"])


def test_connect_load(connect, broker, topic_name, tmp_path):
    expected = _source(broker, topic_name)
    out = tmp_path / "warehouse"
    text = _load(broker, topic_name, out, "--remote", connect.url)
    assert f"loaded {RECORDS} rows in 2 batches" in text, text
    assert _loaded(out) == expected


def test_connect_stream_write(connect, cluster, broker, topic_name, tmp_path):
    _source(broker, topic_name, copy_partitions=4)
    got = _run_driver("--remote", connect.url, broker, topic_name, tmp_path, "stream-write")
    assert got["master"] == cluster.master_url          # the server's application on the cluster
    _check_stream_write(got, broker, topic_name)


def test_load_rejects_bad_session_arguments(tmp_path):
    def load(*argv):
        return subprocess.run([sys.executable, "-m", "fastkafka", "load", *argv, "--topic", "t",
                               "--output", str(tmp_path)], capture_output=True, text=True, timeout=60)
    run = load("--master", "local[1]", "--remote", "sc://127.0.0.1:1")
    assert run.returncode == 2 and "argument --remote: not allowed with argument --master" in run.stderr
    run = load("--conf", "spark.executor.memory")              # caught before any JVM starts
    assert run.returncode == 1 and "--conf needs KEY=VALUE, got 'spark.executor.memory'" in run.stderr
