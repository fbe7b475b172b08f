"""librdkafka's own integration tests against fastkafka: the CI stage of issue 17 item 9.

Debian's librdkafka 2.0.2 sources (the library kcat is built on) are fetched with ``apt-get
source`` at run time -- nothing of librdkafka is kept in this repository -- and its
``tests/test-runner`` is built once into a cache outside the tree (``$FASTKAFKA_CI_CACHE``, else
``~/.cache/fastkafka-ci``). Each broker test (``-E -L``: no sockem, no local-only tests) then
runs against a fresh single fastkafka broker with librdkafka's default test scenario
(auto-created topics of 4 partitions) and an ACL authorizer that allows what no ACL names, as
librdkafka's own test clusters run, bounded in time. The tests that call Kafka's command-line
tools (``$KAFKA_PATH/bin/kafka-topics.sh``, ``kafka-acls.sh``) get ours: both take Kafka's
arguments. Each verdict is compared with ``ci/librdkafka-tests.txt``:

    0001 pass
    0103 pass 3-brokers
    0113 out  a client bug: ...

A test marked ``3-brokers`` (it creates topics of replication factor 3, as librdkafka's own test
clusters allow) runs against three brokers joined through a real ZooKeeper (the cluster tests'
harness, tests/cluster/); one marked ``sasl`` runs against a SASL_PLAINTEXT listener with PLAIN
users, the client configured with one of them; one marked ``group-delay`` keeps Kafka's
``group.initial.rebalance.delay.ms`` (the others run without it). Every ``pass`` test must pass
(else the stage fails); a test not on the list, or ``out`` with its reason, is not run unless
``--all``, which runs every broker test and prints the lines to paste for those that now pass --
the list only grows.

Usage::

    python ci/librdkafka_suite.py            # the listed tests (what CI runs)
    python ci/librdkafka_suite.py --all      # every broker test: which pass now
    python ci/librdkafka_suite.py 0012 0030  # some tests
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
LIST = ROOT / "ci" / "librdkafka-tests.txt"
VERSION = "2.0.2"
# what we speak to librdkafka's version checks: the Kafka 3.x surface (its tests switch behaviour by version)
KAFKA_VERSION = "3.9.0"
BUILD_DEPS = ["build-essential", "libssl-dev", "zlib1g-dev", "libzstd-dev", "liblz4-dev", "libsasl2-dev",
              "rapidjson-dev"]   # RapidJSON: the tests that check statistics JSON
DEB_SRC = """Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VERDICT = re.compile(r"^\|\s*(\d{4})_\S*\s*\|\s*(PASSED|FAILED|SKIPPED)\s*\|", re.M)


def _sudo() -> list[str]:
    return [] if os.geteuid() == 0 else ["sudo"]


def _apt(*args: str) -> None:
    subprocess.run(_sudo() + ["apt-get", *args], check=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
                   stdout=subprocess.DEVNULL)


