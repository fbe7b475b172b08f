"""The docstring examples of every public module run (doctest), found by walking the package, so a
new module's examples are checked without anyone listing it.

An example runs in its module's namespace (it may use the module's own names without importing
them) and needs no other set-up than it shows: the storage ones create their files in a
``tempfile.TemporaryDirectory``. The examples of ``fastkafka.cluster`` (and of
``fastkafka.server.cluster_topics``) talk to a real ZooKeeper: they use the global
``zk_connect``, its ``host:port`` (``"127.0.0.1:2181"`` for a local one), each under a chroot
of its own (``f"{zk_connect}/doc-<module>"``) so they never see each other's znodes. A module
whose examples name ``zk_connect`` gets it here: one standalone ZooKeeper (tests/support/zk.py)
is started for the session when the first such module runs, and those tests carry the ``zk``
mark. Cython modules are checked too: their classes and functions are compiled with docstrings.

Examples marked ``# doctest: +SKIP`` are not run (the CLI's ``--help`` examples run in
tests/cli/test_help_examples.py and the README's in tests/install); SKIPPED counts them so the
number can only go down."""
import doctest
import importlib
import importlib.util
import pathlib
import pkgutil
import re

import pytest

import fastkafka

from support.zk import Ensemble, require_java


SKIPPED = 0       # examples still marked +SKIP
ZK_GLOBAL = "zk_connect"


def public_modules():
    for m in pkgutil.walk_packages(fastkafka.__path__, "fastkafka."):
        parts = m.name.split(".")[1:]
        if parts and parts[0] == "_core" or not any(p.startswith("_") for p in parts):
            yield m.name


def source_of(name: str) -> str:
    """The module's source text: a compiled Cython module's is its .pyx."""
    origin = pathlib.Path(importlib.util.find_spec(name).origin)
    if origin.suffix != ".py":
        origin = origin.with_name(origin.name.split(".")[0] + ".pyx")
    return origin.read_text()


def uses_zookeeper(name: str) -> bool:
    return re.search(rf"^\s*(>>>|\.\.\.) .*\b{ZK_GLOBAL}\b", source_of(name), re.M) is not None


MODULES = sorted(public_modules())


@pytest.fixture(scope="session")
def zk_connect(tmp_path_factory):
    require_java()
    with Ensemble(tmp_path_factory.mktemp("zk"), size=1) as zk:
        yield zk.connect


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.zk) if uses_zookeeper(m) else m
                                  for m in MODULES])
def test_docstring_examples(name, request):
    module = importlib.import_module(name)
    extraglobs = {ZK_GLOBAL: request.getfixturevalue("zk_connect")} if uses_zookeeper(name) else {}
    result = doctest.testmod(module, extraglobs=extraglobs,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_every_example_is_collected():
    """doctest finds every ``>>>`` of the sources, the .pyx ones included (compiled in docstrings
    the finder accepts), so passing and SKIPPED mean something. Backslashes are dropped before
    comparing: an escape in a docstring's source is one character once compiled."""
    def norm(line: str) -> str:
        return line.strip().replace("\\", "")
    found = {norm(e.source.splitlines()[0]) for name in MODULES
             for t in doctest.DocTestFinder().find(importlib.import_module(name)) for e in t.examples}
    missing = [f"{name}: {line}" for name in MODULES
               for line in re.findall(r"^\s*>>> (.*)$", source_of(name), re.M) if norm(line) not in found]
    assert not missing, "examples doctest does not see: " + "; ".join(missing)


def test_skipped_examples_only_go_down():
    root = pathlib.Path(fastkafka.__file__).parent
    count = sum(len(re.findall(r"doctest: \+SKIP", path.read_text()))
                for pattern in ("*.py", "*.pyx") for path in root.rglob(pattern))
    assert count <= SKIPPED, f"{count} examples are skipped, more than {SKIPPED}: make the new one run"
