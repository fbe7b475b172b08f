"""Committed generated source matches what its generator yields from its table (the --check modes)."""
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_tool(name: str):
    """tools/<name>.py as a module: tools/ is scripts, not a package on the path."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate_errors = _load_tool("generate_errors")


def test_codes_py_is_what_the_error_table_yields():
    run = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "generate_errors.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_check_sees_a_stale_file():
    with open(generate_errors.TARGET) as f:
        current = f.read()
    table = [(-1, "UNKNOWN_SERVER_ERROR", False), (1, "OFFSET_OUT_OF_RANGE", False),
             (121, "A_CODE_ADDED_LATER", True)]
    wanted = generate_errors.render(table)
    assert wanted != current
    assert "class ACodeAddedLaterError(KafkaError):" in wanted
    assert "    121: ACodeAddedLaterError,\n" in wanted


def test_every_code_has_its_class_by_name():
    from fastkafka import errors
    from fastkafka.errors.table import ERROR_TABLE
    for code, name, retriable in ERROR_TABLE:
        if code == 0:
            continue
        cls = getattr(errors, generate_errors.class_name(name))
        assert (cls.code, cls.name, cls.retriable) == (code, name, retriable)
        assert errors.for_code(code) is cls
        assert cls.__name__ in errors.__all__
