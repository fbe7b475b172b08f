"""Which segments retention deletes: by time, by size, and those below the log start offset.

Pure functions over a list of segments (oldest first); the Log applies the result. Each rule
deletes a prefix of the list and never the active (last) segment, nor a segment holding offsets
at or above the high watermark, like Kafka: the log start offset must never pass what the
followers have copied, or they would find the offsets they need gone.

Example::

    >>> deletable_segments([], LogConfig(), now=0, log_start_offset=0, high_watermark=0)
    []
"""
from __future__ import annotations

from typing import Sequence


from ..config import LogConfig
from .segment import LogSegment


def deletable_segments(segments: Sequence[LogSegment], config: LogConfig, now: int,
                       log_start_offset: int, high_watermark: int) -> list[LogSegment]:
    """The oldest segments to delete now (a prefix, never the last one, each wholly below
    ``high_watermark``)."""
    committed = 0
    while committed < len(segments) - 1 and segments[committed + 1].base_offset <= high_watermark:
        committed += 1
    candidates = list(segments[:committed])
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
