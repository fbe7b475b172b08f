"""Schemas of the topic-administration APIs: create/delete topics, partitions, records, configs.

Notation: see :mod:`fastkafka.protocol.schema`.
"""
from ..schema import declare

CREATE_TOPICS = declare(19, "CreateTopics", max_version=7, first_flexible=5, request="""
    topics                   []
      name                   string
      num_partitions         int32
      replication_factor     int16
      assignments            []
        partition_index      int32
        broker_ids           []int32
      configs                []
        name                 string
        value                string  null
    timeout_ms               int32   =60000
    validate_only            bool    v1+
""", response="""
    throttle_time_ms         int32   v2+
    topics                   []      <topics
      name                   string  <name
      topic_id               uuid    v7+
      error_code             int16
      error_message          string  v1+  null  =null
      topic_config_error_code int16  v5+  tag=0
      num_partitions         int32   v5+  =-1
      replication_factor     int16   v5+  =-1
      configs                []      v5+  null  =null
        name                 string
        value                string  null
        read_only            bool
        config_source        int8    =-1
        is_sensitive         bool
""")

DELETE_TOPICS = declare(20, "DeleteTopics", max_version=6, first_flexible=4, request="""
    topics                   []      v6+
      name                   string  null  =null
      topic_id               uuid
    topic_names              []string v0-5
    timeout_ms               int32
""", response="""
    throttle_time_ms         int32   v1+
    responses                []      <topic_names
      name                   string  null6+  <.
      topic_id               uuid    v6+
      error_code             int16
      error_message          string  v5+  null  =null
""")

CREATE_PARTITIONS = declare(37, "CreatePartitions", max_version=3, first_flexible=2, request="""
    topics                   []
      name                   string
      count                  int32
      assignments            []      null
        broker_ids           []int32
    timeout_ms               int32
    validate_only            bool
""", response="""
    throttle_time_ms         int32
    results                  []      <topics
      name                   string  <name
      error_code             int16
      error_message          string  null  =null
""")

DELETE_RECORDS = declare(21, "DeleteRecords", max_version=2, first_flexible=2, request="""
    topics                   []
      name                   string
      partitions             []
        partition_index      int32
        offset               int64
    timeout_ms               int32
""", response="""
    throttle_time_ms         int32
    topics                   []      <topics
      name                   string  <name
      partitions             []      <partitions
        partition_index      int32   <partition_index
        low_watermark        int64   =-1
        error_code           int16
""")

DESCRIBE_CONFIGS = declare(32, "DescribeConfigs", max_version=4, first_flexible=4, request="""
    resources                []
      resource_type          int8
      resource_name          string
      configuration_keys     []string null
    include_synonyms         bool    v1+
    include_documentation    bool    v3+  =false
""", response="""
    throttle_time_ms         int32
    results                  []      <resources
      error_code             int16
      error_message          string  null  =null
      resource_type          int8    <resource_type
      resource_name          string  <resource_name
      configs                []
        name                 string
        value                string  null
        read_only            bool
        config_source        int8    v1+  =-1
        is_default           bool    v0
        is_sensitive         bool
        synonyms             []      v1+
          name               string
          value              string  null
          source             int8
        config_type          int8    v3+  =0
        documentation        string  v3+  null  =null
""")

# AlterConfigs and IncrementalAlterConfigs answer alike: one error per resource.
_ALTER_CONFIGS_RESPONSE = """
    throttle_time_ms         int32
    responses                []      <resources
      error_code             int16
      error_message          string  null  =null
      resource_type          int8    <resource_type
      resource_name          string  <resource_name
"""

ALTER_CONFIGS = declare(33, "AlterConfigs", max_version=2, first_flexible=2, request="""
    resources                []
      resource_type          int8
      resource_name          string
      configs                []
        name                 string
        value                string  null
    validate_only            bool
""", response=_ALTER_CONFIGS_RESPONSE)

INCREMENTAL_ALTER_CONFIGS = declare(44, "IncrementalAlterConfigs", max_version=1, first_flexible=1,
                                    request="""
    resources                []
      resource_type          int8
      resource_name          string
      configs                []
        name                 string
        config_operation     int8
        value                string  null
    validate_only            bool
""", response=_ALTER_CONFIGS_RESPONSE)
