"""The examples in the client's docstrings run."""
import doctest
import importlib

import pytest

MODULES = ["config", "connection", "partitioner", "accumulator", "arrow", "group_member"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(f"fastkafka.client.{name}")
    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0


def test_murmur2_docstring():
    import fastkafka._core.client_hash as m
    assert doctest.testmod(m).failed == 0
