"""Membership of a consumer group through the broker's group coordinator.

The wire side of the high-level consumer: FindCoordinator, JoinGroup (retrying with the
member id a v4+ coordinator hands out), the leader's partition assignment (Kafka's ``range``
assignor: per topic, sorted members get contiguous ranges of the sorted partitions),
SyncGroup, Heartbeat, OffsetCommit/OffsetFetch and LeaveGroup.

Subscription and assignment bytes use Kafka's consumer protocol (version 0, declared in
:mod:`fastkafka.protocol.consumer_protocol`), so our members and Java/librdkafka members of the
same group understand each other.

Thread-safe: a lock serialises requests to the coordinator (the connector's thread
heartbeats while the application thread commits).

Example::

    m = GroupMember(cluster, "billing")
    assignment = m.join(["orders"])           # {("orders", 0), ("orders", 1)}
    m.commit({("orders", 0): 42})
    m.heartbeat()                             # False: a rebalance started, join again
    m.leave()
"""
from __future__ import annotations

import threading
from typing import Iterable

from fastkafka import errors
from fastkafka.protocol import ApiKey
from fastkafka.protocol.consumer_protocol import (decode_assignment, decode_subscription,
                                                  encode_assignment, encode_subscription)

from .metadata import Cluster

__all__ = ["GroupMember", "encode_subscription", "decode_subscription", "encode_assignment",
           "decode_assignment", "range_assign"]

_REJOIN_CODES = frozenset(e.code for e in (errors.RebalanceInProgressError,
                                            errors.IllegalGenerationError,
                                            errors.UnknownMemberIdError))


def range_assign(subscriptions: dict[str, list[str]], partitions: dict[str, list[int]]
                 ) -> dict[str, set[tuple[str, int]]]:
    """Kafka's range assignor. ``subscriptions``: member -> topics; ``partitions``: topic -> ids.

    >>> a = range_assign({"m1": ["t"], "m2": ["t"]}, {"t": [0, 1, 2]})
    >>> sorted(a["m1"]), sorted(a["m2"])
    ([('t', 0), ('t', 1)], [('t', 2)])
    """
    out: dict[str, set] = {m: set() for m in subscriptions}
    for topic, parts in partitions.items():
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        if not members:
            continue
        parts = sorted(parts)
        per, extra = divmod(len(parts), len(members))
        pos = 0
        for i, m in enumerate(members):
            n = per + (1 if i < extra else 0)
            out[m].update((topic, p) for p in parts[pos:pos + n])
            pos += n
    return out


