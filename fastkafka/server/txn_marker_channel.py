"""The transaction coordinator's markers in cluster mode: WriteTxnMarkers to each partition's
leader (Kafka's TransactionMarkerChannelManager).

The partitions of a completing transaction are grouped by the leader the ZooKeeper metadata
names, and each leader gets one WriteTxnMarkers request over the inter-broker listener (this
broker included: the leader answers once the marker is replicated, so a local write takes the
same road); all are sent before the first answer is awaited. The answer is the error code of
each partition whose marker was not written: NOT_LEADER_OR_FOLLOWER while a partition has no
leader, NETWORK_EXCEPTION when its leader could not be reached, the leader's own code otherwise.
The coordinator keeps the transaction prepared and asks again for those partitions (its tick),
so a marker lands once a leader is back; UNKNOWN_TOPIC_OR_PARTITION (the topic was deleted) is
given up, as Kafka does.

Connections are kept per leader and used by one transaction at a time (a lock each); a failed
one is dropped and opened again by the next call.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

from fastkafka import errors
from fastkafka.client.connection import BrokerConnection
from fastkafka.protocol import ApiKey

__all__ = ["RemoteMarkerWriter"]

log = logging.getLogger("fastkafka.coordinator")

_NOT_LEADER = errors.NotLeaderOrFollowerError.code
_UNKNOWN = errors.UnknownTopicOrPartitionError.code
_NETWORK = errors.NetworkException.code


class _Channel:
    __slots__ = ("lock", "conn")

    def __init__(self):
        self.lock = threading.Lock()
        self.conn: BrokerConnection | None = None


class RemoteMarkerWriter:
    """``write_markers`` of a cluster broker's transaction coordinator. ``metadata`` is the
    ZooKeeper metadata cache (partition leaders), ``address(broker_id)`` a broker's
    inter-broker address (or None), ``security`` the inter-broker :class:`ClientSecurity`."""

    def __init__(self, broker_id: int, metadata, address: Callable[[int], tuple[str, int] | None],
                 security=None, timeout_ms: int = 30000):
        self.broker_id, self.metadata, self.address = broker_id, metadata, address
        self.security, self.timeout_ms = security, timeout_ms
        self._channels: dict[int, _Channel] = {}
        self._lock = threading.Lock()

    def __call__(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                 partitions) -> dict[tuple[str, int], int]:
        failed: dict[tuple[str, int], int] = {}
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in sorted(partitions):
            if self.metadata.partition(*tp) is None:
                failed[tp] = _UNKNOWN
                continue
            leader = self.metadata.leader(*tp)
            if leader < 0:
                failed[tp] = _NOT_LEADER
            else:
                by_leader.setdefault(leader, []).append(tp)
        marker = {"producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": commit,
                  "coordinator_epoch": coordinator_epoch}
        # every leader gets its request before any answer is awaited: each answers once its
        # markers replicated, and those waits overlap. Channels are taken in broker id order.
        channels = sorted((leader, self._channel(leader)) for leader in by_leader)
        for _, channel in channels:
            channel.lock.acquire()
        try:
            sent = []
            for leader, channel in channels:
                tps = by_leader[leader]
                if self._send(leader, channel, marker, tps):
                    sent.append((leader, channel, tps))
                else:
                    failed.update(dict.fromkeys(tps, _NETWORK))
            for leader, channel, tps in sent:
                failed.update(self._receive(leader, channel, tps))
        finally:
            for _, channel in channels:
                channel.lock.release()
        return failed

    def _send(self, leader: int, channel: _Channel, marker: dict, tps: list[tuple[str, int]]) -> bool:
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        request = {"markers": [dict(marker, topics=[{"name": t, "partition_indexes": ps}
                                                    for t, ps in by_topic.items()])]}
        try:
            if channel.conn is None:
                addr = self.address(leader)
                if addr is None:
                    raise errors.BrokerNotAvailableError(f"broker {leader} is not registered")
                channel.conn = BrokerConnection(
                    addr[0], addr[1], node_id=leader, client_id=f"broker-{self.broker_id}-txn-markers",
                    request_timeout_ms=self.timeout_ms, security=self.security).connect()
            channel.conn.send(ApiKey.WRITE_TXN_MARKERS, request)
            return True
        except (OSError, errors.KafkaError) as e:
            self._drop(leader, channel, e)
            return False

    def _receive(self, leader: int, channel: _Channel, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        conn = channel.conn
        assert conn is not None, "_send connected it and holds the channel's lock until this answer"
        try:
            answer = conn.receive()
        except (OSError, errors.KafkaError) as e:
            self._drop(leader, channel, e)
            return dict.fromkeys(tps, _NETWORK)
        failed = {}
        for m in answer.markers:
            for t in m.topics:
                for p in t.partitions:
                    if p.error_code:
                        failed[(t.name, p.partition_index)] = p.error_code
        return failed

    @staticmethod
    def _drop(leader: int, channel: _Channel, why: Exception) -> None:
        conn, channel.conn = channel.conn, None
        if conn is not None:
            conn.close()
        log.info("markers to broker %d failed: %s", leader, why)

    def _channel(self, leader: int) -> _Channel:
        with self._lock:
            channel = self._channels.get(leader)
            if channel is None:
                channel = self._channels[leader] = _Channel()
            return channel

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            with channel.lock:
                if channel.conn is not None:
                    channel.conn.close()
                    channel.conn = None