def fetch_and_build(cache: pathlib.Path) -> pathlib.Path:
    """The ``tests`` directory of a built librdkafka, built at most once per cache."""
    src = cache / f"librdkafka-{VERSION}"
    runner = src / "tests" / "test-runner"
    if runner.exists():
        return runner.parent
    missing = [p for p in BUILD_DEPS
               if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if missing:
        _apt("install", "-y", "-qq", "--no-install-recommends", *missing)
    cache.mkdir(parents=True, exist_ok=True)
    if not src.exists():
        sources = pathlib.Path("/etc/apt/sources.list.d/fastkafka-deb-src.sources")
        if not sources.exists():
            subprocess.run(_sudo() + ["tee", str(sources)], input=DEB_SRC.encode(), check=True,
                           stdout=subprocess.DEVNULL)
        _apt("update", "-qq")
        subprocess.run(["apt-get", "source", "-qq", f"librdkafka={VERSION}-1"], cwd=cache, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = cache / "build.log"
    with open(log, "wb") as out:
        for cmd in (["./configure", "--disable-gssapi", "--disable-curl"],
                    ["make", "-j2", "libs"], ["make", "-j2", "-C", "tests", "build"]):
            if subprocess.run(cmd, cwd=src, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                sys.exit(f"building librdkafka's tests failed ({' '.join(cmd)}); see {log}")
    return runner.parent


def broker_tests(tests_dir: pathlib.Path) -> dict[str, str]:
    """``{test id: scenario}`` of every test in test.c's table that needs a broker and ends by
    itself (not TEST_F_LOCAL, not TEST_F_MANUAL); the scenario is librdkafka's ``default`` unless
    the test runs only in another (``noautocreate``: topics are not auto-created)."""
    text = (tests_dir / "test.c").read_text()
    table = text[text.index("struct test tests[] = {"):]
    table = table[:table.index("\n};")]
    out: dict[str, str] = {}
    for m in re.finditer(r"_TEST\((\d{4})_\w+,(.*?)\)(?:,\n|\n)", table, re.S):
        flags = m.group(2).split(",")[0]
        if "TEST_F_LOCAL" in flags or "TEST_F_MANUAL" in flags:
            continue
        scenarios = re.search(r'\.scenario\s*=\s*"([^"]+)"', m.group(2))
        names = scenarios.group(1).split(",") if scenarios else ["default"]
        out.setdefault(m.group(1), "default" if "default" in names else names[0])
    return dict(sorted(out.items()))


def read_list() -> dict[str, tuple[str, str]]:
    """``{test id: (pass|out, reason)}`` of ci/librdkafka-tests.txt."""
    entries = {}
    for line in LIST.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            test, verdict, *reason = line.split(None, 2)
            entries[test] = (verdict, reason[0] if reason else "")
    return entries


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker_props(auto_create: bool, group_delay: bool = False) -> dict:
    """librdkafka's test scenario as broker properties. A group's first rebalance is not delayed, to keep
    the suite short, unless ``group_delay``: then it waits Kafka's default 3 s, as on librdkafka's own
    (trivup) clusters, for the tests whose consumers must all land in the group's first generation."""
    props = {"num.partitions": 4, "auto.create.topics.enable": str(auto_create).lower(),
             "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
             "allow.everyone.if.no.acl.found": "true"}
    if not group_delay:
        props["group.initial.rebalance.delay.ms"] = 0
    return props


SASL_USER, SASL_PASSWORD = "rdkafka", "rdkafka-secret"
SASL_BROKER = {"sasl.enabled.mechanisms": "PLAIN",
               "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                   "org.apache.kafka.common.security.plain.PlainLoginModule required "
                   f'user_{SASL_USER}="{SASL_PASSWORD}";'}
SASL_CLIENT = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
               "sasl.username": SASL_USER, "sasl.password": SASL_PASSWORD}


class Broker:
    """A fresh ``fastkafka serve`` on a free port with its own log dir (``sasl``: its listener is
    SASL_PLAINTEXT with PLAIN users)."""

    def __init__(self, work: pathlib.Path, auto_create: bool = True, sasl: bool = False,
                 group_delay: bool = False):
        self.port = free_port()
        self.log = work / "broker.log"
        self.bootstrap = f"127.0.0.1:{self.port}"
        props = dict(broker_props(auto_create, group_delay), **{"log.dirs": str(work / "data")})
        props["listeners"] = f"{'SASL_PLAINTEXT' if sasl else 'PLAINTEXT'}://127.0.0.1:{self.port}"
        if sasl:
            props.update(SASL_BROKER)
        args = [sys.executable, "-m", "fastkafka", "serve"]
        for k, v in props.items():
            args += ["--override", f"{k}={v}"]
        self._out = open(self.log, "wb")
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self._out, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONPATH=str(ROOT)))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the broker exited: {self.log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the broker did not listen within 60 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


class ThreeBrokers:
    """Three ``fastkafka serve`` brokers and a standalone ZooKeeper, through the cluster tests'
    harness (real processes, as there)."""

    def __init__(self, work: pathlib.Path, auto_create: bool = True, group_delay: bool = False):
        sys.path.insert(0, str(ROOT / "tests"))
        from support.harness import Cluster      # noqa: PLC0415  (test support, only for these tests)
        from support.zk import Ensemble          # noqa: PLC0415
        self._zk = Ensemble(work / "zk").start()
        try:
            props = broker_props(auto_create, group_delay)
            self._cluster = Cluster(work, f"{self._zk.connect}/rdk", 3, **props).start()
        except BaseException:
            self._zk.stop()
            raise
        self.bootstrap = self._cluster.bootstrap

    def stop(self) -> None:
        self._cluster.stop()
        self._zk.stop()

    def output(self) -> str:
        return "\n".join(b.output()[-700:] for b in self._cluster.brokers.values())


def _verdict(rows: list[str]) -> str:
    """One test id's verdict from its rows in the summary table (a test may have variants, e.g.
    ``0022_consume_batch`` and ``0022_consume_batch_local``, the latter skipped by ``-L``): failed
    if any failed, passed if any passed, else skipped; no row at all (a crash) is a failure.

    >>> _verdict(["PASSED", "SKIPPED"]), _verdict(["SKIPPED"]), _verdict(["PASSED", "FAILED"]), _verdict([])
    ('PASSED', 'SKIPPED', 'FAILED', 'FAILED')
    """
    if not rows or "FAILED" in rows:
        return "FAILED"
    return "PASSED" if "PASSED" in rows else "SKIPPED"


def kafka_tools(directory: pathlib.Path) -> pathlib.Path:
    """A ``KAFKA_PATH`` whose ``bin/kafka-topics.sh`` and ``bin/kafka-acls.sh`` are our tools."""
    bin_dir = directory / "kafka" / "bin"
    bin_dir.mkdir(parents=True)
    for script, tool in (("kafka-topics.sh", "topics"), ("kafka-acls.sh", "acls")):
        path = bin_dir / script
        path.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m fastkafka {tool} "$@"\n')
        path.chmod(0o755)
    return bin_dir.parent


def run_one(tests_dir: pathlib.Path, test: str, timeout: float, scenario: str = "default",
            marks: tuple[str, ...] = ()) -> tuple[str, float, str]:
    """(PASSED|FAILED|SKIPPED|TIMEOUT, seconds, output tail) of one test against a fresh broker
    (or three) set up as librdkafka's ``scenario`` and the test's ``marks`` in the list say."""
    sasl, group_delay = "sasl" in marks, "group-delay" in marks
    with tempfile.TemporaryDirectory(prefix=f"rdk-{test}-") as tmp:
        work = pathlib.Path(tmp)
        auto_create = scenario != "noautocreate"
        broker = (ThreeBrokers(work, auto_create, group_delay) if "3-brokers" in marks
                  else Broker(work, auto_create, sasl, group_delay))
        conf = work / "test.conf"
        client = dict(SASL_CLIENT if sasl else {}, **{"metadata.broker.list": broker.bootstrap})
        conf.write_text("".join(f"{k}={v}\n" for k, v in client.items()))
        env = dict(os.environ, RDKAFKA_TEST_CONF=str(conf), TESTS=test, TEST_KAFKA_VERSION=KAFKA_VERSION,
                   KAFKA_PATH=str(kafka_tools(work)), BROKERS=broker.bootstrap,
                   LD_LIBRARY_PATH=f"{tests_dir.parent / 'src'}:{tests_dir.parent / 'src-cpp'}")
        started = time.monotonic()
        try:
            proc = subprocess.run(["./test-runner", "-E", "-L", "-s", scenario], cwd=tests_dir, env=env,
                                  timeout=timeout, capture_output=True)
            text = _ANSI.sub("", (proc.stdout + proc.stderr).decode(errors="replace"))
            verdict = _verdict([m.group(2) for m in _VERDICT.finditer(text) if m.group(1) == test])
            if proc.returncode != 0 and verdict == "PASSED":
                verdict = "FAILED"
        except subprocess.TimeoutExpired as e:
            text = _ANSI.sub("", ((e.stdout or b"") + (e.stderr or b"")).decode(errors="replace"))
            verdict = "TIMEOUT"
        finally:
            broker.stop()
        took = time.monotonic() - started
        tail = text[-3000:]
        if verdict not in ("PASSED", "SKIPPED"):
            tail += "\n--- broker log ---\n" + broker.output()[-2000:]
        return verdict, took, tail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", nargs="*", help="test ids to run (default: those listed as pass)")
    ap.add_argument("--all", action="store_true", help="run every broker test and print what passes")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per test (default 240)")
    ap.add_argument("--cache", default=os.environ.get("FASTKAFKA_CI_CACHE",
                                                      str(pathlib.Path.home() / ".cache" / "fastkafka-ci")))
    args = ap.parse_args(argv)
    if shutil.which("apt-get") is None:
        sys.exit("librdkafka's suite needs Debian's apt-get (apt-get source librdkafka)")
    tests_dir = fetch_and_build(pathlib.Path(args.cache))
    listed = read_list()
    scenarios = broker_tests(tests_dir)
    if args.tests:
        todo = args.tests
    elif args.all:
        todo = list(scenarios)
    else:
        todo = sorted(t for t, (v, _) in listed.items() if v == "pass")
    print(f"librdkafka {VERSION} tests against fastkafka (TEST_KAFKA_VERSION={KAFKA_VERSION}): {len(todo)} test(s)",
          flush=True)
    verdicts, regressions = {}, []
    for test in todo:
        marks = tuple(listed.get(test, ("", ""))[1].split())
        verdict, took, tail = run_one(tests_dir, test, args.timeout, scenarios.get(test, "default"), marks)
        verdicts[test] = verdict
        expected = listed.get(test, ("", ""))[0]
        print(f"{test} {verdict:8s} {took:6.1f}s" + (f"  (listed: {expected})" if expected else ""), flush=True)
        if expected == "pass" and verdict != "PASSED":
            regressions.append(test)
            print(tail, flush=True)
    passed = sorted(t for t, v in verdicts.items() if v == "PASSED")
    print(f"passed {len(passed)} of {len(todo)}")
    new = [t for t in passed if listed.get(t, ("",))[0] != "pass"]
    if new:
        print("passing now but not listed as pass (add them to ci/librdkafka-tests.txt):")
        for t in new:
            print(f"{t} pass")
    if regressions:
        print(f"FAILED: listed as pass but did not pass: {' '.join(regressions)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
