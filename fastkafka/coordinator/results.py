"""What the GroupCoordinator answers with: plain tuples the request handlers turn into responses."""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["JoinResult", "SyncResult", "MemberSummary", "GroupSummary"]


class JoinResult(NamedTuple):
    error: int
    generation_id: int = -1
    protocol_name: str = ""
    leader_id: str = ""
    member_id: str = ""
    members: list = []         # (member_id, group_instance_id, metadata); the leader's only
    protocol_type: str | None = None   # the group's (JoinGroup v7+); None with an error


class SyncResult(NamedTuple):
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None   # the group's (SyncGroup v5+); None with an error
    protocol_name: str | None = None


class MemberSummary(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


class GroupSummary(NamedTuple):
    error: int
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list
