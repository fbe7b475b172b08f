"""Waiting for a state instead of sleeping for it: every test's one poll loop.

    >>> from support.waits import wait_for
    >>> wait_for(lambda: 42, what="the answer")
    42
"""
from __future__ import annotations

import time
from typing import Callable


def wait_for(predicate: Callable[[], object], timeout: float = 20.0, what: str = "condition",
             on_timeout: Callable[[], str] = lambda: "", interval: float = 0.05):
    """Poll ``predicate`` until it returns something true and return that; TimeoutError naming
    ``what`` (and ``on_timeout()``'s account of the state) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)  # poll interval
    detail = on_timeout()
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}" + (f"\n{detail}" if detail else ""))
