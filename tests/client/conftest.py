"""One in-process broker per test module (topics are per test, so tests stay independent)."""
import itertools

import pytest

_names = itertools.count()


@pytest.fixture(scope="module")
def broker(start_module_broker):
    return start_module_broker(num_partitions=1, group_initial_rebalance_delay_ms=0)  # groups form at once


@pytest.fixture
def topic(broker, request):
    """A fresh topic name (auto-created on first use with the broker's defaults)."""
    return f"{request.node.name[:40].strip('[]').replace('[', '-').replace(']', '')}-{next(_names)}"
