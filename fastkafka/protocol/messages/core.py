"""Schemas of the data-path APIs: ApiVersions, Produce, Fetch, ListOffsets, Metadata.

Notation: see :mod:`fastkafka.protocol.schema`. Versions are declared up to the highest we
implement; ``first_flexible`` is Kafka's threshold even when it lies beyond that.
"""
from ..schema import declare

API_VERSIONS = declare(18, "ApiVersions", max_version=3, first_flexible=3, request="""
    client_software_name     string  v3+
    client_software_version  string  v3+
""", response="""
    error_code               int16
    api_keys                 []
      api_key                int16
      min_version            int16
      max_version            int16
    throttle_time_ms         int32   v1+
    supported_features       []      v3+  tag=0
      name                   string
      min_version            int16
      max_version            int16
    finalized_features_epoch int64   v3+  tag=1  =-1
    finalized_features       []      v3+  tag=2
      name                   string
      max_version_level      int16
      min_version_level      int16
    zk_migration_ready       bool    v3+  tag=3
""")

PRODUCE = declare(0, "Produce", max_version=10, first_flexible=9, request="""
    transactional_id         string  v3+  null  =null
    acks                     int16
    timeout_ms               int32
    topic_data               []
      name                   string
      partition_data         []
        index                int32
        records              records null
""", response="""
    responses                []      <topic_data
      name                   string  <name
      partition_responses    []      <partition_data
        index                int32   <index
        error_code           int16
        base_offset          int64   =-1
        log_append_time_ms   int64   v2+  =-1
        log_start_offset     int64   v5+  =-1
        record_errors        []      v8+
          batch_index        int32
          batch_index_error_message string null =null
        error_message        string  v8+  null  =null
        current_leader       {}      v10+ tag=0  =null
          leader_id          int32   =-1
          leader_epoch       int32   =-1
    throttle_time_ms         int32   v1+
    node_endpoints           []      v10+  tag=0
      node_id                int32
      host                   string
      port                   int32
      rack                   string  null  =null
""")

FETCH = declare(1, "Fetch", max_version=16, first_flexible=12, request="""
    cluster_id               string  v12+  null  tag=0  =null
    replica_id               int32   v0-14  =-1
    replica_state            {}      v15+  tag=1  =null
      replica_id             int32   =-1
      replica_epoch          int64   =-1
    max_wait_ms              int32
    min_bytes                int32
    max_bytes                int32   v3+  =0x7fffffff
    isolation_level          int8    v4+
    session_id               int32   v7+
    session_epoch            int32   v7+  =-1
    topics                   []
      topic                  string  v0-12
      topic_id               uuid    v13+
      partitions             []
        partition            int32
        current_leader_epoch int32   v9+  =-1
        fetch_offset         int64
        last_fetched_epoch   int32   v12+ =-1
        log_start_offset     int64   v5+  =-1
        partition_max_bytes  int32
    forgotten_topics_data    []      v7+
      topic                  string  v7-12
      topic_id               uuid    v13+
      partitions             []int32
    rack_id                  string  v11+
""", response="""
    throttle_time_ms         int32   v1+
    error_code               int16   v7+
    session_id               int32   v7+
    responses                []      <topics
      topic                  string  v0-12  <topic
      topic_id               uuid    v13+  <topic_id
      partitions             []      <partitions
        partition_index      int32   <partition
        error_code           int16
        high_watermark       int64   =-1
        last_stable_offset   int64   v4+  =-1
        log_start_offset     int64   v5+  =-1
        diverging_epoch      {}      v12+ tag=0  =null
          epoch              int32   =-1
          end_offset         int64   =-1
        current_leader       {}      v12+ tag=1  =null
          leader_id          int32   =-1
          leader_epoch       int32   =-1
        snapshot_id          {}      v12+ tag=2  =null
          end_offset         int64   =-1
          epoch              int32   =-1
        aborted_transactions []      v4+  null
          producer_id        int64
          first_offset       int64
        preferred_read_replica int32 v11+ =-1
        records              records null
    node_endpoints           []      v16+  tag=0
      node_id                int32
      host                   string
      port                   int32
      rack                   string  null  =null
""")



def fetch_replica_id(version: int, req) -> int:
    """A Fetch's follower broker id, -1 for a consumer: v15 moved it into the tagged
    ``replica_state`` (KIP-903)."""
    if version < 15:
        return req.replica_id
    return req.replica_state.replica_id if req.replica_state is not None else -1


LIST_OFFSETS = declare(2, "ListOffsets", max_version=9, first_flexible=6, request="""
    replica_id               int32   =-1
    isolation_level          int8    v2+
    topics                   []
      name                   string
      partitions             []
        partition_index      int32
        current_leader_epoch int32   v4+  =-1
        timestamp            int64
        max_num_offsets      int32   v0   =1
""", response="""
    throttle_time_ms         int32   v2+
    topics                   []      <topics
      name                   string  <name
      partitions             []      <partitions
        partition_index      int32   <partition_index
        error_code           int16
        old_style_offsets    []int64 v0
        timestamp            int64   v1+  =-1
        offset               int64   v1+  =-1
        leader_epoch         int32   v4+  =-1
""")

METADATA = declare(3, "Metadata", max_version=12, first_flexible=9, request="""
    topics                   []      null1+
      topic_id               uuid    v10+
      name                   string  null10+
    allow_auto_topic_creation bool   v4+  =true
    include_cluster_authorized_operations bool v8-10
    include_topic_authorized_operations   bool v8+
""", response="""
    throttle_time_ms         int32   v3+
    brokers                  []
      node_id                int32
      host                   string
      port                   int32
      rack                   string  v1+  null  =null
    cluster_id               string  v2+  null  =null
    controller_id            int32   v1+  =-1
    topics                   []      <topics
      error_code             int16
      name                   string  <name  null12+
      topic_id               uuid    v10+ <topic_id
      is_internal            bool    v1+
      partitions             []
        error_code           int16
        partition_index      int32
        leader_id            int32   =-1
        leader_epoch         int32   v7+  =-1
        replica_nodes        []int32
        isr_nodes            []int32
        offline_replicas     []int32 v5+
      topic_authorized_operations int32 v8+ =-2147483648
    cluster_authorized_operations int32 v8-10 =-2147483648
""")
