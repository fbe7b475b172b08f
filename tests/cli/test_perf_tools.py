"""``fastkafka perf``'s Kafka-shaped output against a real broker: produce's window lines and
percentiles, the --throughput cap, consume's columns, e2e's percentiles, and ``perf disk``'s
rates and ratios on a temporary directory (small sizes: these check the tool, not the machine)."""
import re

import pytest

from fastkafka.cli import perf
from fastkafka.perf.on_disk import flush_sweep

pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]

WINDOW = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                    r"([\d.]+) ms max latency\.$")
TOTAL = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                   r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$")


def perf_run(broker, *args) -> int:
    return perf.main(["-b", broker.bootstrap, *args])


def test_produce_prints_window_lines_then_percentiles(broker, capsys):
    assert perf_run(broker, "produce", "perf-lines", "--num-records", "300000", "--record-size", "100",
                    "--reporting-interval", "50", "--producer-props", "acks=all", "linger.ms=1") == 0
    lines = capsys.readouterr().out.splitlines()
    windows = [WINDOW.match(line) for line in lines[:-1]]
    assert len(windows) >= 2 and all(windows), lines
    total = TOTAL.match(lines[-1])
    assert total, lines[-1]
    assert int(total[1]) == 300000
    assert sum(int(w[1]) for w in windows) <= 300000                  # windows count acknowledged records
    p50, p95, p99, p999 = map(int, total.groups()[5:])
    assert p50 <= p95 <= p99 <= p999 <= float(total[5]) + 1            # ordered, never above the maximum


def test_throughput_caps_the_rate(broker, capsys):
    cap = 10_000           # records/s: two orders of magnitude below what 100-byte records reach here
    assert perf_run(broker, "produce", "--topic", "perf-capped", "-n", "25000", "-s", "100",
                    "--throughput", str(cap), "--reporting-interval", "1000") == 0
    lines = capsys.readouterr().out.splitlines()
    rate = float(TOTAL.match(lines[-1])[2])
    assert cap * 0.5 < rate <= cap * 1.2, lines
    assert len(lines) >= 3                    # ~2.5 s at the cap: at least two window lines


def test_producer_props_are_client_properties(broker, capsys):
    assert perf_run(broker, "produce", "perf-props", "-n", "10", "--producer-props", "no.such.property=1") == 1
    assert "no.such.property" in capsys.readouterr().err


def test_consume_prints_consumer_perf_test_columns(broker, capsys):
    assert perf_run(broker, "produce", "perf-read", "-n", "50000", "-s", "200") == 0
    capsys.readouterr()
    assert perf_run(broker, "consume", "perf-read", "--messages", "50000") == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split(", ") == ["start.time", "end.time", "data.consumed.in.MB", "MB.sec", "data.consumed.in.nMsg",
                                  "nMsg.sec", "rebalance.time.ms", "fetch.time.ms", "fetch.MB.sec", "fetch.nMsg.sec"]
    cols = row.split(", ")
    assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}$", cols[0]) and cols[0] <= cols[1]
    assert int(cols[4]) == 50000
    assert float(cols[2]) == pytest.approx(50000 * 200 / 2**20, abs=1e-4)     # value bytes, no keys
    assert perf_run(broker, "consume", "perf-read", "--messages", "50001", "--timeout", "300") == 1
    capsys.readouterr()
    assert perf_run(broker, "consume", "perf-read", "--messages", "50000", "--show-detailed-stats",
                    "--reporting-interval", "0", "--hide-header") == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) >= 2 and all(len(r.split(", ")) == 10 for r in rows)       # detailed rows, then the total
    assert sum(int(r.split(", ")[4]) for r in rows[:-1]) == int(rows[-1].split(", ")[4]) == 50000


def test_end_to_end_latency_percentiles(broker, capsys):
    assert perf_run(broker, "e2e", "perf-e2e", "--num-records", "300", "--record-size", "64") == 0
    avg, pct = capsys.readouterr().out.splitlines()
    m = re.match(r"^Avg latency: ([\d.]+) ms$", avg)
    assert m and 0 < float(m[1]) < 1000
    p = re.match(r"^Percentiles: 50th = ([\d.]+), 95th = ([\d.]+), 99th = ([\d.]+), 99\.9th = ([\d.]+)$", pct)
    assert p, pct
    assert 0 < float(p[1]) <= float(p[2]) <= float(p[3]) <= float(p[4])


RATE = r"([\d.]+) MB/s"


def test_disk_rates_and_the_broker_as_their_ratio(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert perf.main(["disk", "--log-dirs", f"{a},{b}", "--size-mb", "8", "--flush-interval-messages", "100",
                      "--record-size", "1000"]) == 0
    out = capsys.readouterr().out
    writes = re.findall(rf"write: buffered\+fdatasync {RATE}, O_DIRECT (?:{RATE}|n/a)", out)
    reads = re.findall(rf"read:  O_DIRECT (?:{RATE}|n/a), buffered after posix_fadvise\(DONTNEED\) {RATE}", out)
    assert len(writes) == 2 and len(reads) == 2 and all(float(w[0]) > 0 for w in writes), out
    assert "fdatasync every 0.1 MiB and at the end" in out
    assert "are on one device" in out                                # tmp_path/a and /b share it
    produce = re.search(rf"produce {RATE} = ([\d.]+)x of the sum of the dirs' buffered\+fdatasync write \({RATE}\)",
                        out)
    fetch = re.search(rf"fetch   {RATE} = ([\d.]+)x of the sum of the dirs' cold buffered read \({RATE}\)", out)
    assert produce and fetch, out
    for m in (produce, fetch):
        assert float(m[2]) == pytest.approx(float(m[1]) / float(m[3]), abs=0.011)
    assert "8388 records of 1000 B, 4 partitions, flush.messages=100" in out
    assert f"partitions per log dir: {a} 2, {b} 2" in out             # JBOD: spread over both
    assert not list(a.glob(".fastkafka-perf-disk*"))                  # the probe files are gone


def test_flush_sweep_restarts_the_broker_per_setting(tmp_path):
    settings = [{}, {"log.flush.interval.messages": 1}]
    rows = flush_sweep(str(tmp_path), settings, num_records=3000, record_size=1000, latency_rate=5000, rounds=1)
    assert [r["setting"] for r in rows] == settings
    for r in rows:
        assert r["records_per_s"] > 0 and r["disk_write_mb_per_s"] > 0 and r["ratio"] > 0
        assert r["p50_ms_capped"] <= r["p99_ms_capped"] and r["capped_rate"] == 5000
    assert list(tmp_path.iterdir()) == []                            # each broker's directory is removed


def test_disk_without_a_directory_is_one_line(tmp_path, capsys):
    assert perf.main(["disk", "--log-dirs", str(tmp_path / "missing"), "--no-broker"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a directory" in err
