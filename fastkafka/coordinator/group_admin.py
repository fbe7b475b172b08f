"""The group coordinator's administrative requests: ListGroups, DescribeGroups, DeleteGroups and
OffsetDelete. A mixin of :class:`~fastkafka.coordinator.coordinator.GroupCoordinator`, split off
to keep that file to the membership protocol; it runs under the coordinator's lock
(``_locked``) and sees groups through ``_group``, which applies due expirations first.
"""
from __future__ import annotations

from .. import errors
from .group import CONSUMER_PROTOCOL_TYPE, DEAD, EMPTY, STABLE
from .group_conversion import classic_assignment
from .parts import CoordinatorParts
from .results import GroupSummary, MemberSummary

__all__ = ["GroupAdmin"]

NONE = 0
E = errors


class GroupAdmin(CoordinatorParts):
    """ListGroups, DescribeGroups, DeleteGroups, OffsetDelete (see the module docstring)."""

    def list_groups(self) -> tuple[int, list[tuple[str, str]]]:
        """ListGroups v0-v3: an error and ``(group_id, protocol_type)`` of every group here."""
        code, overviews = self.group_overviews()
        return code, [(g, t) for g, t, _ in overviews]

    def group_overviews(self, states=()) -> tuple[int, list[tuple[str, str, str]]]:
        """ListGroups v4+: ``(group_id, protocol_type, state)`` of the groups in one of
        ``states`` (matched ignoring case, as Kafka does; empty: every group)."""
        wanted = {s.lower() for s in states}
        with self._lock:
            if not self.active:
                return E.CoordinatorNotAvailableError.code, []
            codes = [self._partition_code(p) for p in range(self.manager.num_partitions)]
            if E.CoordinatorLoadInProgressError.code in codes:
                return E.CoordinatorLoadInProgressError.code, []
            owned = {p for p, code in enumerate(codes) if code == NONE}
            classic = [(g.group_id, g.protocol_type or "", g.state) for g in self.manager.groups.values()
                       if not g.is_(DEAD) and g.group_id not in self.consumer_groups]
            # KIP-848 groups list with the consumer protocol type (ListGroups v5 types them)
            consumer = [(g.group_id, CONSUMER_PROTOCOL_TYPE, g.state) for g in self.consumer_groups.values()]
            return NONE, [(gid, t, state) for gid, t, state in classic + consumer
                          if self.manager.partition_for(gid) in owned
                          and (not wanted or state.lower() in wanted)]

    def group_type(self, group_id: str) -> str:
        """``consumer`` for a KIP-848 group, else ``classic`` (ListGroups v5's GroupType)."""
        return "consumer" if group_id in self.consumer_groups else "classic"

    def describe_group(self, group_id: str) -> GroupSummary:
        return self._locked(self._describe, group_id)

    def _describe(self, group_id):
        code = self._check_available(group_id)
        consumer_group = None if code else self.consumer_groups.get(group_id)
        if consumer_group is not None:
            # a KIP-848 group in DescribeGroups' terms: a member speaking the classic protocol
            # with its subscription and assignment as it gets them, the others without
            names = self._topic_names(consumer_group)
            members = [MemberSummary(m.member_id, m.instance_id, m.client_id, m.client_host, b"", b"")
                       if m.classic is None else
                       MemberSummary(m.member_id, m.instance_id, m.client_id, m.client_host, m.classic.protocols[0][1],
                                     classic_assignment(m.assigned, m.classic.protocols[0][1], names))
                       for m in consumer_group.members.values()]
            return GroupSummary(NONE, group_id, consumer_group.state, CONSUMER_PROTOCOL_TYPE,
                                consumer_group.assignor_name, members)
        group = self._group(group_id)
        if code or group is None:
            return GroupSummary(code, group_id, DEAD, "", "", [])
        stable = group.is_(STABLE)
        members = [MemberSummary(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 m.metadata(group.protocol_name) if stable else b"",
                                 m.assignment if stable else b"")
                   for m in group.members.values()]
        return GroupSummary(NONE, group_id, group.state, group.protocol_type or "",
                            (group.protocol_name or "") if stable else "", members)

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                       ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete: a group error, and an error per partition (Kafka's rules: a consumer
        group keeps the offsets of topics its members subscribe to, GROUP_SUBSCRIBED_TO_TOPIC;
        another group only loses offsets while it has no members, else NON_EMPTY_GROUP)."""
        return self._locked(self._delete_offsets, group_id, partitions)

    def _delete_offsets(self, group_id, partitions):
        code = self._check_available(group_id) if group_id else E.InvalidGroupIdError.code
        if code:
            return code, {}
        group = self._group(group_id)
        if group is None or group.is_(DEAD):
            return E.GroupIdNotFoundError.code, {}
        if group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscribed = group.subscribed_topics()
        elif not group.members:
            subscribed = set()
        else:
            return E.NonEmptyGroupError.code, {}
        result = {tp: E.GroupSubscribedToTopicError.code if subscribed is None or tp[0] in subscribed
                  else NONE for tp in partitions}
        self.manager.delete_offsets(group, [tp for tp, c in result.items() if c == NONE])
        return NONE, result

    def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        return self._locked(self._delete, group_ids)

    def _delete(self, group_ids):
        result = {}
        for gid in group_ids:
            code = self._check_available(gid) if gid else E.InvalidGroupIdError.code
            group = self._group(gid)
            consumer_group = None if code else self.consumer_groups.get(gid)
            if consumer_group is not None:
                if consumer_group.members:
                    result[gid] = E.NonEmptyGroupError.code
                    continue
                self._drop_consumer_group(gid)
                if group is None or group.is_(DEAD):    # no offsets committed: nothing more to delete
                    result[gid] = NONE
                    continue
            if code:
                result[gid] = code
            elif group is None or group.is_(DEAD):
                result[gid] = E.GroupIdNotFoundError.code
            elif not group.is_(EMPTY):
                result[gid] = E.NonEmptyGroupError.code
            else:
                try:
                    self.manager.delete_group(group)
                    result[gid] = NONE
                except errors.KafkaError as e:
                    result[gid] = e.code
        return result
