"""Performance measurement behind ``fastkafka perf`` and ``bench/bench_disk.py``.

Each module is a library function returning numbers (the command line and the benchmark
suite only print or store them):

- :mod:`.histogram` -- a bounded log-bucketed latency histogram (HdrHistogram's idea);
- :mod:`.produce`, :mod:`.consume`, :mod:`.e2e` -- kafka-producer-perf-test,
  kafka-consumer-perf-test and Kafka's EndToEndLatency tool;
- :mod:`.disk` -- a log directory's linear write and read rates (the limit the broker is judged by);
- :mod:`.on_disk` -- the broker run on those directories: produce/fetch as ratios of the disk,
  the flush-interval sweep and JBOD.

Example::

    >>> from fastkafka.perf.histogram import LatencyHistogram
    >>> h = LatencyHistogram()
    >>> h.record_ms(2.0, count=99); h.record_ms(40.0)
    >>> round(h.percentile_ms(0.5)), round(h.percentile_ms(0.999))
    (2, 40)
"""
from __future__ import annotations

from typing import Any, Mapping

__all__ = ["client_settings"]


def client_settings(config: Mapping[str, Any], **overrides: Any):
    """``config`` (Kafka names, or a parsed ClientConfig) with the tool's own settings on top
    (``_`` for ``.``), parsed once.

    Example::

        >>> client_settings({"bootstrap.servers": "h:9092"}, producer_type="async")["producer.type"]
        'async'
    """
    from fastkafka.client.config import ClientConfig
    cfg = config if isinstance(config, ClientConfig) else ClientConfig(config)
    return cfg.with_overrides(**overrides)
