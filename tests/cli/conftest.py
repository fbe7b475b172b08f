import pytest


@pytest.fixture(scope="module")
def broker(start_module_broker):
    """One broker per module; groups form at once."""
    return start_module_broker(num_partitions=1, group_initial_rebalance_delay_ms=0)
