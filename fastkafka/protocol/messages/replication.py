"""Schemas of the APIs between replicas: OffsetForLeaderEpoch (KIP-101/KIP-279).

A follower (or a KIP-320 consumer) asks the leader where an epoch of its log ends, and truncates
what it holds beyond that. Notation: see :mod:`fastkafka.protocol.schema`.
"""
from ..schema import declare

OFFSET_FOR_LEADER_EPOCH = declare(23, "OffsetForLeaderEpoch", max_version=3, first_flexible=4, request="""
    replica_id               int32   v3+  =-2
    topics                   []
      topic                  string
      partitions             []
        partition            int32
        current_leader_epoch int32   v2+  =-1
        leader_epoch         int32
""", response="""
    throttle_time_ms         int32   v2+
    topics                   []      <topics
      topic                  string  <topic
      partitions             []      <partitions
        error_code           int16
        partition            int32   <partition
        leader_epoch         int32   v1+  =-1
        end_offset           int64   =-1
""")
