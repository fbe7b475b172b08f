"""`fastkafka load`: incremental, exactly-once topic -> Parquet loads through the CLI entry point."""
import datetime as dt

import pytest
from conftest import create_topic, now_ms, produce

from fastkafka.cli import main as cli

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


def load(capsys, *argv):
    assert cli.main(["load", *argv]) == 0
    return capsys.readouterr().out


def test_load_twice_is_exactly_once(spark, broker, topic_name, tmp_path, capsys):
    create_topic(broker, topic_name, partitions=2)
    out = tmp_path / "warehouse"
    ts = now_ms() - 2 * 86_400_000
    produce(broker, topic_name, [{"key": b"k%d" % i, "value": b"%d" % i, "partition": i % 2,
                                 "timestamp": ts} for i in range(120)])
    args = ["--bootstrap-server", broker.bootstrap, "--topic", topic_name, "--output", str(out),
            "--partition-by-date", "--cast-strings", "--max-offsets-per-trigger", "50"]
    text = load(capsys, *args)
    assert text.count("batch ") == 3 and "loaded 120 rows in 3 batches" in text
    assert f"{topic_name}-0 " in text    # progress lines name the partitions that moved
    produce(broker, topic_name, [{"value": b"%d" % i, "partition": i % 2} for i in range(120, 160)])
    text = load(capsys, *args)
    assert "loaded 40 rows in 1 batches" in text
    text = load(capsys, *args)
    assert "loaded 0 rows in 0 batches" in text
    df = spark.read.parquet(str(out))
    rows = df.select("value", "partition", "offset", "date").collect()
    assert sorted(int(r.value) for r in rows) == list(range(160))          # each record once
    assert len({(r.partition, r.offset) for r in rows}) == 160
    day = dt.datetime.fromtimestamp(ts / 1000).date()
    assert {r.date for r in rows if int(r.value) < 120} == {day}
    assert any(p.name.startswith("date=") for p in out.iterdir())


def test_load_reports_bad_options(broker, tmp_path, capsys):
    rc = cli.main(["load", "--bootstrap-server", broker.bootstrap, "--topic", "x",
                   "--output", str(tmp_path / "o"), "--option", "kafka.enable.auto.commit=true"])
    assert rc == 1
    assert "Kafka option 'enable.auto.commit' is not supported" in capsys.readouterr().err
