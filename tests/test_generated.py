"""Committed generated source matches what its generator yields from its table (the --check modes)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import generate_errors  # noqa: E402


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
