"""Record-level answers the index cannot give alone: ListOffsets by timestamp inside one batch.

Runs on the ListOffsets path only (never produce/fetch), so decoding one batch in Python is fine.

Example::

    >>> from fastkafka.records import build_batch
    >>> batch = build_batch([(None, b"a", [], 5), (None, b"b", [], 9)], base_offset=100)
    >>> first_record_at_or_after(batch, 6, 100)       # (offset, timestamp)
    (101, 9)
    >>> first_record_at_or_after(batch, 10, 100) is None
    True
"""
from __future__ import annotations

from .. import records as _records


def first_record_at_or_after(batch: bytes, timestamp: int, start_offset: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at/after ``start_offset`` with timestamp >=
    ``timestamp`` in the whole batch ``batch``; None if the batch has none."""
    for b in _records.iter_batches(batch, check_crc=False):
        for r in b.records():
            offset, ts = r.offset, r.timestamp      # a stored record has both
            if offset is not None and ts is not None and offset >= start_offset and ts >= timestamp:
                return (offset, ts)
    return None