class GroupMember:
    """One member of ``group_id``; :meth:`join` returns this member's partitions.

    ``rejoin_needed`` turns True when a commit is refused because the group moved on
    (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID): whoever holds this
    member's partitions must let go of them and :meth:`join` again. :meth:`heartbeat` says
    the same by returning False.
    """

    def __init__(self, cluster: Cluster, group_id: str):
        self.cluster = cluster
        self.group_id = group_id
        c = cluster.config
        self.session_timeout_ms = c["session.timeout.ms"]
        self.rebalance_timeout_ms = c["rebalance.timeout.ms"]
        self.member_id = ""
        self.generation = -1
        self.rejoin_needed = False
        self._conn = None
        self._lock = threading.RLock()

    def _coordinator(self):
        if self._conn is not None and self._conn.connected:
            return self._conn
        conn = self.cluster.any_connection()
        resp = conn.request(ApiKey.FIND_COORDINATOR, {"key": self.group_id, "key_type": 0})
        if resp.error_code:
            raise errors.for_code(resp.error_code)(f"find coordinator of {self.group_id!r}")
        self._conn = self.cluster.connection(resp.node_id)
        return self._conn

    def _request(self, api_key: int, body: dict):
        with self._lock:
            try:
                return self._coordinator().request(api_key, body)
            except errors.KafkaError:
                self._conn = None
                raise

    def _check(self, code: int, what: str) -> None:
        if code:
            err = errors.for_code(code)(f"{what} in group {self.group_id!r}")
            if isinstance(err, (errors.NotCoordinatorError, errors.CoordinatorNotAvailableError)):
                self._conn = None
            raise err

    def join(self, topics: Iterable[str]) -> set[tuple[str, int]]:
        """Join (or rejoin) subscribed to ``topics`` (a ``{topic: streams}`` dict counts by its
        keys: the coordinator's assignment is per member); blocks through the rebalance."""
        with self._lock:
            while True:
                resp = self._request(ApiKey.JOIN_GROUP, {
                    "group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                    "rebalance_timeout_ms": self.rebalance_timeout_ms, "member_id": self.member_id,
                    "group_instance_id": None, "protocol_type": "consumer",
                    "protocols": [{"name": "range", "metadata": encode_subscription(topics)}]})
                if resp.error_code == errors.MemberIdRequiredError.code:
                    self.member_id = resp.member_id      # KIP-394: join again with this id
                    continue
                if resp.error_code == errors.UnknownMemberIdError.code:
                    self.member_id = ""
                    continue
                self._check(resp.error_code, "join")
                self.member_id, self.generation = resp.member_id, resp.generation_id
                assignments = []
                if resp.leader == resp.member_id:
                    subs = {m.member_id: decode_subscription(m.metadata) for m in resp.members}
                    wanted = sorted({t for ts in subs.values() for t in ts})
                    parts = {}
                    for t in wanted:
                        try:
                            parts[t] = self.cluster.partitions_for(t)
                        except errors.KafkaError:
                            continue   # a subscribed topic that does not exist (yet)
                    assignments = [{"member_id": m, "assignment": encode_assignment(a)}
                                   for m, a in range_assign(subs, parts).items()]
                sync = self._request(ApiKey.SYNC_GROUP, {
                    "group_id": self.group_id, "generation_id": self.generation,
                    "member_id": self.member_id, "group_instance_id": None,
                    "assignments": assignments})
                if sync.error_code == errors.RebalanceInProgressError.code:
                    continue
                self._check(sync.error_code, "sync")
                self.rejoin_needed = False
                return decode_assignment(sync.assignment)

    def _moved_on(self, code: int) -> bool:
        """The group has a generation this member is not (or no longer) part of."""
        if code not in _REJOIN_CODES:
            return False
        if code == errors.UnknownMemberIdError.code:
            self.member_id = ""      # expelled: the next join starts as a new member
        self.rejoin_needed = True
        return True

    def heartbeat(self) -> bool:
        """True while the membership holds; False when the member must join again."""
        resp = self._request(ApiKey.HEARTBEAT, {"group_id": self.group_id,
                                                "generation_id": self.generation,
                                                "member_id": self.member_id,
                                                "group_instance_id": None})
        if self._moved_on(resp.error_code):
            return False
        self._check(resp.error_code, "heartbeat")
        return True

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        """Commit ``{(topic, partition): next offset to read}`` for this generation."""
        if not offsets:
            return
        topics: dict[str, list] = {}
        for (t, p), off in offsets.items():
            topics.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                             "committed_metadata": ""})
        resp = self._request(ApiKey.OFFSET_COMMIT, {
            "group_id": self.group_id, "generation_id_or_member_epoch": self.generation,
            "member_id": self.member_id, "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
        for t in resp.topics:
            for p in t.partitions:
                self._moved_on(p.error_code)
                self._check(p.error_code, f"commit {t.name}-{p.partition_index}")

    def committed(self, tps) -> dict[tuple[str, int], int]:
        """The committed offsets of ``tps`` (partitions without one are left out)."""
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        if not by_topic:
            return {}
        resp = self._request(ApiKey.OFFSET_FETCH, {"group_id": self.group_id, "topics": [
            {"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]})
        self._check(getattr(resp, "error_code", 0), "fetch offsets")
        return {(t.name, p.partition_index): p.committed_offset for t in resp.topics
                for p in t.partitions if p.error_code == 0 and p.committed_offset >= 0}

    def leave(self) -> None:
        if not self.member_id:
            return
        try:
            self._request(ApiKey.LEAVE_GROUP, {"group_id": self.group_id, "member_id": self.member_id})
        except errors.KafkaError:
            pass    # the session times out on its own
        self.member_id, self.generation = "", -1
