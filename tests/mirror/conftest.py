"""Fixtures of the mirror tests: two one-broker clusters (in-process embedded brokers, each its
own log dir and port) and mirror subprocesses that are stopped at the end."""
from __future__ import annotations

import pytest

from mirror_support import MirrorProcess

BROKER = {"group_min_session_timeout_ms": 500, "group_initial_rebalance_delay_ms": 0}


@pytest.fixture
def clusters(start_broker):
    """``(a, b)``: two clusters; ``.bootstrap`` is each one's address."""
    return start_broker(**BROKER), start_broker(**BROKER)


@pytest.fixture
def mirror(tmp_path):
    """``mirror(source, target, *args)`` starts one; every one started is stopped at the end."""
    started: list[MirrorProcess] = []

    def start(source, target, *args, name="mirror"):
        m = MirrorProcess(tmp_path, source, target, *args, name=name).start()
        started.append(m)
        return m
    yield start
    for m in started:
        if m.alive():
            m.stop()
