"""Schemas of client quota management (KIP-546): DescribeClientQuotas and AlterClientQuotas.

An entity is a list of ``(entity_type, entity_name)`` parts -- ``user``, ``client-id`` (and
``ip``) -- where a null name means the default entity of that type. A describe filter matches
each part exactly (match type 0), the default (1) or any name (2); ``strict`` leaves out
entities with parts the filter does not name. Notation: see :mod:`fastkafka.protocol.schema`.
"""
from ..schema import declare

DESCRIBE_CLIENT_QUOTAS = declare(48, "DescribeClientQuotas", max_version=1, first_flexible=1, request="""
    components               []
      entity_type            string
      match_type             int8
      match                  string  null
    strict                   bool
""", response="""
    throttle_time_ms         int32
    error_code               int16
    error_message            string  null  =null
    entries                  []      null  =null
      entity                 []
        entity_type          string
        entity_name          string  null
      values                 []
        key                  string
        value                float64
""")

# (an error response answers each entry with its entity, as Kafka's getErrorResponse does)
ALTER_CLIENT_QUOTAS = declare(49, "AlterClientQuotas", max_version=1, first_flexible=1, request="""
    entries                  []
      entity                 []
        entity_type          string
        entity_name          string  null
      ops                    []
        key                  string
        value                float64
        remove               bool
    validate_only            bool
""", response="""
    throttle_time_ms         int32
    entries                  []      <entries
      error_code             int16
      error_message          string  null  =null
      entity                 []      <entity
        entity_type          string  <entity_type
        entity_name          string  null  <entity_name
""")
