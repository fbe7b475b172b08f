"""Schemas of the producer-id and transaction APIs (KIP-98, KIP-360, KIP-447's TxnOffsetCommit v3).

A transactional producer asks FindCoordinator (key_type 1) for its ``transactional.id``'s
coordinator, then InitProducerId; each transaction is AddPartitionsToTxn / AddOffsetsToTxn,
produce, TxnOffsetCommit (to the group's coordinator), EndTxn. WriteTxnMarkers goes from the
transaction coordinator to the partitions' leaders. Notation: see :mod:`fastkafka.protocol.schema`.
"""
from ..schema import declare

INIT_PRODUCER_ID = declare(22, "InitProducerId", max_version=4, first_flexible=2, request="""
    transactional_id         string  null
    transaction_timeout_ms   int32
    producer_id              int64   v3+  =-1
    producer_epoch           int16   v3+  =-1
""", response="""
    throttle_time_ms         int32
    error_code               int16
    producer_id              int64   =-1
    producer_epoch           int16   =-1
""")

# (Kafka's names: v4 batches several transactions, so v0-3's fields say "v3_and_below")
ADD_PARTITIONS_TO_TXN = declare(24, "AddPartitionsToTxn", max_version=3, first_flexible=3, request="""
    v3_and_below_transactional_id string
    v3_and_below_producer_id int64
    v3_and_below_producer_epoch int16
    v3_and_below_topics      []
      name                   string
      partitions             []int32
""", response="""
    throttle_time_ms         int32
    results_by_topic_v3_and_below []  <v3_and_below_topics
      name                   string  <name
      results_by_partition   []      <partitions
        partition_index      int32   <.
        partition_error_code int16
""")

ADD_OFFSETS_TO_TXN = declare(25, "AddOffsetsToTxn", max_version=3, first_flexible=3, request="""
    transactional_id         string
    producer_id              int64
    producer_epoch           int16
    group_id                 string
""", response="""
    throttle_time_ms         int32
    error_code               int16
""")

END_TXN = declare(26, "EndTxn", max_version=3, first_flexible=3, request="""
    transactional_id         string
    producer_id              int64
    producer_epoch           int16
    committed                bool
""", response="""
    throttle_time_ms         int32
    error_code               int16
""")

WRITE_TXN_MARKERS = declare(27, "WriteTxnMarkers", max_version=1, first_flexible=1, request="""
    markers                  []
      producer_id            int64
      producer_epoch         int16
      transaction_result     bool
      topics                 []
        name                 string
        partition_indexes    []int32
      coordinator_epoch      int32
""", response="""
    markers                  []      <markers
      producer_id            int64   <producer_id
      topics                 []      <topics
        name                 string  <name
        partitions           []      <partition_indexes
          partition_index    int32   <.
          error_code         int16
""")

TXN_OFFSET_COMMIT = declare(28, "TxnOffsetCommit", max_version=3, first_flexible=3, request="""
    transactional_id         string
    group_id                 string
    producer_id              int64
    producer_epoch           int16
    generation_id            int32   v3+  =-1
    member_id                string  v3+  =""
    group_instance_id        string  v3+  null  =null
    topics                   []
      name                   string
      partitions             []
        partition_index      int32
        committed_offset     int64
        committed_leader_epoch int32 v2+  =-1
        committed_metadata   string  null
""", response="""
    throttle_time_ms         int32
    topics                   []      <topics
      name                   string  <name
      partitions             []      <partitions
        partition_index      int32   <partition_index
        error_code           int16
""")

# KIP-664: what kafka-transactions.sh lists and describes (flexible from v0)
DESCRIBE_TRANSACTIONS = declare(65, "DescribeTransactions", max_version=0, first_flexible=0, request="""
    transactional_ids        []string
""", response="""
    throttle_time_ms         int32
    transaction_states       []      <transactional_ids
      error_code             int16
      transactional_id       string  <.
      transaction_state      string
      transaction_timeout_ms int32
      transaction_start_time_ms int64 =-1
      producer_id            int64   =-1
      producer_epoch         int16   =-1
      topics                 []
        topic                string
        partitions           []int32
""")

LIST_TRANSACTIONS = declare(66, "ListTransactions", max_version=1, first_flexible=0, request="""
    state_filters            []string
    producer_id_filters      []int64
    duration_filter          int64   v1+  =-1
""", response="""
    throttle_time_ms         int32
    error_code               int16
    unknown_state_filters    []string
    transaction_states       []
      transactional_id       string
      producer_id            int64
      transaction_state      string
""")
