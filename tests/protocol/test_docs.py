"""The examples in the protocol package's docstrings run and hold."""
import doctest
import importlib

import pytest

MODULES = ["", ".schema", ".types", ".headers", ".framing", ".api_versions", ".error_responses",
           ".codec"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module("fastkafka.protocol" + name)
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_protocol_imports_nothing_with_io():
    import sys
    import fastkafka.protocol  # noqa: F401
    for mod in list(sys.modules):
        if mod.startswith("fastkafka.protocol"):
            src = sys.modules[mod].__dict__
            assert "socket" not in src and "selectors" not in src and "threading" not in src
