import pytest

from support.brokers import running_broker


@pytest.fixture
def broker(tmp_path):
    with running_broker(tmp_path / "data") as b:
        yield b
