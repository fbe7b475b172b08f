"""Fixtures of the mirror tests: two one-broker clusters (in-process embedded brokers, each its
own log dir and port) and mirror subprocesses that are stopped at the end."""
from __future__ import annotations


import pytest


from support.brokers import running_broker
from mirror_support import MirrorProcess  # noqa: E402

BROKER = {"group_min_session_timeout_ms": 500, "group_initial_rebalance_delay_ms": 0}


@pytest.fixture
def clusters(tmp_path):
    """``(a, b)``: two clusters; ``.bootstrap`` is each one's address."""
    with running_broker(tmp_path / "a", **BROKER) as a, running_broker(tmp_path / "b", **BROKER) as b:
        yield a, b


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
