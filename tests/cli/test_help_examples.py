"""Every example a tool's ``--help`` shows runs, verbatim, against a real broker (issue 12: help
text and behaviour must not drift). Examples are read from the tools' ``--help`` output itself,
run in order through bash with ``fastkafka`` pointing at this tree and ``-b`` set to the test
broker; examples that run until Ctrl-C (a consumer without a limit) get SIGINT after showing
output. The examples of the tools that move partitions between brokers (CLUSTER_TOOLS) run
against three brokers joined through real ZooKeeper. Only the examples in EXCLUDED are not run,
each with its reason."""
import os
import re
import signal
import subprocess
import sys

import pytest

from fastkafka.client.admin import AdminClient


pytestmark = pytest.mark.timeout(600)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = ["topics", "configs", "produce", "consume", "groups", "perf", "log-dirs", "acls",   # the tools with examples
         "reassign", "leader-election"]
CLUSTER_TOOLS = ("reassign", "leader-election")   # their examples need brokers 1, 2, 3 (and topic orders)
EXCLUDED = {   # example -> why it is not run here
    "fastkafka consume orders --group billing --zookeeper 127.0.0.1:2181/kafka":
        "needs a ZooKeeper ensemble: tests/cluster/test_zk_consumer.py runs the ZooKeeper group",
}
INPUT_FILES = {   # files the examples name, with lines of the shape they describe
    "keyed.txt": "".join(f"k{i}:v{i}\n" for i in range(20)),
    "events.txt": "".join(f"event {i}\n" for i in range(100)),
    "big.txt": "".join(f"line {i}\n" for i in range(5000)),
    "topics.json": '{"version":1,"topics":[{"topic":"orders"}]}',
    "reassignment.json": '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3]},'
                         '{"topic":"orders","partition":1,"replicas":[3,1]}]}',
    "partitions.json": '{"partitions":[{"topic":"orders","partition":0},{"topic":"orders","partition":2}]}',
}

from support.brokers import running_broker
from support.harness import Cluster, wait_for
from support.zk import Ensemble, require_java


def help_examples(tool: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "fastkafka", tool, "--help"], capture_output=True,
                         text=True, cwd=ROOT, check=True).stdout
    text = out.split("examples:", 1)[1] if "examples:" in out else ""
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("fastkafka ") or re.match(r"^\S.*\|\s*fastkafka ", line):
            lines.append(re.sub(r"\s+#.*$", "", line))       # drop the trailing comment
    return lines


def all_examples() -> list[str]:
    return [ex for tool in TOOLS for ex in help_examples(tool)]


def test_the_help_of_each_tool_shows_examples():
    for tool in TOOLS:
        assert help_examples(tool), f"fastkafka {tool} --help shows no example"
    assert set(EXCLUDED) <= set(all_examples()), "an exclusion names an example that is gone"


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    """The acls examples need the authorizer, and their plaintext client (User:ANONYMOUS) the
    right to change ACLs; every other example keeps the broker without one."""
    with running_broker(tmp_path_factory.mktemp("acl-data"), super_users="User:ANONYMOUS",
                        authorizer_class_name="kafka.security.authorizer.AclAuthorizer") as b:
        yield b


def run_examples(examples: list[str], bootstrap_for, cwd) -> list[str]:
    """Run each example in order in ``cwd`` against the broker ``bootstrap_for(example)``
    names; what went wrong with each that did not run as it should."""
    for name, text in INPUT_FILES.items():
        (cwd / name).write_text(text)
    failures = []
    for example in examples:
        shim = (f'fastkafka() {{ PYTHONPATH="{ROOT}" "{sys.executable}" -m fastkafka "$1" '
                f'-b "{bootstrap_for(example)}" "${{@:2}}"; }}\n')
        proc = subprocess.Popen(["bash", "-c", shim + example], cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        # a consumer without a limit runs until Ctrl-C: give it a few seconds to print
        forever = (re.search(r"\bfastkafka consume\b", example) is not None
                   and not re.search(r"(-n |--max-messages|--timeout-ms)", example))
        try:
            out, err = proc.communicate(timeout=5 if forever else 120)
        except subprocess.TimeoutExpired:      # it must have printed by now
            os.killpg(proc.pid, signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            ok = forever and proc.returncode in (130, -signal.SIGINT) and bool(out)
        else:
            ok = proc.returncode == 0 and not forever
        if not ok or b"Traceback" in err:
            failures.append(f"{example}\n  exit {proc.returncode}\n  {err.decode()[-500:]}")
    return failures


def on_cluster(example: str) -> bool:
    return re.search(r"\bfastkafka (\S+)", example).group(1) in CLUSTER_TOOLS


def test_every_help_example_runs(broker, acl_broker, tmp_path):
    examples = [ex for ex in all_examples() if ex not in EXCLUDED and not on_cluster(ex)]
    failures = run_examples(examples, lambda ex: (acl_broker if ex.startswith("fastkafka acls ") else broker).bootstrap,
                            tmp_path)
    assert not failures, "\n".join(failures)


@pytest.mark.zk
def test_every_cluster_help_example_runs(tmp_path_factory, tmp_path):
    """The reassign and leader-election examples, in order, against brokers 1-3 with a topic
    orders of three partitions on two replicas each."""
    require_java()
    with Ensemble(tmp_path_factory.mktemp("zk"), size=1) as zk, \
            Cluster(tmp_path_factory.mktemp("brokers"), f"{zk.connect}/examples", 3) as cluster:
        with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
            admin.create_topic("orders", num_partitions=3, replication_factor=2)
        wait_for(lambda: all((st := cluster.state("orders", p)) and len(st.isr) == 2 for p in range(3)), 30,
                 what="orders in sync on two replicas")
        examples = [ex for ex in all_examples() if ex not in EXCLUDED and on_cluster(ex)]
        failures = run_examples(examples, lambda ex: cluster.bootstrap, tmp_path)
    assert not failures, "\n".join(failures)
