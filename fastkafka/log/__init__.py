"""The storage engine (DESIGN §4): segments, mmap indexes, flush policy, retention, recovery,
compaction. Policy in Python; byte work in ``fastkafka._core`` (segment, index, records).

Example::

    >>> import tempfile
    >>> from fastkafka.log import LogManager
    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.records import build_batch
    >>> tmpdir = tempfile.TemporaryDirectory()
    >>> mgr = LogManager(KafkaConfig({"log.dirs": tmpdir.name}))
    >>> log = mgr.get_or_create_log("orders", 0)
    >>> log.append(bytearray(build_batch([(b"k", b"v", [], 1)]))).base_offset, log.log_end_offset
    (0, 1)
    >>> mgr.shutdown(); tmpdir.cleanup()
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
