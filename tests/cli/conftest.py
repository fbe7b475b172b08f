import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "client"))
from brokers import running_broker  # noqa: E402


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with running_broker(tmp_path_factory.mktemp("data"), num_partitions=1,
                        group_initial_rebalance_delay_ms=0) as b:  # groups form at once
        yield b
