"""Fetching many partitions from their leaders: positions, resets, one multifetch per broker.

The building block of the consume tool and the ConsumerConnector: it keeps a position per
partition, routes each to its leader through a :class:`SimpleConsumer` per broker, advances
positions as message sets come back, resolves ``earliest``/``latest``/timestamp start points,
and on a stale-leader error refreshes metadata and tries again next round.

Not thread-safe: one fetcher thread owns it.

Example::

    f = Fetcher(Cluster({"bootstrap.servers": "127.0.0.1:9092"}))
    f.assign({("orders", 0): EARLIEST, ("orders", 1): 42})
    for ms in f.poll():                      # MessageSets, positions already advanced
        for mo in ms:
            print(ms.topic, ms.partition, mo.offset, mo.message.value)
"""
from __future__ import annotations

import logging

from fastkafka import errors

from .metadata import Cluster
from .simple_consumer import FetchRequest, MessageSet, SimpleConsumer

__all__ = ["Fetcher", "EARLIEST", "LATEST"]

EARLIEST = -2
LATEST = -1
log = logging.getLogger("fastkafka.client")


class Fetcher:
    """Positions for a set of partitions and the fetch loop step that advances them."""

    def __init__(self, cluster: Cluster, *, fetch_size: int | None = None, max_wait_ms: int | None = None,
                 min_bytes: int | None = None, isolation_level: int = 0):
        self.cluster = cluster
        self.isolation_level = isolation_level     # 1: read_committed (see MessageSet.batches)
        c = cluster.config
        self.fetch_size = fetch_size or c["fetch.message.max.bytes"]
        self.max_wait_ms = c["fetch.wait.max.ms"] if max_wait_ms is None else max_wait_ms
        self.min_bytes = c["fetch.min.bytes"] if min_bytes is None else min_bytes
        self.reset = c["auto.offset.reset"]
        self.positions: dict[tuple[str, int], int] = {}
        self._consumers: dict[int, SimpleConsumer] = {}

    def close(self) -> None:
        for c in self._consumers.values():
            c.close()
        self._consumers.clear()

    def assign(self, starts: dict[tuple[str, int], int]) -> None:
        """Set positions: an offset, :data:`EARLIEST`, :data:`LATEST`, or ``("time", ms)``."""
        for tp, start in starts.items():
            self.positions[tp] = self._resolve(tp, start)

    def unassign(self, tps) -> None:
        for tp in tps:
            self.positions.pop(tp, None)

    def _consumer(self, node: int) -> SimpleConsumer:
        c = self._consumers.get(node)
        if c is None:
            b = self.cluster.brokers[node]
            cfg = self.cluster.config
            c = self._consumers[node] = SimpleConsumer(
                b.host, b.port, cfg["request.timeout.ms"], self.fetch_size,
                client_id=cfg["client.id"], max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes,
                max_buffer_size=max(self.fetch_size, 64 << 20), isolation_level=self.isolation_level,
                security=self.cluster.security)
        return c

    def _resolve(self, tp, start) -> int:
        if isinstance(start, tuple):      # ("time", ms)
            off = self._consumer(self.cluster.leader_for(*tp)).offset_for_time(tp[0], tp[1], start[1])
            return off if off >= 0 else self._resolve(tp, LATEST)
        if start >= 0:
            return start
        offs = self._consumer(self.cluster.leader_for(*tp)).get_offsets_before(tp[0], tp[1], start, 1)
        return offs[0] if offs else 0

    def poll(self) -> list[MessageSet]:
        """One fetch per leader for every assigned partition; positions advance past what
        came back. Out-of-range positions are reset by ``auto.offset.reset``."""
        by_node: dict[int, list[FetchRequest]] = {}
        for (t, p), off in self.positions.items():
            try:
                node = self.cluster.leader_for(t, p)
            except errors.KafkaError as e:
                log.warning("no leader for %s-%d: %s", t, p, e)
                continue
            by_node.setdefault(node, []).append(FetchRequest(t, p, off, self.fetch_size))
        out = []
        for node, reqs in by_node.items():
            try:
                sets = self._consumer(node).multifetch(reqs)
            except errors.KafkaError as e:
                log.warning("fetch from broker %d failed: %s", node, e)
                self._consumers.pop(node).close()
                self.cluster.invalidate()
                continue
            for ms in sets:
                tp = (ms.topic, ms.partition)
                if ms.error is None:
                    if tp in self.positions:
                        self.positions[tp] = ms.next_offset
                    out.append(ms)
                elif isinstance(ms.error, errors.OffsetOutOfRangeError) and self.reset != "none":
                    self.positions[tp] = self._resolve(tp, EARLIEST if self.reset == "earliest" else LATEST)
                elif getattr(ms.error, "retriable", False):
                    self.cluster.invalidate()
                else:
                    raise ms.error
        return out
