"""The transaction questions of :class:`~fastkafka.client.admin.AdminClient` (KIP-664: what
kafka-transactions.sh asks): ListTransactions of every broker, DescribeTransactions at an id's
coordinator, DescribeProducers at a partition's leader (or a chosen replica), and an ABORT
marker written to a partition for a hanging transaction.

``TransactionAdmin`` is a part of ``AdminClient`` (which supplies ``cluster``, ``config`` and
``describe_topics``); each method's docstring shows its use.
"""
from __future__ import annotations

from fastkafka import errors
from fastkafka.protocol import ApiKey

from .metadata import retry_call

__all__ = ["TransactionAdmin"]


class TransactionAdmin:
    """ListTransactions, DescribeTransactions, DescribeProducers and aborting a transaction."""

    def _by_leader(self, partitions) -> dict[int, dict[str, list[int]]]:
        """``{leader: {topic: [partition]}}`` from fresh metadata that never creates a topic
        (a missing partition or leader raises a retriable error: the caller's retry looks again)."""
        info = self.describe_topics(sorted({t for t, _ in partitions}))
        out: dict[int, dict[str, list[int]]] = {}
        for t, p in partitions:
            part = info[t].partitions.get(p)
            if part is None:
                raise errors.UnknownTopicOrPartitionError(f"{t}-{p} does not exist")
            if part.leader < 0:
                raise errors.LeaderNotAvailableError(f"{t}-{p} has no leader")
            out.setdefault(part.leader, {}).setdefault(t, []).append(p)
        return out

    def transaction_coordinator(self, transactional_id: str):
        """The connection to ``transactional_id``'s coordinator (FindCoordinator key type 1),
        retried while there is none yet (in cluster mode the first such question creates
        ``__transaction_state``, whose leaders then load it)."""
        def once():
            conn = self.cluster.any_connection()
            resp = conn.request(ApiKey.FIND_COORDINATOR, {"key": transactional_id, "key_type": 1},
                                conn.version(ApiKey.FIND_COORDINATOR, 1))
            errors.raise_for(resp.error_code, f"find the coordinator of {transactional_id!r}", resp.error_message)
            return self.cluster.connection(resp.node_id)
        return retry_call(once, self.config)

    def list_transactions(self, states=(), producer_ids=(), duration_ms: int = -1
                          ) -> dict[int, list[tuple[str, int, str]]]:
        """``{broker id: [(transactional_id, producer_id, state)]}``, asked of every broker (each
        coordinates the ids of the ``__transaction_state`` partitions it leads), as Kafka's admin
        client does. Empty filters select all; ``duration_ms`` >= 0 keeps the transactions open
        that long (ListTransactions v1). Only ids the client may DESCRIBE are listed.

        Example::

            admin.list_transactions(states=["Ongoing"])   # {0: [('billing-1', 1000, 'Ongoing')]}
        """
        body = {"state_filters": list(states), "producer_id_filters": list(producer_ids),
                "duration_filter": duration_ms}
        self.cluster.refresh([])
        out = {}
        for node in sorted(self.cluster.brokers):
            def once(node=node):
                conn = self.cluster.connection(node)
                resp = conn.request(ApiKey.LIST_TRANSACTIONS, body,
                                    conn.version(ApiKey.LIST_TRANSACTIONS, 1 if duration_ms >= 0 else 0))
                errors.raise_for(resp.error_code, f"list transactions at broker {node}")
                return [(t.transactional_id, t.producer_id, t.transaction_state) for t in resp.transaction_states]
            out[node] = retry_call(once, self.config)      # a coordinator still loading answers soon
        return out

    def describe_transactions(self, transactional_ids) -> dict[str, dict]:
        """Each id's transaction at its coordinator (DescribeTransactions): ``{id: {"coordinator_id",
        "transactional_id", "state", "producer_id", "producer_epoch", "transaction_timeout_ms",
        "transaction_start_time_ms" (-1: none), "partitions": [(topic, partition)] (those still
        awaiting its marker)}}``. An unknown id raises TransactionalIdNotFoundError.

        Example::

            admin.describe_transactions(["billing-1"])["billing-1"]["state"]    # 'Ongoing'
        """
        out = {}
        for tid in dict.fromkeys(transactional_ids):
            def once(tid=tid):      # again from FindCoordinator: NOT_COORDINATOR means the id moved
                conn = self.transaction_coordinator(tid)
                s = conn.request(ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": [tid]}).transaction_states[0]
                errors.raise_for(s.error_code, f"describe the transaction of {tid!r}")
                return {"coordinator_id": conn.node_id, "transactional_id": tid, "state": s.transaction_state,
                        "producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
                        "transaction_timeout_ms": s.transaction_timeout_ms,
                        "transaction_start_time_ms": s.transaction_start_time_ms,
                        "partitions": sorted((t.topic, p) for t in s.topics for p in t.partitions)}
            out[tid] = retry_call(once, self.config)
        return out

    def describe_producers(self, partitions, broker_id: int | None = None) -> dict[tuple[str, int], list]:
        """``{(topic, partition): [producer]}`` from each partition's leader, or from replica
        ``broker_id`` (DescribeProducers). A producer has ``producer_id``, ``producer_epoch``,
        ``last_sequence``, ``last_timestamp``, ``coordinator_epoch`` (-1: no marker yet) and
        ``current_txn_start_offset`` (its open transaction's first offset, -1: none).

        Example::

            [p.current_txn_start_offset for p in admin.describe_producers([("orders", 0)])[("orders", 0)]]
        """
        wanted = list(dict.fromkeys(partitions))

        def once():
            if broker_id is None:
                by_node = self._by_leader(wanted)
            else:       # that one replica answers for all of them, follower or not
                by_node = {broker_id: {}}
                for t, p in wanted:
                    by_node[broker_id].setdefault(t, []).append(p)
            out = {}
            for node, topics in by_node.items():
                resp = self.cluster.connection(node).request(ApiKey.DESCRIBE_PRODUCERS, {"topics": [
                    {"name": t, "partition_indexes": ps} for t, ps in topics.items()]})
                for answer in resp.topics:
                    for p in answer.partitions:
                        if p.error_code:
                            self.cluster.invalidate()       # a leader moved: fresh metadata on retry
                        errors.raise_for(p.error_code, f"describe producers of {answer.name}-{p.partition_index} "
                                         f"at broker {node}", p.error_message)
                        out[answer.name, p.partition_index] = list(p.active_producers)
            return out
        # a replica the caller chose is the only one to ask: no retry finds another (Kafka's rule)
        return once() if broker_id is not None else retry_call(once, self.config)

    def abort_transaction(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                          coordinator_epoch: int) -> None:
        """Write an ABORT marker for ``producer_id``'s open transaction on one partition at its
        leader (WriteTxnMarkers, as a coordinator would): how kafka-transactions.sh ends a hanging
        transaction, one its coordinator no longer knows. Needs CLUSTER_ACTION on the cluster.

        Example::

            p = admin.describe_producers([("orders", 0)])[("orders", 0)][0]
            admin.abort_transaction("orders", 0, p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0))
        """
        def once():
            node = next(iter(self._by_leader([(topic, partition)])))
            resp = self.cluster.connection(node).request(ApiKey.WRITE_TXN_MARKERS, {"markers": [{
                "producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": False,
                "topics": [{"name": topic, "partition_indexes": [partition]}],
                "coordinator_epoch": coordinator_epoch}]})
            code = resp.markers[0].topics[0].partitions[0].error_code
            if code:
                self.cluster.invalidate()
            errors.raise_for(code, f"abort the transaction of producer {producer_id} on {topic}-{partition}")
        retry_call(once, self.config)
