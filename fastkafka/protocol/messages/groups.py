"""Schemas of the group APIs: offsets, coordinator lookup, membership, groups.

Notation: see :mod:`fastkafka.protocol.schema`.
"""
from ..schema import declare

OFFSET_COMMIT = declare(8, "OffsetCommit", max_version=9, first_flexible=8, request="""
    group_id                 string
    generation_id_or_member_epoch int32 v1+ =-1
    member_id                string  v1+
    group_instance_id        string  v7+  null  =null
    retention_time_ms        int64   v2-4 =-1
    topics                   []
      name                   string
      partitions             []
        partition_index      int32
        committed_offset     int64
        committed_leader_epoch int32 v6+  =-1
        commit_timestamp     int64   v1   =-1
        committed_metadata   string  null
""", response="""
    throttle_time_ms         int32   v3+
    topics                   []      <topics
      name                   string  <name
      partitions             []      <partitions
        partition_index      int32   <partition_index
        error_code           int16
""")

OFFSET_FETCH = declare(9, "OffsetFetch", max_version=9, first_flexible=6, request="""
    group_id                 string  v0-7
    topics                   []      v0-7 null2-7
      name                   string
      partition_indexes      []int32
    groups                   []      v8+
      group_id               string
      member_id              string  v9+  null  =null
      member_epoch           int32   v9+  =-1
      topics                 []      null
        name                 string
        partition_indexes    []int32
    require_stable           bool    v7+  =false
""", response="""
    throttle_time_ms         int32   v3+
    topics                   []      v0-7 <topics
      name                   string  <name
      partitions             []      <partition_indexes
        partition_index      int32   <.
        committed_offset     int64   =-1
        committed_leader_epoch int32 v5+  =-1
        metadata             string  null
        error_code           int16
    error_code               int16   v2-7
    groups                   []      v8+  <groups
      group_id               string  <group_id
      topics                 []
        name                 string
        partitions           []
          partition_index    int32
          committed_offset   int64   =-1
          committed_leader_epoch int32 =-1
          metadata           string  null
          error_code         int16
      error_code             int16
""")

FIND_COORDINATOR = declare(10, "FindCoordinator", max_version=5, first_flexible=3, request="""
    key                      string  v0-3
    key_type                 int8    v1+
    coordinator_keys         []string v4+
""", response="""
    throttle_time_ms         int32   v1+
    error_code               int16   v0-3
    error_message            string  v1-3 null  =null
    node_id                  int32   v0-3 =-1
    host                     string  v0-3
    port                     int32   v0-3 =-1
    coordinators             []      v4+  <coordinator_keys
      key                    string  <.
      node_id                int32   =-1
      host                   string
      port                   int32   =-1
      error_code             int16
      error_message          string  null  =null
""")

JOIN_GROUP = declare(11, "JoinGroup", max_version=9, first_flexible=6, request="""
    group_id                 string
    session_timeout_ms       int32
    rebalance_timeout_ms     int32   v1+  =-1
    member_id                string
    group_instance_id        string  v5+  null  =null
    protocol_type            string
    protocols                []
      name                   string
      metadata               bytes
    reason                   string  v8+  null  =null
""", response="""
    throttle_time_ms         int32   v2+
    error_code               int16
    generation_id            int32   =-1
    protocol_type            string  v7+  null  =null
    protocol_name            string  null7+
    leader                   string
    skip_assignment          bool    v9+  =false
    member_id                string
    members                  []
      member_id              string
      group_instance_id      string  v5+  null  =null
      metadata               bytes
""")

SYNC_GROUP = declare(14, "SyncGroup", max_version=5, first_flexible=4, request="""
    group_id                 string
    generation_id            int32
    member_id                string
    group_instance_id        string  v3+  null  =null
    protocol_type            string  v5+  null  =null
    protocol_name            string  v5+  null  =null
    assignments              []
      member_id              string
      assignment             bytes
""", response="""
    throttle_time_ms         int32   v1+
    error_code               int16
    protocol_type            string  v5+  null  =null
    protocol_name            string  v5+  null  =null
    assignment               bytes
""")

