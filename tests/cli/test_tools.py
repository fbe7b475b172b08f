"""The command-line tools end to end against our broker (cross-checked with confluent-kafka)."""
import io
import json
import os
import subprocess
import sys

import pytest

from fastkafka.cli import consume, groups, perf, produce, topics  # noqa: E402
from fastkafka.uuids import uuid_text

from support.rdkafka_helpers import confluent_read, confluent_write

pytestmark = [pytest.mark.clients, pytest.mark.timeout(60)]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(module, broker, *args, stdin=b""):
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        return module.main(["-b", broker.bootstrap, *args])
    finally:
        sys.stdin = sys.__stdin__


def test_topics_lifecycle(broker, capsys):
    assert run(topics, broker, "create", "cli-t", "-p", "3", "-c", "retention.ms=60000") == 0
    assert run(topics, broker, "create", "cli-t") == 1
    assert "cli-t" in capsys.readouterr().err.splitlines()[-1]         # one line, no traceback
    assert run(topics, broker, "create", "cli-t", "--if-not-exists") == 0
    assert run(topics, broker, "list") == 0
    assert "cli-t" in capsys.readouterr().out.split()
    assert run(topics, broker, "add-partitions", "cli-t", "-p", "4") == 0
    assert run(topics, broker, "describe", "cli-t") == 0
    out = capsys.readouterr().out
    assert "PartitionCount: 4" in out and out.count("Partition: ") == 4
    # the topic's id, as kafka-topics.sh prints it (Kafka's text form)
    assert f"TopicId: {uuid_text(broker.topics.get('cli-t').topic_id)}\t" in out
    assert run(topics, broker, "configs", "cli-t") == 0
    assert "retention.ms=60000" in capsys.readouterr().out
    assert run(topics, broker, "delete", "cli-t") == 0
    capsys.readouterr()
    assert run(topics, broker, "describe", "cli-t") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in err


def test_topics_takes_kafka_topics_sh_arguments(broker, capsys):
    """kafka-topics.sh's spelling: --create/--alter/--describe/--delete with --topic."""
    assert run(topics, broker, "--create", "--topic", "kt", "--partitions", "2", "--replication-factor", "1",
               "--config", "cleanup.policy=compact") == 0
    info = broker.topics.get("kt")
    assert (info.partitions, dict(info.configs)) == (2, {"cleanup.policy": "compact"})
    assert run(topics, broker, "--alter", "--topic", "kt", "--partitions", "3") == 0
    assert broker.topics.get("kt").partitions == 3
    capsys.readouterr()
    assert run(topics, broker, "--describe", "--topic", "kt") == 0
    assert capsys.readouterr().out.count("Partition: ") == 3
    assert run(topics, broker, "--delete", "--topic", "kt") == 0
    assert broker.topics.get("kt") is None


def test_produce_lines_keys_headers_read_by_confluent(broker, capsys):
    assert run(produce, broker, "cli-p", "-k", ":", "-H", "src=cli", "-z", "gzip",
               stdin=b"k1:v1\nk2:v:2\n") == 0
    assert run(produce, broker, "cli-p", stdin=b"plain\n") == 0
    got = confluent_read(broker.bootstrap, "cli-p", 3)
    assert [(m.key(), m.value(), m.headers()) for m in got] == [
        (b"k1", b"v1", [("src", b"cli")]), (b"k2", b"v:2", [("src", b"cli")]), (None, b"plain", None)]
    assert run(produce, broker, "cli-p", "-k", ":", stdin=b"no separator\n") == 1
    assert "no key separator" in capsys.readouterr().err


def test_consume_formats_offsets_and_timestamps(broker, capsys):
    confluent_write(broker.bootstrap, "cli-c", [(b"k%d" % i, b"v%d" % i, None, None, 1000 * (i + 1))
                                                 for i in range(5)])
    assert run(consume, broker, "cli-c", "--from-beginning", "--timeout-ms", "500") == 0
    assert capsys.readouterr().out.split() == ["v0", "v1", "v2", "v3", "v4"]
    assert run(consume, broker, "cli-c", "-p", "0", "-o", "3", "-n", "1", "-f", "kv") == 0
    assert capsys.readouterr().out == "k3\tv3\n"
    assert run(consume, broker, "cli-c", "-t", "2500", "-n", "2", "-f", "json") == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["offset"], r["key"], r["value"], r["timestamp"]) for r in rows] == [
        (2, "k2", "v2", 3000), (3, "k3", "v3", 4000)]
    assert run(consume, broker, "cli-c", "-o", "3") == 1    # --offset needs --partition


