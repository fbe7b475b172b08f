import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
from brokers import running_broker  # noqa: E402

pytestmark = pytest.mark.clients


@pytest.fixture
def broker(tmp_path):
    with running_broker(tmp_path / "data") as b:
        yield b
