
import pytest

from support.brokers import running_broker


pytestmark = pytest.mark.clients


@pytest.fixture
def broker(tmp_path):
    with running_broker(tmp_path / "data") as b:
        yield b
