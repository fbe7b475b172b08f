"""Schemas of the replication APIs: OffsetForLeaderEpoch (KIP-101/KIP-279) and ElectLeaders.

A follower (or a KIP-320 consumer) asks the leader where an epoch of its log ends, and truncates
what it holds beyond that. An operator asks the controller to move leadership back to the
preferred replicas, or to elect out of sync. Notation: see :mod:`fastkafka.protocol.schema`.
"""
from ..schema import declare

OFFSET_FOR_LEADER_EPOCH = declare(23, "OffsetForLeaderEpoch", max_version=4, first_flexible=4, request="""
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

# KIP-183/KIP-460: elect the preferred replica (type 0) or, for a partition without a live
# leader, any live replica (type 1, unclean). Answered by the controller.
ELECT_LEADERS = declare(43, "ElectLeaders", max_version=2, first_flexible=2, request="""
    election_type            int8    v1+
    topic_partitions         []      null
      topic                  string
      partitions             []int32
    timeout_ms               int32   =60000
""", response="""
    throttle_time_ms         int32
    error_code               int16   v1+
    replica_election_results []
      topic                  string
      partition_result       []
        partition_id         int32
        error_code           int16
        error_message        string  null
""")

# KIP-455: move partitions to other replicas (null replicas cancel), and list the moves under way.
ALTER_PARTITION_REASSIGNMENTS = declare(45, "AlterPartitionReassignments", max_version=0, first_flexible=0,
                                        request="""
    timeout_ms               int32   =60000
    topics                   []
      name                   string
      partitions             []
        partition_index      int32
        replicas             []int32 null  =null
""", response="""
    throttle_time_ms         int32
    error_code               int16
    error_message            string  null  =null
    responses                []      <topics
      name                   string  <name
      partitions             []      <partitions
        partition_index      int32   <partition_index
        error_code           int16
        error_message        string  null  =null
""")

LIST_PARTITION_REASSIGNMENTS = declare(46, "ListPartitionReassignments", max_version=0, first_flexible=0,
                                       request="""
    timeout_ms               int32   =60000
    topics                   []      null  =null
      name                   string
      partition_indexes      []int32
""", response="""
    throttle_time_ms         int32
    error_code               int16
    error_message            string  null  =null
    topics                   []
      name                   string
      partitions             []
        partition_index      int32
        replicas             []int32
        adding_replicas      []int32
        removing_replicas    []int32
""")
