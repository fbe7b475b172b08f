
import pytest

from support.brokers import running_broker


@pytest.fixture
def broker(tmp_path):
    """In-process broker; rebalances start at once (group.initial.rebalance.delay.ms=0)."""
    with running_broker(tmp_path / "data", group_initial_rebalance_delay_ms=0) as b:
        yield b
