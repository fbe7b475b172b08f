import pytest


@pytest.fixture(scope="session")
def broker_defaults() -> dict:
    """Rebalances start at once: these tests form groups and wait for no more members."""
    return {"group_initial_rebalance_delay_ms": 0}
