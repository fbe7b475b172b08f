"""The import graph respects DESIGN §2's layers: a module imports only from lower layers (or from
its own component). Inside a layer only the orderings in SAME_LAYER_OK are allowed, each the
lower-level piece of its layer (so `protocol`/`log` and `cluster`/`coordinator`/`client` never
import each other)."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "fastkafka"

LAYER = {
    "errors": 0, "_error_table": 0, "config": 0, "_core": 0,
    "compression": 1, "records": 1, "legacy": 1,
    "protocol": 2, "log": 2,
    "cluster": 3, "coordinator": 3, "client": 3,
    "server": 4, "spark": 4, "cli": 4, "__main__": 4,
}
# importer -> components of its own layer it may use, because they sit below it in that layer
SAME_LAYER_OK = {
    "_core": {"errors"}, "config": {"errors"}, "errors": {"_error_table"},  # errors is the root
    "records": {"compression"}, "legacy": {"compression", "records"},      # codecs under formats
    "cli": {"server", "spark"}, "__main__": {"cli"},                      # the command is the top
}


def component(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py").removesuffix(".pyx")


def imported_components(path: pathlib.Path):
    """Top-level fastkafka components a file imports (absolute and relative imports)."""
    if path.suffix == ".pyx":  # Cython: only look at plain import lines
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("import", "from", "cimport") and words[1].startswith("fastkafka."):
                yield words[1].split(".")[1]
        return
    tree = ast.parse(path.read_text(), str(path))
    depth = len(path.relative_to(ROOT).parts) - 1  # package depth below fastkafka/
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "fastkafka" and len(parts) > 1:
                    yield parts[1]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                if parts[0] == "fastkafka":
                    if len(parts) > 1:
                        yield parts[1]
                    else:
                        yield from (a.name for a in node.names)
            elif node.level > depth:  # relative import reaching the fastkafka/ root
                parts = (node.module or "").split(".")
                if parts[0]:
                    yield parts[0]
                else:
                    yield from (a.name for a in node.names)


SOURCES = sorted(p for p in ROOT.rglob("*") if p.suffix in (".py", ".pyx"))


def test_every_component_has_a_layer():
    unknown = {component(p) for p in SOURCES} - set(LAYER) - {"__init__"}
    assert not unknown, f"add these components to LAYER in {__file__}: {unknown}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_respect_layers(path):
    own = component(path)
    if own == "__init__":
        return
    for other in imported_components(path):
        if other == own or other not in LAYER:
            continue
        assert LAYER[other] <= LAYER[own], f"{own} (L{LAYER[own]}) imports {other} (L{LAYER[other]})"
        if LAYER[other] == LAYER[own]:
            assert other in SAME_LAYER_OK.get(own, ()), f"{own} imports {other}, a sibling in L{LAYER[own]}"


def test_the_checker_sees_a_violation(tmp_path, monkeypatch):
    """A planted upward import and a planted sibling import are both found."""
    fake = tmp_path / "fastkafka"
    (fake / "protocol").mkdir(parents=True)
    bad = fake / "protocol" / "x.py"
    bad.write_text("from fastkafka.server import broker\nfrom ..log import log\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", fake)
    assert set(imported_components(bad)) == {"server", "log"}
    with pytest.raises(AssertionError):
        test_imports_respect_layers(bad)
