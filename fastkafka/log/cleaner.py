"""Log compaction (placeholder until the cleaner lands)."""
from __future__ import annotations


class LogCleaner:
    def __init__(self, config, clock=None):
        self.config = config
        self.clock = clock

    def clean(self, log) -> bool:
        return False
