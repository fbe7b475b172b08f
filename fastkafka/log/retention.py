"""Which segments retention deletes: by time, by size, and those below the log start offset.

Pure functions over a list of segments (oldest first); the Log applies the result. Each rule
deletes a prefix of the list and never the active (last) segment, like Kafka.

Example::

    >>> deletable_segments([], LogConfig(), now=0, log_start_offset=0)
    []
"""
from __future__ import annotations

from typing import Sequence


from ..config import LogConfig
from .segment import LogSegment


def deletable_segments(segments: Sequence[LogSegment], config: LogConfig, now: int,
                       log_start_offset: int) -> list[LogSegment]:
    """The oldest segments to delete now (a prefix, never the last one)."""
    candidates = list(segments[:-1])
    n = 0
    # Below the log start offset (DeleteRecords, or a start offset raised by a follower).
    while n < len(candidates) and segments[n + 1].base_offset <= log_start_offset:
        n += 1
    if config.delete:
        if config.retention_ms >= 0:
            # Judged by the largest timestamp in the segment: the newest record must have expired.
            while n < len(candidates) and now - candidates[n].largest_timestamp() > config.retention_ms:
                n += 1
        if config.retention_bytes >= 0:
            excess = sum(s.size for s in segments) - config.retention_bytes
            excess -= sum(s.size for s in candidates[:n])
            while n < len(candidates) and excess - candidates[n].size >= 0:
                excess -= candidates[n].size
                n += 1
    return candidates[:n]
