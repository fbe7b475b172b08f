"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): SCRAM users, stored as
Kafka stores them (``/config/users/<user>`` in ZooKeeper, the metadata file when embedded).

The client salts the password (``salt``, ``salted_password``, ``iterations``); the broker keeps
only the derived stored and server keys. Per-user answers follow Kafka's AdminManager: unknown
mechanism UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..16384 or an empty name
UNACCEPTABLE_CREDENTIAL, a user named twice DUPLICATE_RESOURCE, a missing credential
RESOURCE_NOT_FOUND. With an authorizer, describing needs DESCRIBE and altering ALTER on the
cluster (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from collections import Counter

from fastkafka import errors
from fastkafka.protocol import ApiKey
from fastkafka.security import MECHANISMS, ScramCredential, ScramMechanism, credential_from_salted_password

from .authorization import AclOperation, require_cluster

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["SCRAM_CREDENTIAL_RANGES"]


def handle_describe_user_scram_credentials(ctx: RequestContext, req):
    require_cluster(ctx, AclOperation.DESCRIBE)
    cls = ctx.response
    store = ctx.services.metadata
    users = store.users()
    wanted = [u.name for u in req.users] if req.users else sorted(users)
    counts = Counter(wanted)
    results = []
    for user in dict.fromkeys(wanted):
        if counts[user] > 1:
            results.append(_user_error(ctx, user, errors.DuplicateResourceError(
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}")))
            continue
        infos = []
        for mechanism, text in sorted(users.get(user, {}).items()):
            if mechanism in MECHANISMS:
                infos.append(ctx.codec.api.response.Results.CredentialInfos(
                    mechanism=ScramMechanism.for_name(mechanism).type_id,
                    iterations=ScramCredential.from_kafka_string(text).iterations))
        if not infos:
            if req.users:
                results.append(_user_error(ctx, user, errors.ResourceNotFoundError(
                    f"Attempt to describe a user credential that does not exist: {user}")))
            continue
        results.append(ctx.codec.api.response.Results(user=user, error_code=0, credential_infos=infos))
    return cls(throttle_time_ms=0, error_code=0, results=results)


def _user_error(ctx: RequestContext, user: str, exc: errors.KafkaError):
    return ctx.codec.api.response.Results(user=user, error_code=exc.code, error_message=str(exc),
                                          credential_infos=[])


def _credential(change, counts, deletion: bool) -> tuple[str, ScramCredential | None]:
    """The change's mechanism and the credential an upsertion stores (None for a deletion);
    raises what is wrong with the change, before anything is stored."""
    if not change.name:
        raise errors.UnacceptableCredentialError("Username must not be empty")
    mechanism = ScramMechanism.for_type(change.mechanism).name
    if counts[(change.name, change.mechanism)] > 1:
        raise errors.DuplicateResourceError("A user credential cannot be altered twice in the same request")
    if deletion:
        return mechanism, None
    if not change.salt or not change.salted_password:
        raise errors.UnacceptableCredentialError("Salt and salted password must not be empty")
    return mechanism, credential_from_salted_password(mechanism, bytes(change.salt),
                                                      bytes(change.salted_password), change.iterations)


def handle_alter_user_scram_credentials(ctx: RequestContext, req):
    require_cluster(ctx, AclOperation.ALTER)
    cls = ctx.codec.api.response
    store = ctx.services.metadata
    changes = [(c, True) for c in req.deletions] + [(c, False) for c in req.upsertions]
    counts = Counter((c.name, c.mechanism) for c, _ in changes)
    failed: dict[str, errors.KafkaError] = {}
    updated: dict[str, dict[str, str]] = {}
    for change, deletion in changes:
        try:
            mechanism, credential = _credential(change, counts, deletion)
            if deletion and mechanism not in store.user_configs(change.name):
                raise errors.ResourceNotFoundError("Attempt to delete a user credential that does not exist")
        except errors.KafkaError as e:
            failed.setdefault(change.name, e)
            continue
        entries = updated.setdefault(change.name, dict(store.user_configs(change.name)))
        if credential is None:        # a deletion
            entries.pop(mechanism, None)
        else:
            entries[mechanism] = credential.to_kafka_string()
    results = []
    for user in dict.fromkeys(c.name for c, _ in changes):
        problem = failed.get(user)   # Kafka applies nothing of a user with any bad change
        if problem is None:
            try:
                store.set_user_configs(user, updated[user])
            except Exception as e:       # the store could not persist it (ZooKeeper gone)
                problem = e if isinstance(e, errors.KafkaError) else errors.UnknownServerError(str(e))
        results.append(cls.Results(user=user, error_code=0 if problem is None else problem.code,
                                   error_message=None if problem is None else str(problem)))
    return cls(throttle_time_ms=0, results=results)


SCRAM_CREDENTIAL_RANGES = {
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (handle_describe_user_scram_credentials, 0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (handle_alter_user_scram_credentials, 0, 0),
}
