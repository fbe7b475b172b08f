"""One Prometheus endpoint, ``GET http://<host>:<port>/metrics``, for whatever collects the metrics.

The broker (:mod:`fastkafka.server.metrics_export`) and the mirror (:mod:`fastkafka.mirror.metrics`)
each bring a collector -- an object whose ``collect()`` yields ``prometheus_client`` metric
families, computed when Prometheus scrapes -- and serve it here: ``prometheus_client``'s HTTP
server on its own thread, one registry per endpoint (a test process runs several brokers and
mirrors). Start-up problems (the library missing, the port busy) are :class:`MetricsError`, whose
message names the setting (``metrics.port``, ``--metrics-port``) and the extra to install.

Needs ``prometheus_client`` (``pip install 'fastkafka[metrics]'``); import this module only
when metrics are asked for.

Example::

    >>> import urllib.request
    >>> from prometheus_client.core import GaugeMetricFamily
    >>> class Answer:
    ...     def collect(self):
    ...         yield GaugeMetricFamily("answer", "The answer.", value=42)
    >>> e = MetricsEndpoint(Answer(), "127.0.0.1", 0)
    >>> e.start()
    >>> "answer 42.0" in urllib.request.urlopen(f"http://127.0.0.1:{e.port}/metrics").read().decode()
    True
    >>> e.stop()
"""
from __future__ import annotations

import logging

try:
    from prometheus_client import CollectorRegistry, start_http_server
except ImportError:    # MetricsEndpoint turns this into an error naming the extra
    CollectorRegistry = None

__all__ = ["MetricsEndpoint", "MetricsError"]

log = logging.getLogger("fastkafka.metrics")


class MetricsError(RuntimeError):
    """The metrics endpoint cannot start (library missing, port busy); the message says why."""


class MetricsEndpoint:
    """Serves ``collector`` on ``host``:``port`` (0: an ephemeral port, see :attr:`port`) once
    :meth:`start`\\ ed. ``setting`` names what asked for it, in error messages."""

    def __init__(self, collector, host: str, port: int, setting: str = "metrics.port"):
        if CollectorRegistry is None:
            raise MetricsError(f"{setting} is set but prometheus_client is not installed: "
                               "pip install 'fastkafka[metrics]'")
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._host, self._port, self._setting = host, port, setting
        self._server = self._thread = None

    def start(self) -> None:
        try:
            self._server, self._thread = start_http_server(self._port, self._host, self.registry)
        except OSError as e:
            raise MetricsError(f"cannot serve metrics on {self._host or '0.0.0.0'}:{self._port} "
                               f"({self._setting}): {e.strerror or e}") from None
        log.info("metrics on http://%s:%d/metrics", self._host or "0.0.0.0", self.port)

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return self._server.server_port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
            self._server = None
