"""The benchmark suite never rots: `pytest bench` runs every bench/ module in smoke mode
(FASTKAFKA_BENCH_SMOKE=1: tiny sizes, one round) in a subprocess, and bench/report.py turns its
JSON into the generated section of a copy of bench/RESULTS.md. Nothing here looks at a timing."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

# the suite starts PySpark (local mode) and drives brokers with confluent-kafka and kafka-python
pytestmark = [pytest.mark.spark, pytest.mark.clients]

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
# every figure family make bench keeps, by the group its module files it under
GROUPS = {"crc32c", "crc32c engines", "records", "legacy", "log", "log flush policy", "codecs", "server", "client",
          "coordinator", "spark"}


def _history(text: str) -> str:
    """RESULTS.md without its generated section, whitespace aside."""
    if "<!-- generated: begin -->" in text:
        head, rest = text.split("<!-- generated: begin -->", 1)
        text = head + rest.split("<!-- generated: end -->", 1)[1]
    return " ".join(text.split())


def test_bench_suite_smoke(tmp_path):
    out = tmp_path / "run.json"
    env = dict(os.environ, FASTKAFKA_BENCH_SMOKE="1", FASTKAFKA_BENCH_DIR=str(tmp_path / "files"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "bench", "-p", "no:cacheprovider", "-q", "-rs",
                           f"--benchmark-json={out}", "--benchmark-columns=min,rounds"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    groups = {b["group"] for b in data["benchmarks"]}
    assert GROUPS <= groups, f"missing figure families: {GROUPS - groups}"
    for b in data["benchmarks"]:
        info = b["extra_info"]
        assert info["smoke"] and info["limit"] > 0 and info["ratio"] > 0, (b["name"], info)

    results = tmp_path / "RESULTS.md"
    shutil.copy(BENCH / "RESULTS.md", results)
    before = (BENCH / "RESULTS.md").read_text()
    subprocess.run([sys.executable, str(BENCH / "report.py"), str(out), "--results", str(results)],
                   check=True, cwd=ROOT, capture_output=True, timeout=120)
    text = results.read_text()
    head, generated = text.split("<!-- generated: begin -->")
    generated, tail = generated.split("<!-- generated: end -->")
    for b in data["benchmarks"]:
        assert f"| {b['extra_info']['what']} |" in generated
    assert "Smoke run" in generated and (tmp_path / "bench_ratios.png").stat().st_size > 1000
    # the hand-written history around the markers is kept as it was
    assert "## CRC-32C" in tail and _history(text) == _history(before)
    # the committed RESULTS.md was not touched
    assert (BENCH / "RESULTS.md").read_text() == before
