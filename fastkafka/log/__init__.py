"""The storage engine (DESIGN §4): segments, mmap indexes, flush policy, retention, recovery,
compaction. Policy in Python; byte work in ``fastkafka._core`` (segment, index, records).

Example::

    >>> from fastkafka.log import LogManager
    >>> from fastkafka.config import KafkaConfig
    >>> mgr = LogManager(KafkaConfig({"log.dirs": tmpdir}))                  # doctest: +SKIP
    >>> log = mgr.get_or_create_log("orders", 0)                            # doctest: +SKIP
"""
from .log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, FetchRegion, Log, LogAppendInfo
from .segment import LogSegment
from .segments import LogSegments

__all__ = ["Log", "LogAppendInfo", "FetchRegion", "LogSegment", "LogSegments", "LogManager",
           "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP"]


def __getattr__(name):  # LogManager imports the cleaner; load it on first use
    if name == "LogManager":
        from .manager import LogManager
        return LogManager
    raise AttributeError(name)