HEARTBEAT = declare(12, "Heartbeat", max_version=4, first_flexible=4, request="""
    group_id                 string
    generation_id            int32
    member_id                string
    group_instance_id        string  v3+  null  =null
""", response="""
    throttle_time_ms         int32   v1+
    error_code               int16
""")

LEAVE_GROUP = declare(13, "LeaveGroup", max_version=5, first_flexible=4, request="""
    group_id                 string
    member_id                string  v0-2
    members                  []      v3+
      member_id              string
      group_instance_id      string  null  =null
      reason                 string  v5+  null  =null
""", response="""
    throttle_time_ms         int32   v1+
    error_code               int16
    members                  []      v3+
      member_id              string
      group_instance_id      string  null  =null
      error_code             int16
""")

LIST_GROUPS = declare(16, "ListGroups", max_version=5, first_flexible=3, request="""
    states_filter            []string v4+
    types_filter             []string v5+
""", response="""
    throttle_time_ms         int32   v1+
    error_code               int16
    groups                   []
      group_id               string
      protocol_type          string
      group_state            string  v4+
      group_type             string  v5+  ="classic"
""")

DESCRIBE_GROUPS = declare(15, "DescribeGroups", max_version=5, first_flexible=5, request="""
    groups                   []string
    include_authorized_operations bool v3+
""", response="""
    throttle_time_ms         int32   v1+
    groups                   []      <groups
      error_code             int16
      group_id               string  <.
      group_state            string
      protocol_type          string
      protocol_data          string
      members                []
        member_id            string
        group_instance_id    string  v4+  null  =null
        client_id            string
        client_host          string
        member_metadata      bytes
        member_assignment    bytes
      authorized_operations  int32   v3+  =-2147483648
""")

DELETE_GROUPS = declare(42, "DeleteGroups", max_version=2, first_flexible=2, request="""
    groups_names             []string
""", response="""
    throttle_time_ms         int32
    results                  []      <groups_names
      group_id               string  <.
      error_code             int16
""")

# KIP-848. v1 adds the regex subscription (refused until supported, as Kafka does).
CONSUMER_GROUP_HEARTBEAT = declare(68, "ConsumerGroupHeartbeat", max_version=1, first_flexible=0, request="""
    group_id                 string
    member_id                string
    member_epoch             int32
    instance_id              string  null  =null
    rack_id                  string  null  =null
    rebalance_timeout_ms     int32   =-1
    subscribed_topic_names   []string null =null
    subscribed_topic_regex   string  v1+  null  =null
    server_assignor          string  null  =null
    topic_partitions         []      null  =null
      topic_id               uuid
      partitions             []int32
""", response="""
    throttle_time_ms         int32
    error_code               int16
    error_message            string  null  =null
    member_id                string  null  =null
    member_epoch             int32   =-1
    heartbeat_interval_ms    int32
    assignment               {}      null  =null
      topic_partitions       []
        topic_id             uuid
        partitions           []int32
""")

CONSUMER_GROUP_DESCRIBE = declare(69, "ConsumerGroupDescribe", max_version=0, first_flexible=0, request="""
    group_ids                []string
    include_authorized_operations bool
""", response="""
    throttle_time_ms         int32
    groups                   []      <group_ids
      error_code             int16
      error_message          string  null  =null
      group_id               string  <.
      group_state            string
      group_epoch            int32
      assignment_epoch       int32
      assignor_name          string
      members                []
        member_id            string
        instance_id          string  null  =null
        rack_id              string  null  =null
        member_epoch         int32
        client_id            string
        client_host          string
        subscribed_topic_names []string
        subscribed_topic_regex string null  =null
        assignment           {}
          topic_partitions   []
            topic_id         uuid
            topic_name       string
            partitions       []int32
        target_assignment    {}
          topic_partitions   []
            topic_id         uuid
            topic_name       string
            partitions       []int32
      authorized_operations  int32   =-2147483648
""")
