"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions (DeleteRecords: :mod:`.delete_records`).

Each entry of a request succeeds or fails on its own with Kafka's error code (and, where the
version has one, message): INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION.
A request for more partitions than the broker can map (``MAX_PARTITIONS_PER_REQUEST``) is
INVALID_PARTITIONS before anything is created.
``validate_only`` runs every check and changes nothing. A topic named twice in one request is
INVALID_REQUEST for each occurrence, as Kafka answers. Changes are synchronous in embedded mode,
so ``timeout_ms`` never expires.

CreateTopics v5+ answers each created (or, with ``validate_only``, validated) topic's partition
count, replication factor and every topic config with its value and source, as DescribeConfigs
would; without DESCRIBE_CONFIGS on the topic they are left out and ``topic_config_error_code``
says TOPIC_AUTHORIZATION_FAILED (Kafka's rule). v7's topic id is the zero UUID: fastkafka keeps
no topic ids (as Metadata answers). DeleteTopics v5+ carries each topic's error message; v6+
takes topics by name or id (an id is always UNKNOWN_TOPIC_ID here).

Controller mutation quota (KIP-599, :mod:`..mutation_quota`): each created, added or deleted
partition is charged to the client's ``controller_mutation_rate`` just before the change; over
it, CreateTopics v6+, CreatePartitions v3+ and DeleteTopics v5+ answer THROTTLING_QUOTA_EXCEEDED
for the topics left, older versions are done and throttled.

Authorization (with an authorizer): CreateTopics needs CREATE on the cluster or on the topic,
DeleteTopics DELETE on the topic, CreatePartitions ALTER on the topic
(TOPIC_AUTHORIZATION_FAILED for that topic otherwise, before anything else is checked).
"""
from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import NamedTuple, TYPE_CHECKING

from fastkafka import errors
from fastkafka.protocol.types import UUID_ZERO
from fastkafka.config.definitions import DEFAULT_REPLICATION_FACTOR

from ..authorizer import TOPIC, AclOperation
from ..mutation_quota import mutation_quota
from .authorization import require_topic
from .configs import topic_config_entries
from .failure import failure

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_create_topics", "handle_delete_topics", "handle_create_partitions"]


_CREATE_TWICE = "Create topics request from client contains topic {name} more than once."


def _partition_budget() -> int:
    """How many partitions one request may ask for. Each partition this broker hosts keeps its
    active segment's offset and time index mapped (2 mappings), vm.max_map_count bounds the
    mappings of the process, and half of it stays for everything else: a single CreateTopics
    of 100 000 partitions would otherwise run the process out of mappings (ENOMEM for every
    later index) while holding a handler thread for minutes."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            limit = int(f.read())
    except (OSError, ValueError):
        limit = 65530           # Linux's default
    return max(1, limit // 4)


MAX_PARTITIONS_PER_REQUEST = _partition_budget()


def _check_partition_count(n: int) -> None:
    if n > MAX_PARTITIONS_PER_REQUEST:
        raise errors.InvalidPartitionsError(
            f"{n} partitions: this broker takes at most {MAX_PARTITIONS_PER_REQUEST} in one request "
            f"(its index mappings are bounded by vm.max_map_count)")


def _each_topic(entries, name_of, act, twice: str = "topic listed more than once"):
    """Run ``act`` on every entry of a request, each answering for itself: yields
    ``(entry, error_code, error_message)``. A topic named twice fails every time it appears."""
    counts = Counter(name_of(e) for e in entries)
    for e in entries:
        try:
            if counts[name_of(e)] > 1:
                raise errors.InvalidRequestError(twice.format(name=name_of(e)))
            act(e)
        except Exception as exc:  # noqa: BLE001 — each topic answers for itself
            code, msg = failure(exc, "topic administration")
        else:
            code, msg = 0, None
        yield e, code, msg


def handle_create_topics(ctx: RequestContext, req):
    topics = ctx.services.topics
    cls = ctx.codec.api.response

    may_create_any = ctx.authorize_cluster(AclOperation.CREATE)
    quota = mutation_quota(ctx)
    described = {}    # v5+: name -> what the answer describes of the topic
    created_ids = {}  # v7+: name -> the new topic's id

    def create(t):
        if not may_create_any:
            require_topic(ctx, AclOperation.CREATE, t.name)
        _check_partition_count(max(t.num_partitions, len(t.assignments or ())))
        configs = {c.name: c.value for c in t.configs}
        if req.validate_only:
            n, cfg = topics.validate_create(t.name, t.num_partitions, t.replication_factor, configs, t.assignments)
        else:
            if quota.bounded:     # charged once every check passed, as the creation itself would
                n, _ = topics.validate_create(t.name, t.num_partitions, t.replication_factor, configs,
                                              t.assignments)
                quota.record(n, _now_ms())
            info = topics.create(t.name, t.num_partitions, t.replication_factor, configs, t.assignments)
            n, created_ids[t.name] = info.partitions, info.topic_id
            cfg = topics.validate_configs(configs)
        if ctx.version >= 5:
            rf = (len(t.assignments[0].broker_ids) if t.assignments else t.replication_factor
                  if t.replication_factor != -1 else ctx.services.config[DEFAULT_REPLICATION_FACTOR])
            described[t.name] = (n, rf, cfg, {k: v for k, v in configs.items() if v is not None})

    def result(t, code, msg):
        out = cls.Topics(name=t.name, topic_id=created_ids.get(t.name, UUID_ZERO), error_code=code,
                         error_message=msg)
        if code == 0 and t.name in described:
            if ctx.authorize(AclOperation.DESCRIBE_CONFIGS, TOPIC, t.name):
                out.num_partitions, out.replication_factor, cfg, overrides = described[t.name]
                out.configs = [cls.Topics.Configs(name=n, value=v, read_only=False, config_source=s,
                                                  is_sensitive=False)
                               for n, v, s, _syn in topic_config_entries(ctx, cfg, overrides)]
            else:
                out.topic_config_error_code = errors.TopicAuthorizationFailedError.code
        return out

    return cls(throttle_time_ms=0, topics=[
        result(t, code, msg) for t, code, msg in _each_topic(req.topics, lambda t: t.name, create, _CREATE_TWICE)])


def handle_delete_topics(ctx: RequestContext, req):
    """DeleteTopics; v6+ names each topic by name or by id (KIP-516: an id no topic has is
    UNKNOWN_TOPIC_ID). As Kafka, the answer carries both the name and the id of each topic deleted;
    one asked by id keeps a null name unless the principal may delete it."""
    cls = ctx.codec.api.response
    quota = mutation_quota(ctx)
    topics = ctx.services.topics
    answered = {}     # id(entry) -> (name, topic id) the answer names

    def delete(t):
        name = t.name
        if ctx.version >= 6:
            if t.topic_id != UUID_ZERO:
                if name is not None:
                    raise errors.InvalidRequestError("You may not specify both topic name and topic id.")
                name = topics.name_of(t.topic_id)
                if name is None:
                    raise errors.UnknownTopicIdError(f"no topic has the id {t.topic_id}")
            elif name is None:
                raise errors.InvalidRequestError("a topic to delete needs a name or an id")
        require_topic(ctx, AclOperation.DELETE, name)
        info = topics.get(name)
        answered[id(t)] = (name, info.topic_id if info is not None else t.topic_id)
        if quota.bounded and info is not None:      # (an unknown topic is answered as such, uncharged)
            quota.record(info.partitions, _now_ms())
        topics.delete(name)

    entries = req.topics if ctx.version >= 6 else [_TopicName(n, UUID_ZERO) for n in req.topic_names]
    out = []
    for t, code, msg in _each_topic(entries, lambda t: t.name if t.name is not None else t.topic_id, delete):
        name, topic_id = answered.get(id(t), (t.name, t.topic_id))
        out.append(cls.Responses(name=name, topic_id=topic_id, error_code=code, error_message=msg))
    return cls(throttle_time_ms=0, responses=out)


def _now_ms() -> float:
    return time.monotonic() * 1000.0


class _TopicName(NamedTuple):
    """A topic of DeleteTopics v0-5, shaped as v6+'s entries."""
    name: str | None
    topic_id: uuid.UUID


def handle_create_partitions(ctx: RequestContext, req):
    topics = ctx.services.topics
    cls = ctx.codec.api.response
    quota = mutation_quota(ctx)

    def grow(t):
        require_topic(ctx, AclOperation.ALTER, t.name)
        _check_partition_count(t.count)
        if t.assignments is not None:
            me = ctx.services.broker_id
            if any(list(a.broker_ids) != [me] for a in t.assignments):
                raise errors.InvalidReplicaAssignmentError(f"every new partition must be on broker {me}")
        if quota.bounded and not req.validate_only:
            quota.record(t.count - topics.validate_add_partitions(t.name, t.count).partitions, _now_ms())
        topics.add_partitions(t.name, t.count, validate_only=req.validate_only)

    return cls(throttle_time_ms=0, results=[
        cls.Results(name=t.name, error_code=code, error_message=msg)
        for t, code, msg in _each_topic(req.topics, lambda t: t.name, grow)])
