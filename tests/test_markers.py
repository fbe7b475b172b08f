"""The markers pyproject.toml declares mean what it says, so ``-m "not zk"`` leaves out every test
that starts ZooKeeper. What a test module needs is read from its imports and from the fixtures
its tests use as pytest collects them (``pytest --collect-only`` in a subprocess, with a plugin
that writes every module's marks and fixtures); each module must carry at least those marks,
through its ``pytestmark`` or a test's own mark.

``crash`` is asked of each test whose own body (or a helper of its module that it calls)
sends SIGKILL or kills a broker of a ``Cluster``.

The evidence is a lower bound: a module may carry a mark for a reason read nowhere here (a
client package run in a child process, say), never lack one the evidence asks for."""
from __future__ import annotations

import ast
import json
import os
import pathlib
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]

CLIENT_PACKAGES = {"confluent_kafka", "kafka", "aiokafka"}
CLIENT_HELPERS = {"support.rdkafka_helpers", "support.ctp", "group_members"}      # each wraps one
BROKER_MODULES = {"support.brokers", "support.harness", "fastkafka.server.broker"}
BROKER_FIXTURES = {"broker", "cluster", "clusters", "start_broker", "start_module_broker", "start_session_broker"}
ZOOKEEPER_MODULES = {"support.zk", "support.harness", "netns"}
ZOOKEEPER_FIXTURES = {"ensemble"}                                                   # tests/cluster/conftest.py

DUMP_PLUGIN = '''
import json, os

def pytest_collection_finish(session):
    items = [{"path": os.path.relpath(str(item.path), str(session.config.rootpath)),
              "function": getattr(item, "originalname", item.name),
              "marks": sorted({m.name for m in item.iter_markers()}),
              "fixtures": sorted(getattr(item, "fixturenames", ()))} for item in session.items]
    with open(os.environ["MARKS_OUT"], "w") as f:
        json.dump(items, f)
'''


def imported(source: str) -> set[str]:
    """Every module ``source`` imports (``a.b`` also counts as ``a``), at any depth."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names | {n.split(".")[0] for n in names}


def required_marks(path: str, source: str, fixtures: set[str]) -> set[str]:
    """The marks the module at ``path`` (relative to the checkout) must carry."""
    modules = imported(source)
    marks = set()
    starts_a_broker = bool(fixtures & BROKER_FIXTURES or modules & BROKER_MODULES or "serve_process" in source)
    uses_a_client = bool(modules & (CLIENT_PACKAGES | CLIENT_HELPERS) or "kcat" in source)
    if starts_a_broker and uses_a_client:
        marks.add("clients")
    if modules & ZOOKEEPER_MODULES or fixtures & ZOOKEEPER_FIXTURES:
        marks.add("zk")
    if "pyspark" in modules or "spark" in fixtures:
        marks.add("spark")
    if "cluster_support" in modules:                     # tests/spark: the standalone cluster
        marks |= {"spark", "spark_cluster"}
    if "netns" in modules:
        marks.add("partition")
    if path.startswith("tests/install/"):
        marks.add("install")
    return marks


def kills(node: ast.AST) -> bool:
    """Whether ``node`` sends SIGKILL or kills a broker of a ``Cluster`` (``cluster.brokers[i].kill()``)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr == "SIGKILL" or isinstance(n, ast.Name) and n.id == "SIGKILL":
            return True
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "kill"
                and ast.unparse(n.func.value).startswith("cluster.brokers")):
            return True
    return False


def crash_tests(source: str) -> set[str]:
    """The module-level test functions of ``source`` that kill, by their own body or a helper's."""
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    helpers = {f.name for f in functions if not f.name.startswith("test_") and kills(f)}
    return {f.name for f in functions if f.name.startswith("test_") and (kills(f) or any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in helpers for c in ast.walk(f)))}


def collected(tmp_path) -> dict[str, dict[str, set[str]]]:
    """``{module path: {"marks": ..., "fixtures": ..., "crash": tests without crash}}`` of every
    test module under tests/."""
    (tmp_path / "marks_dump.py").write_text(DUMP_PLUGIN)
    out = tmp_path / "marks.json"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), MARKS_OUT=str(out))
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "marks_dump",
                           "-p", "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    modules: dict[str, dict[str, set[str]]] = {}
    for item in json.loads(out.read_text()):
        seen = modules.setdefault(item["path"], {"marks": set(), "fixtures": set(), "crash": set()})
        seen["marks"].update(item["marks"])
        seen["fixtures"].update(item["fixtures"])
        if "crash" not in item["marks"]:
            seen["crash"].add(item["function"])       # ...not marked crash, rather
    return modules


def test_the_evidence_asks_for_the_marks_it_should():
    assert required_marks("tests/cli/test_x.py", "from support.zk import Ensemble\n", set()) == {"zk"}
    assert required_marks("tests/x/test_x.py", "import pytest\n", {"ensemble", "tmp_path"}) == {"zk"}
    # a client package as a codec oracle, no broker: not a clients test
    assert required_marks("tests/protocol/test_x.py", "from kafka.protocol import api\n", set()) == set()
    assert required_marks("tests/x/test_x.py", "from confluent_kafka import Producer\n", {"broker"}) == {"clients"}
    assert required_marks("tests/x/test_x.py", "from support.rdkafka_helpers import confluent_read\n",
                          {"broker"}) == {"clients"}
    assert required_marks("tests/x/test_x.py", "def t():\n    import pyspark\n", set()) == {"spark"}
    assert required_marks("tests/cluster/test_x.py", "from netns import Network\n", set()) == {"zk", "partition"}
    assert required_marks("tests/install/test_x.py", "", set()) == {"install"}
    source = ("def stop(p):\n    p.send_signal(signal.SIGKILL)\n\n"
              "def test_a(cluster):\n    cluster.brokers[1].kill()\n\n"
              "def test_b(p):\n    stop(p)\n\n"
              "def test_c(cluster):\n    cluster.brokers[1].stop()\n")
    assert crash_tests(source) == {"test_a", "test_b"}


def test_every_module_carries_the_marks_its_evidence_asks_for(tmp_path):
    modules = collected(tmp_path)
    assert len(modules) > 100, "collected far fewer test modules than the tree has"
    missing = {}
    for path, seen in sorted(modules.items()):
        if path == "tests/test_markers.py":        # names the evidence in its own rules
            continue
        source = (ROOT / path).read_text(encoding="utf-8")
        lacking = sorted(required_marks(path, source, seen["fixtures"]) - seen["marks"])
        lacking += [f"crash on {name}" for name in sorted(crash_tests(source) & seen["crash"])]
        if lacking:
            missing[path] = lacking
    assert missing == {}, "add these marks to the modules' pytestmark"

    # and every declared marker is carried by some test: one nobody carries means nothing
    declared = {m.split(":")[0].split("(")[0].strip() for m in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]}
    carried = set().union(*(seen["marks"] for seen in modules.values()))
    assert declared - carried == set()
