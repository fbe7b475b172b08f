"""The dispatch table: API key -> ``handle_<api>``, and the version ranges the broker advertises.

An API is advertised exactly when its handler is here, over the range the handler implements
(DESIGN §1: from version 0, never a version whose semantics are missing).
"""
from __future__ import annotations

from fastkafka.protocol import ApiKey

from .admin import handle_create_partitions, handle_create_topics, handle_delete_topics
from .api_versions import handle_api_versions
from .client_quotas import CLIENT_QUOTA_RANGES
from .cluster_admin import CLUSTER_ADMIN_RANGES
from .configs import handle_alter_configs, handle_describe_configs, handle_incremental_alter_configs
from .delete_records import handle_delete_records
from .elect_leaders import handle_elect_leaders
from .fetch import handle_fetch
from .group import GROUP_RANGES
from .list_offsets import handle_list_offsets
from .metadata import handle_metadata
from .offset_for_leader_epoch import handle_offset_for_leader_epoch
from .produce import handle_produce
from .reassignment import handle_alter_partition_reassignments, handle_list_partition_reassignments
from .sasl import SASL_RANGES
from .scram_credentials import SCRAM_CREDENTIAL_RANGES
from .transactions import TRANSACTION_RANGES

__all__ = ["HANDLERS", "RANGES", "advertised_apis"]

# api key -> (handler, min version, max version)
RANGES = {
    ApiKey.PRODUCE: (handle_produce, 0, 10),
    ApiKey.FETCH: (handle_fetch, 0, 16),
    ApiKey.LIST_OFFSETS: (handle_list_offsets, 0, 9),
    ApiKey.METADATA: (handle_metadata, 0, 12),
    ApiKey.API_VERSIONS: (handle_api_versions, 0, 3),
    ApiKey.CREATE_TOPICS: (handle_create_topics, 0, 7),
    ApiKey.DELETE_TOPICS: (handle_delete_topics, 0, 6),
    ApiKey.DELETE_RECORDS: (handle_delete_records, 0, 2),
    ApiKey.DESCRIBE_CONFIGS: (handle_describe_configs, 0, 4),
    ApiKey.ALTER_CONFIGS: (handle_alter_configs, 0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (handle_incremental_alter_configs, 0, 1),
    ApiKey.CREATE_PARTITIONS: (handle_create_partitions, 0, 3),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (handle_offset_for_leader_epoch, 0, 4),
    ApiKey.ELECT_LEADERS: (handle_elect_leaders, 0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (handle_alter_partition_reassignments, 0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (handle_list_partition_reassignments, 0, 0),
}

RANGES.update(GROUP_RANGES)  # group coordinator, offsets (issue 5: handlers/group.py)
RANGES.update(CLUSTER_ADMIN_RANGES)  # Kafka 3.x admin surface (issue 17)
RANGES.update(TRANSACTION_RANGES)  # InitProducerId and transactions (issue 15)
RANGES.update(SASL_RANGES)  # authentication (issue 16)
RANGES.update(SCRAM_CREDENTIAL_RANGES)  # SCRAM users (issue 16)
RANGES.update(CLIENT_QUOTA_RANGES)  # client quotas (KIP-546)

HANDLERS = {key: h for key, (h, _, _) in RANGES.items()}


def advertised_apis() -> dict[int, tuple[int, int]]:
    return {key: (lo, hi) for key, (_, lo, hi) in RANGES.items()}