def test_consume_as_group_then_groups_describe_and_reset(broker, capsys):
    confluent_write(broker.bootstrap, "cli-g", [(None, b"m%d" % i, None, None, None) for i in range(4)])
    rc = run(consume, broker, "cli-g", "-g", "cli-group", "--from-beginning", "--timeout-ms", "1500")
    assert rc == 0, capsys.readouterr().err
    assert capsys.readouterr().out.split() == ["m0", "m1", "m2", "m3"]
    assert run(groups, broker, "list") == 0
    assert "cli-group" in capsys.readouterr().out
    assert run(groups, broker, "describe", "cli-group") == 0
    assert "cli-g\t0\t4\t4\t0" in capsys.readouterr().out
    assert run(groups, broker, "reset-offsets", "cli-group", "--topic", "cli-g", "--to-offset", "1",
               "--execute") == 0
    capsys.readouterr()
    assert run(groups, broker, "describe", "cli-group") == 0
    assert "cli-g\t0\t1\t4\t3" in capsys.readouterr().out
    assert run(consume, broker, "cli-g", "-g", "cli-group", "--timeout-ms", "1500") == 0
    assert capsys.readouterr().out.split() == ["m1", "m2", "m3"]


def test_perf_produce_and_consume(broker, capsys):
    assert run(perf, broker, "produce", "cli-perf", "-n", "20000", "-s", "100", "--progress") == 0
    out = capsys.readouterr().out
    assert out.startswith("20000 records sent") and "99th" in out
    assert run(perf, broker, "consume", "cli-perf", "-n", "20000") == 0
    assert capsys.readouterr().out.splitlines()[1].split(", ")[4] == "20000"     # data.consumed.in.nMsg
    assert len(confluent_read(broker.bootstrap, "cli-perf", 20000)) == 20000


def test_command_line_help_and_unreachable_broker():
    env = dict(os.environ, PYTHONPATH=ROOT)
    for tool in ("topics", "produce", "consume", "groups", "perf"):
        r = subprocess.run([sys.executable, "-m", "fastkafka", tool, "--help"], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and "examples:" in r.stdout, tool
    r = subprocess.run([sys.executable, "-m", "fastkafka", "topics", "-b", "127.0.0.1:1",
                        "-X", "retries=0", "list"], env=env, cwd=ROOT, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "127.0.0.1:1" in r.stderr


def test_version_and_a_closed_pipe(tmp_path):
    import importlib.metadata
    import subprocess
    out = subprocess.run([sys.executable, "-m", "fastkafka", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == importlib.metadata.version("fastkafka")
    # `fastkafka dump-log ... | head -1`: the reader goes away, the tool stops quietly
    from fastkafka.config import LogConfig
    from fastkafka.log import Log
    from fastkafka.records import build_batch
    lg = Log(str(tmp_path / "t-0"), LogConfig(), clean_shutdown=True)
    for i in range(2000):
        lg.append(bytearray(build_batch([(b"k", b"v" * 50, [], 1000 + i)])))
    lg.close()
    dump = subprocess.Popen([sys.executable, "-m", "fastkafka", "dump-log", "--print-data-log",
                             lg.segments[0].log_path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dump.stdout.readline()
    dump.stdout.close()                          # what `head -1` does after one line
    _, err = dump.communicate(timeout=60)
    assert dump.returncode == 141 and b"Traceback" not in err and b"BrokenPipe" not in err, err


def test_configs_alter_and_describe_a_topic(broker, capsys):
    from fastkafka.cli import configs
    assert topics.main(["-b", broker.bootstrap, "create", "cfg-cli", "--partitions", "2"]) == 0
    base = ["-b", broker.bootstrap, "--entity-type", "topics", "--entity-name", "cfg-cli"]
    assert configs.main(base + ["--alter", "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]"]) == 0
    assert broker.topics.log("cfg-cli", 1).config.retention_ms == 60000
    assert broker.topics.log("cfg-cli", 1).config.compact
    capsys.readouterr()
    assert configs.main(base + ["--describe"]) == 0
    out = capsys.readouterr().out
    assert "  retention.ms=60000\n" in out and "  cleanup.policy=compact,delete\n" in out
    assert configs.main(base + ["--alter", "--delete-config", "retention.ms"]) == 0
    assert dict(broker.topics.get("cfg-cli").configs) == {"cleanup.policy": "compact,delete"}
    assert configs.main(base + ["--alter", "--add-config", "segment.bytes=1"]) == 1     # INVALID_CONFIG
    assert "segment.bytes" in capsys.readouterr().err


def test_log_dirs_describe_reports_partition_sizes(broker, capsys):
    from fastkafka.cli import log_dirs
    confluent_write(broker.bootstrap, "ld-cli", [(None, b"x" * 100, None, None, None)] * 5)
    capsys.readouterr()
    assert log_dirs.main(["-b", broker.bootstrap, "--describe", "--topic-list", "ld-cli"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (b,) = doc["brokers"]
    (d,) = b["logDirs"]
    assert d["error"] is None and d["usableBytes"] > 0
    assert [(p["partition"], p["size"] == broker.topics.log("ld-cli", 0).size > 500)
            for p in d["partitions"]] == [("ld-cli-0", True)]
