"""Every third-party module the package imports is declared in pyproject.toml: at module level
outside the Spark code, as a base dependency (a plain ``pip install fastkafka`` must import it);
anywhere else, at least in an extra. (numpy was once imported by the client without being
declared: the dev venv, with every extra, never noticed.)"""
import ast
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("fastkafka", "pyspark_fastkafka")
SPARK_CODE = ("fastkafka/spark/", "pyspark_fastkafka/", "fastkafka/cli/load.py")


def declared() -> tuple[set[str], set[str]]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = lambda req: re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower()   # noqa: E731
    extras = {name(r) for reqs in meta["optional-dependencies"].values() for r in reqs}
    return {name(r) for r in meta["dependencies"]}, extras


def imports(path: pathlib.Path):
    """(top-level module, imported at module level?) for every absolute import in ``path``."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], id(node) in top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], id(node) in top


def test_every_third_party_import_is_declared():
    base, extras = declared()
    problems = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for mod, module_level in imports(path):
                if mod in sys.stdlib_module_names or mod in PACKAGES or mod == "__future__":
                    continue
                if module_level and not rel.startswith(SPARK_CODE) and mod.lower() not in base:
                    problems.append(f"{rel}: imports {mod} at module level, not a base dependency")
                elif mod.lower() not in base | extras:
                    problems.append(f"{rel}: imports {mod}, declared nowhere")
    assert not problems, "\n".join(problems)
