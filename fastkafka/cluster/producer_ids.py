"""Cluster mode's producer-id block store: Kafka's ``/latest_producer_id_block`` znode.

Every broker reserves its next block of ids right after the last block any broker reserved:
read the znode and its version, write the following block with a set conditional on that
version, and start over if another broker wrote in between (BadVersion) — so blocks never
overlap, across brokers and restarts. The first broker creates the znode (a lost create race
is retried the same way). A retried write whose first attempt did land only wastes a block.

ZooKeeper trouble is a retriable COORDINATOR_NOT_AVAILABLE for the InitProducerId caller.

Example (``zk_connect``: a ZooKeeper's ``host:port``, e.g. ``"127.0.0.1:2181"``)::

    >>> from fastkafka.config import KafkaConfig
    >>> from fastkafka.cluster.session import connect
    >>> from fastkafka.coordinator.producer_ids import ProducerIdManager
    >>> client = connect(KafkaConfig({"zookeeper.connect": f"{zk_connect}/doc-producer-ids"}))
    >>> broker1 = ProducerIdManager(ZkBlockStore(client, broker_id=1), block_size=1000)
    >>> broker2 = ProducerIdManager(ZkBlockStore(client, broker_id=2), block_size=1000)
    >>> broker1.next_id(), broker2.next_id(), broker1.next_id()
    (0, 1000, 1)
    >>> ProducerIdManager(ZkBlockStore(client, broker_id=1), block_size=1000).next_id()   # restarted
    2000
    >>> client.stop(); client.close()
"""
from __future__ import annotations

import logging

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from fastkafka import errors

from . import znodes

__all__ = ["ZkBlockStore"]

log = logging.getLogger("fastkafka.cluster")

_MAX_PRODUCER_ID = (1 << 63) - 1


class ZkBlockStore:
    """Reserves producer-id blocks in ``/latest_producer_id_block`` for ``broker_id`` (thread-safe)."""

    def __init__(self, client, broker_id: int):
        self.client = client
        self.broker_id = broker_id

    def reserve(self, block_size: int) -> int:
        """The first id of a block of ``block_size`` ids no other reservation shares."""
        try:
            while True:
                block = self._try_reserve(block_size)
                if block is not None:
                    log.info("broker %d reserved producer ids %d-%d", self.broker_id,
                             block.block_start, block.block_end)
                    return block.block_start
        except KazooException as e:
            raise errors.CoordinatorNotAvailableError(f"ZooKeeper: {type(e).__name__}") from None
        except znodes.ZnodeDataError as e:
            raise errors.KafkaStorageError(f"{e}; refusing to reuse producer ids") from None

    def _try_reserve(self, block_size: int) -> znodes.ProducerIdBlock | None:
        """One read-then-conditional-write round; None when another writer got there first."""
        path = znodes.LATEST_PRODUCER_ID_BLOCK
        try:
            data, stat = self.client.retry(self.client.get, path)
        except NoNodeError:
            data, stat = None, None
        # an unreadable block is never guessed past (ZnodeDataError): reusing ids could merge two producers
        start = 0 if stat is None else znodes.ProducerIdBlock.decode(data).block_end + 1
        end = start + block_size - 1
        if end > _MAX_PRODUCER_ID:
            raise errors.KafkaStorageError("producer ids exhausted")
        block = znodes.ProducerIdBlock(self.broker_id, start, end)
        try:
            if stat is None:
                self.client.retry(self.client.create, path, block.encode())
            else:
                self.client.retry(self.client.set, path, block.encode(), version=stat.version)
        except (BadVersionError, NodeExistsError):
            return None
        return block
