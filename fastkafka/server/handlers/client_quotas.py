"""DescribeClientQuotas and AlterClientQuotas (KIP-546): client quotas stored where Kafka stores
them (``/config/users|clients/...`` in ZooKeeper, the metadata file when embedded) and applied
by every broker's :mod:`~fastkafka.server.quotas` as soon as its store reports the change.

Kafka 3.x's checks (:mod:`fastkafka.security.client_quotas`): an empty entity, an entity type
named twice, an unknown entity type, an empty name, an unknown key, a value that is not
positive or a fraction for a byte rate answer INVALID_REQUEST for that entry (nothing of it is
stored); ``validate_only`` checks without storing. A describe filter with an unknown match type
or a match string where none belongs is INVALID_REQUEST, an unknown entity type
UNSUPPORTED_VERSION. With an authorizer, describing needs DESCRIBE_CONFIGS and altering
ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import logging

from fastkafka import errors
from fastkafka.protocol import ApiKey
from fastkafka.security.client_quotas import QuotaFilter, apply_ops, entity_components, parse_entity

from .authorization import AclOperation, require_cluster

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["CLIENT_QUOTA_RANGES"]

log = logging.getLogger("fastkafka.server")


def _order(item) -> tuple:
    (user, client), _ = item
    return user is not None, user or "", client is not None, client or ""


def handle_describe_client_quotas(ctx: RequestContext, req):
    require_cluster(ctx, AclOperation.DESCRIBE_CONFIGS)
    wanted = QuotaFilter([(c.entity_type, c.match_type, c.match) for c in req.components], req.strict)
    cls = ctx.codec.api.response
    entries = []
    for entity, values in sorted(ctx.services.metadata.quota_configs().items(), key=_order):
        if wanted.matches(entity):
            entries.append(cls.Entries(
                entity=[cls.Entries.Entity(entity_type=t, entity_name=n) for t, n in entity_components(entity)],
                values=[cls.Entries.Values(key=k, value=float(v)) for k, v in sorted(values.items())]))
    return cls(throttle_time_ms=0, error_code=0, error_message=None, entries=entries)


def _alter(store, entry, validate_only: bool) -> None:
    entity = parse_entity((e.entity_type, e.entity_name) for e in entry.entity)
    current = dict(store.quota_configs().get(entity, {}))
    wanted = apply_ops(current, ((op.key, op.value, op.remove) for op in entry.ops))
    if not validate_only and wanted != current:
        store.set_quota_configs(entity, wanted)


def handle_alter_client_quotas(ctx: RequestContext, req):
    require_cluster(ctx, AclOperation.ALTER_CONFIGS)
    cls = ctx.codec.api.response
    store = ctx.services.metadata
    results = []
    for entry in req.entries:
        try:
            _alter(store, entry, req.validate_only)
            problem = None
        except errors.KafkaError as e:
            problem = e
        except Exception as e:       # the store could not persist it
            log.exception("cannot store client quotas")
            problem = errors.UnknownServerError(str(e))
        results.append(cls.Entries(
            error_code=0 if problem is None else problem.code,
            error_message=None if problem is None else str(problem),
            entity=[cls.Entries.Entity(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity]))
    return cls(throttle_time_ms=0, entries=results)


CLIENT_QUOTA_RANGES = {
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (handle_describe_client_quotas, 0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (handle_alter_client_quotas, 0, 1),
}
