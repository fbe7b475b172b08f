"""Shared helpers for the log storage tests: batch builders and a fake clock."""
from __future__ import annotations

import pytest

from fastkafka.config import LogConfig
from fastkafka.log import Log, cleaner_swap
from fastkafka.log.cleaner import LogCleaner
from fastkafka.log.files import FileCache
from fastkafka.log.scheduler import Scheduler
from fastkafka.records import build_batch


class FakeClock:
    def __init__(self, now: int = 1_700_000_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def batch(n: int = 1, *, ts: int = 1000, key: bytes | None = b"k", size: int = 10,
          compression: int = 0) -> bytearray:
    """A v2 batch of n records (values of ``size`` bytes), as a writable buffer."""
    return bytearray(build_batch([(key, bytes([65 + i % 26]) * size, [], ts + i) for i in range(n)],
                                 compression=compression))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_log(tmp_path, clock):
    """Open (or reopen) a log at tmp_path/t-0 with a fake clock and overrides of LogConfig."""
    files = FileCache(64)

    def make(clean_shutdown: bool = True, recovery_point: int = 0, dirname: str = "t-0", **cfg) -> Log:
        return Log(str(tmp_path / dirname), LogConfig().with_overrides(**cfg), files=files,
                   scheduler=Scheduler(clock), clock=clock, clean_shutdown=clean_shutdown,
                   recovery_point=recovery_point)
    return make


class Crash(BaseException):
    """Stops a compaction's swap where a crash would (not an OSError: nothing is rolled back)."""


def swap_steps_of(log, clock, monkeypatch) -> list[str]:
    """Compact ``log``, recording the steps of its swap in order."""
    steps: list[str] = []
    monkeypatch.setattr(cleaner_swap, "_step", steps.append)
    try:
        assert LogCleaner(clock=clock).clean(log, force=True)
    finally:
        monkeypatch.undo()
    return steps


def clean_crashing_at(log, clock, monkeypatch, k: int) -> None:
    """Compact ``log`` and die at the swap's step ``k`` (0-based), files left as they were."""
    calls: list[str] = []

    def crash(step):
        calls.append(step)
        if len(calls) == k + 1:
            raise Crash(step)
    monkeypatch.setattr(cleaner_swap, "_step", crash)
    try:
        with pytest.raises(Crash):
            LogCleaner(clock=clock).clean(log, force=True)
    finally:
        monkeypatch.undo()
