"""Schemas of the cluster-administration APIs Kafka 3.x admin clients call beyond topics:
DescribeCluster, DescribeLogDirs, DescribeProducers, OffsetDelete and the ACL APIs.

Notation: see :mod:`fastkafka.protocol.schema`. DescribeCluster is flexible from v0; DescribeLogDirs
from v2.
"""
import textwrap

from ..schema import declare

DESCRIBE_CLUSTER = declare(60, "DescribeCluster", max_version=1, first_flexible=0, request="""
    include_cluster_authorized_operations bool
    endpoint_type            int8    v1+  =1
""", response="""
    throttle_time_ms         int32
    error_code               int16
    error_message            string  null  =null
    endpoint_type            int8    v1+  =1
    cluster_id               string  =""
    controller_id            int32   =-1
    brokers                  []
      broker_id              int32
      host                   string
      port                   int32
      rack                   string  null  =null
    cluster_authorized_operations int32 =-2147483648
""")

DESCRIBE_LOG_DIRS = declare(35, "DescribeLogDirs", max_version=4, first_flexible=2, request="""
    topics                   []      null
      topic                  string
      partitions             []int32
""", response="""
    throttle_time_ms         int32
    error_code               int16   v3+
    results                  []
      error_code             int16
      log_dir                string
      topics                 []
        name                 string
        partitions           []
          partition_index    int32
          partition_size     int64
          offset_lag         int64
          is_future_key      bool
      total_bytes            int64   v4+  =-1
      usable_bytes           int64   v4+  =-1
""")

DESCRIBE_PRODUCERS = declare(61, "DescribeProducers", max_version=0, first_flexible=0, request="""
    topics                   []
      name                   string
      partition_indexes      []int32
""", response="""
    throttle_time_ms         int32
    topics                   []      <topics
      name                   string  <name
      partitions             []      <partition_indexes
        partition_index      int32   <.
        error_code           int16
        error_message        string  null  =null
        active_producers     []
          producer_id        int64
          producer_epoch     int32
          last_sequence      int32   =-1
          last_timestamp     int64   =-1
          coordinator_epoch  int32   =-1
          current_txn_start_offset int64 =-1
""")

OFFSET_DELETE = declare(47, "OffsetDelete", max_version=0, request="""
    group_id                 string
    topics                   []
      name                   string
      partitions             []
        partition_index      int32
""", response="""
    error_code               int16
    throttle_time_ms         int32
    topics                   []      <topics
      name                   string  <name
      partitions             []      <partitions
        partition_index      int32   <partition_index
        error_code           int16
""")

# The ACL APIs are declared so that admin clients get Kafka's answer for a broker without an
# authorizer (SECURITY_DISABLED) rather than a closed connection.
# An ACL filter: DescribeAcls' request is one, DeleteAcls' request a list of them.
_ACL_FILTER = """
    resource_type_filter     int8
    resource_name_filter     string  null
    pattern_type_filter      int8    v1+  =3
    principal_filter         string  null
    host_filter              string  null
    operation                int8
    permission_type          int8
"""

DESCRIBE_ACLS = declare(29, "DescribeAcls", max_version=3, first_flexible=2, request=_ACL_FILTER,
                        response="""
    throttle_time_ms         int32
    error_code               int16
    error_message            string  null  =null
    resources                []
      resource_type          int8
      resource_name          string
      pattern_type           int8    v1+  =3
      acls                   []
        principal            string
        host                 string
        operation            int8
        permission_type      int8
""")

CREATE_ACLS = declare(30, "CreateAcls", max_version=3, first_flexible=2, request="""
    creations                []
      resource_type          int8
      resource_name          string
      resource_pattern_type  int8    v1+  =3
      principal              string
      host                   string
      operation              int8
      permission_type        int8
""", response="""
    throttle_time_ms         int32
    results                  []      <creations
      error_code             int16
      error_message          string  null  =null
""")

DELETE_ACLS = declare(31, "DeleteAcls", max_version=3, first_flexible=2, request="""
    filters                  []
""" + textwrap.indent(textwrap.dedent(_ACL_FILTER), " " * 6), response="""
    throttle_time_ms         int32
    filter_results           []      <filters
      error_code             int16
      error_message          string  null  =null
      matching_acls          []
        error_code           int16
        error_message        string  null  =null
        resource_type        int8
        resource_name        string
        pattern_type         int8    v1+  =3
        principal            string
        host                 string
        operation            int8
        permission_type      int8
""")
