"""What a handler checks before it acts, as Kafka's KafkaApis checks it: ``require_*`` raise the
resource's authorization error (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
which the handler answers per item or the dispatcher answers for the whole request. Without an
authorizer every check passes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors

from ..authorizer import GROUP, TOPIC, TRANSACTIONAL_ID, AclOperation

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["require_topic", "require_group", "require_cluster", "require_transactional_id", "AclOperation"]


def _words(op: AclOperation) -> str:
    return op.name.lower().replace("_", " ")


def require_topic(ctx: RequestContext, op: AclOperation, topic: str) -> None:
    if not ctx.authorize(op, TOPIC, topic):
        raise errors.TopicAuthorizationFailedError(f"Not authorized to {_words(op)} topic {topic}")


def require_group(ctx: RequestContext, op: AclOperation, group: str) -> None:
    if not ctx.authorize(op, GROUP, group):
        raise errors.GroupAuthorizationFailedError(f"Not authorized to {_words(op)} group {group}")


def require_cluster(ctx: RequestContext, op: AclOperation) -> None:
    if not ctx.authorize_cluster(op):
        raise errors.ClusterAuthorizationFailedError(f"Not authorized to {_words(op)} the cluster")


def require_transactional_id(ctx: RequestContext, op: AclOperation, transactional_id: str) -> None:
    if not ctx.authorize(op, TRANSACTIONAL_ID, transactional_id):
        raise errors.TransactionalIdAuthorizationFailedError(
            f"Not authorized to {_words(op)} transactional id {transactional_id}")
