"""What every test directory shares: starting in-process brokers.

A test that wants a broker names the ``broker`` fixture: one in-process broker on a free loopback
port with a fresh log dir, shut down after the test. ``@pytest.mark.broker_config(**props)`` (on
the test, or the module's ``pytestmark``) changes its config, over the directory's
``broker_defaults`` (tests/coordinator); props use Kafka's names with ``_`` for ``.``, as
``support.brokers.running_broker`` takes them::

    pytestmark = pytest.mark.broker_config(group_initial_rebalance_delay_ms=0)

    def test_join(broker):
        ...

A test that needs more than one broker, or a broker that lives for the whole module, calls a
factory: ``start_broker(**props)`` (brokers shut down after the test), ``start_module_broker``
(after the module), ``start_session_broker`` (after the session). A directory whose tests share
one broker per module overrides ``broker`` with one line over ``start_module_broker``
(tests/cli, tests/client).

Helpers shared by more than one directory are in ``tests/support/`` (imported as ``support.x``);
fixtures that belong to one directory (ZooKeeper clusters, Spark sessions, mirrors) stay in its
conftest.py.
"""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.brokers import running_broker


class BrokerFactory:
    """Starts in-process brokers, each in a log dir of its own; ``close()`` shuts every one down."""

    def __init__(self, log_dir: Callable[[], Path]):
        self._log_dir = log_dir
        self._started = contextlib.ExitStack()

    def __call__(self, **props):
        return self._started.enter_context(running_broker(self._log_dir(), **props))

    def close(self) -> None:
        self._started.close()


def _factory(log_dir: Callable[[], Path]) -> Iterator[BrokerFactory]:
    factory = BrokerFactory(log_dir)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def start_broker(tmp_path) -> Iterator[BrokerFactory]:
    """``start_broker(**props)``: a started broker, shut down at the end of the test."""
    n = itertools.count()
    # the first one's is tmp_path/"data", where a test that reads the log dir looks for it
    yield from _factory(lambda: tmp_path / ("data" if (i := next(n)) == 0 else f"data-{i}"))


@pytest.fixture(scope="module")
def start_module_broker(tmp_path_factory) -> Iterator[BrokerFactory]:
    """``start_module_broker(**props)``: a started broker, shut down at the end of the module."""
    yield from _factory(lambda: tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def start_session_broker(tmp_path_factory) -> Iterator[BrokerFactory]:
    """``start_session_broker(**props)``: a started broker, shut down at the end of the session."""
    yield from _factory(lambda: tmp_path_factory.mktemp("data"))


def broker_config(node) -> dict:
    """The props of every ``broker_config`` mark on ``node`` and its parents, the closest winning."""
    props: dict = {}
    for mark in reversed(list(node.iter_markers("broker_config"))):
        props.update(mark.kwargs)
    return props


@pytest.fixture(scope="session")
def broker_defaults() -> dict:
    """Props every ``broker`` of a directory starts with (none here); a directory's conftest.py
    overrides this fixture, and ``broker_config`` marks override it."""
    return {}


@pytest.fixture
def broker(request, start_broker, broker_defaults):
    """One in-process broker for the test, configured by ``broker_defaults`` and its ``broker_config`` marks."""
    return start_broker(**{**broker_defaults, **broker_config(request.node)})
