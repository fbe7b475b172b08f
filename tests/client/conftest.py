"""One in-process broker per test module (topics are per test, so tests stay independent)."""
import itertools

import pytest

from support.brokers import running_broker


_names = itertools.count()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with running_broker(tmp_path_factory.mktemp("data"), num_partitions=1,
                        group_initial_rebalance_delay_ms=0) as b:  # groups form at once
        yield b


@pytest.fixture
def topic(broker, request):
    """A fresh topic name (auto-created on first use with the broker's defaults)."""
    return f"{request.node.name[:40].strip('[]').replace('[', '-').replace(']', '')}-{next(_names)}"
