"""The import graph respects DESIGN §2's layers: a module imports only from lower layers (or from
its own component). Inside a layer only the orderings in SAME_LAYER_OK are allowed, each the
lower-level piece of its layer (so `protocol`/`log` and `cluster`/`coordinator`/`client` never
import each other). Cython sources (.pyx, .pxd) included.

And layers meet through declared contracts only (DESIGN §10): no code reads or writes another
object's private attributes (``obj._x`` where obj is not ``self``/``cls``), except a class
reaching the privates of its own instances."""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "fastkafka"

LAYER = {
    "errors": 0, "config": 0, "_core": 0, "metrics_http": 0, "uuids": 0,
    "compression": 1, "records": 1, "legacy": 1, "security": 1,
    "protocol": 2, "log": 2,
    "cluster": 3, "coordinator": 3, "client": 3, "mirror": 4,
    "server": 4, "spark": 4, "perf": 4, "cli": 4, "__main__": 4,
}
# importer -> components of its own layer it may use, because they sit below it in that layer
SAME_LAYER_OK = {
    "_core": {"errors"}, "config": {"errors"},  # errors is the root
    "records": {"compression"}, "legacy": {"compression", "records"},      # codecs under formats
    "cli": {"server", "spark", "mirror", "perf"}, "__main__": {"cli"},    # the command is the top
}


def component(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py").removesuffix(".pyx").removesuffix(".pxd")


def imported_components(path: pathlib.Path):
    """Top-level fastkafka components a file imports (absolute and relative imports)."""
    if path.suffix in (".pyx", ".pxd"):  # Cython: only look at plain import lines
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


SOURCES = sorted(p for p in ROOT.rglob("*") if p.suffix in (".py", ".pyx", ".pxd"))


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


# namedtuple's public API is spelled with an underscore
PUBLIC_UNDERSCORE = {"_replace", "_asdict", "_fields", "_make"}
PACKAGES = {c for c in LAYER if c.startswith("_")}   # fastkafka._core is a path, not an attribute
# Cython: `name._attr` on a line that is not a comment, name not self/cls (cimported modules are
# spelled without underscores)
_CY_PRIVATE = re.compile(r"(?<![\w.])(?!self\b|cls\b)([A-Za-z_]\w*)\.(_[a-z]\w*)")


def private_crossings(path: pathlib.Path) -> list[str]:
    """``obj._x`` uses in ``path`` where obj is another object (see the module docstring)."""
    if path.suffix in (".pyx", ".pxd"):
        out = []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if '"' in code or "'" in code or code.split()[:1] in (["from"], ["import"], ["cimport"]):
                continue      # strings, docstring examples, imports
            out += [f"{path.name}:{n}: {m.group(0)}" for m in _CY_PRIVATE.finditer(code)
                    if m.group(2) not in PUBLIC_UNDERSCORE | PACKAGES]
        return out
    tree = ast.parse(path.read_text(), str(path))
    out = []

    def visit(node, own: set[str]) -> None:
        if isinstance(node, ast.ClassDef):
            own = own | {t.attr for t in ast.walk(node) if isinstance(t, ast.Attribute)
                         and isinstance(t.value, ast.Name) and t.value.id == "self"}
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__") and node.attr not in PUBLIC_UNDERSCORE | PACKAGES
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and node.attr not in own):
            out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, own)
    visit(tree, set())
    return out


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_attributes_of_other_objects(path):
    assert not private_crossings(path)


def test_the_private_attribute_check_sees_the_old_crossings(tmp_path):
    """What _core/append_state.pyx and log/files.py once did is found; a class reaching its own
    instances' privates, and namedtuple's _replace, are not."""
    pyx = tmp_path / "append_state.pyx"
    pyx.write_text("cdef f(seg, segments):\n    snap = segments._snap\n    c = seg._cursor or seg._load_cursor()\n"
                   "    self._snap = snap  # ok\n")
    assert [c.split(": ")[1] for c in private_crossings(pyx)] == [
        "segments._snap", "seg._cursor", "seg._load_cursor"]
    py = tmp_path / "files.py"
    py.write_text("def get(owner, f):\n    owner._file = f\n    return f._replace(a=1)\n"
                  "class C:\n    def __init__(self):\n        self._v = 1\n"
                  "    def copy(self):\n        out = C()\n        out._v = self._v\n        return out\n")
    assert [c.split(": ")[1] for c in private_crossings(py)] == ["owner._file"]
