
import pytest

from support.brokers import running_broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with running_broker(tmp_path_factory.mktemp("data"), num_partitions=1,
                        group_initial_rebalance_delay_ms=0) as b:  # groups form at once
        yield b
