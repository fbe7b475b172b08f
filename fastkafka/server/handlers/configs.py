"""DescribeConfigs v0–4, AlterConfigs v0–2 and IncrementalAlterConfigs v0–1, for topics (resource
type 2) and this broker (type 4).

Topic overrides change at run time as in Kafka: AlterConfigs replaces a topic's whole set,
IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT (the last two on list-valued
configs, from the override or else the default), both validated as at creation and taking effect
on the topic's logs at once. Broker configs change the same two ways for this broker (resource
name its id) or the whole cluster (empty name): only the broker-wide defaults of topic configs
(:mod:`fastkafka.server.dynamic_config`); any other key answers INVALID_REQUEST naming it, as Kafka
does for a config it cannot update dynamically.

Entries list every property with its effective value and where it comes from (Kafka's
ConfigSource): DYNAMIC_TOPIC_CONFIG for a topic's own overrides, DYNAMIC_BROKER_CONFIG and
DYNAMIC_DEFAULT_BROKER_CONFIG for this broker's and the cluster's dynamic configs,
STATIC_BROKER_CONFIG for server.properties, DEFAULT_CONFIG otherwise. v0 marks defaults with
``is_default``; v1+ with ``config_source`` and, on request, synonyms (most specific first).
Describing the broker with an empty name lists the cluster-wide dynamic configs only, as Kafka.
v3+ gives each entry its type (Kafka's ConfigType) and, when ``include_documentation`` is asked,
the property's documentation (the text of ``fastkafka serve --help-config``).

Authorization (with an authorizer): DESCRIBE_CONFIGS (describe) or ALTER_CONFIGS (alter) on the
topic (TOPIC_AUTHORIZATION_FAILED) or on the cluster for a broker (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastkafka import errors
from fastkafka.config import BOOLEAN, DOUBLE, INT, KEYS, LIST, LONG, PASSWORD, STRING, TOPIC_KEYS

from ..dynamic_config import (DEFAULT_CONFIG, DEFAULT_ENTITY, DYNAMIC_DEFAULT_BROKER_CONFIG, RECONFIGURABLE,
                              config_text)
from .authorization import AclOperation, require_cluster, require_topic
from .failure import failure

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["handle_describe_configs", "handle_alter_configs", "handle_incremental_alter_configs",
           "topic_config_entries"]

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG = 1
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3     # IncrementalAlterConfigs' config_operation
# DescribeConfigs v3+'s config_type (Kafka's ConfigDef.Type as DescribeConfigsResponse.ConfigType)
CONFIG_TYPES = {BOOLEAN: 1, STRING: 2, INT: 3, LONG: 5, DOUBLE: 6, LIST: 7, PASSWORD: 9}


def _require(ctx: RequestContext, op: AclOperation, r) -> None:
    if r.resource_type == TOPIC:
        require_topic(ctx, op, r.resource_name)
    elif r.resource_type == BROKER:
        require_cluster(ctx, op)


def _wanted(keys, names):
    return [n for n in names if keys is None or n in keys]


def topic_config_entries(ctx: RequestContext, effective, overrides, keys=None) -> list[tuple]:
    """``(name, value, ConfigSource, synonyms)`` of each topic config (``keys``: all when None)
    of a topic whose LogConfig is ``effective`` and whose own overrides are ``overrides``:
    DescribeConfigs' entries, and CreateTopics v5+'s."""
    dyn = ctx.services.dynamic_config
    out = []
    for tname in _wanted(keys, sorted(TOPIC_KEYS)):
        key = TOPIC_KEYS[tname]
        value = getattr(effective, tname.replace(".", "_"), None)
        syn = [(tname, overrides[tname], DYNAMIC_TOPIC_CONFIG)] if tname in overrides else []
        syn += dyn.synonyms(key.name)
        source = syn[0][2] if syn else DEFAULT_CONFIG
        syn.append((key.name, config_text(key.default), DEFAULT_CONFIG))
        out.append((tname, config_text(value), source, syn))
    return out


def _topic_configs(ctx: RequestContext, cls, name: str, keys, synonyms: bool, docs: bool):
    topics = ctx.services.topics
    info = topics.get(name)
    if info is None:
        raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
    return [_entry(cls, TOPIC_KEYS[tname], tname, value, False, source, syn if synonyms else [], docs=docs)
            for tname, value, source, syn in topic_config_entries(ctx, topics.log_config(name), info.configs, keys)]


def _broker_entity(ctx: RequestContext, name: str) -> str:
    """A broker resource's name: this broker's id, or empty for the cluster-wide configs."""
    if name == "":
        return DEFAULT_ENTITY
    if name != str(ctx.services.broker_id):
        raise errors.InvalidRequestError(f"this is broker {ctx.services.broker_id}, not {name!r}")
    return name


def _broker_configs(ctx: RequestContext, cls, name: str, keys, synonyms: bool, docs: bool):
    dyn = ctx.services.dynamic_config
    if _broker_entity(ctx, name) == DEFAULT_ENTITY:
        return [_entry(cls, KEYS.get(k), k, v, False, DYNAMIC_DEFAULT_BROKER_CONFIG,
                       [(k, v, DYNAMIC_DEFAULT_BROKER_CONFIG)] if synonyms else [], docs=docs)
                for k, v in sorted(dyn.stored(DEFAULT_ENTITY).items()) if keys is None or k in keys]
    current = dyn.current
    out = []
    for kname in _wanted(keys, sorted(KEYS)):
        sensitive = KEYS[kname].type is PASSWORD
        value = None if sensitive else config_text(current[kname])   # Kafka never shows secrets
        syn = dyn.synonyms(kname)
        source = syn[0][2] if syn else DEFAULT_CONFIG
        syn.append((kname, config_text(KEYS[kname].default), DEFAULT_CONFIG))
        if sensitive:
            syn = [(n, None, s) for n, _, s in syn]
        out.append(_entry(cls, KEYS[kname], kname, value, kname not in RECONFIGURABLE, source,
                          syn if synonyms else [], sensitive, docs))
    return out


def _entry(cls, key, name, value, read_only, source, synonyms, sensitive=False, docs=False):
    """One DescribeConfigs entry; ``key``: the property's ConfigKey (None if unknown here)."""
    c = cls.Results.Configs
    return c(name=name, value=value, read_only=read_only, config_source=source,
             is_default=source == DEFAULT_CONFIG, is_sensitive=sensitive,
             synonyms=[c.Synonyms(name=n, value=v, source=s) for n, v, s in synonyms],
             config_type=CONFIG_TYPES.get(key.type, 0) if key is not None else 0,
             documentation=key.doc if docs and key is not None else None)


def handle_describe_configs(ctx: RequestContext, req):
    cls = ctx.codec.api.response
    synonyms, docs = bool(req.include_synonyms), bool(req.include_documentation)
    out = []
    for r in req.resources:
        keys = None if r.configuration_keys is None else set(r.configuration_keys)
        code, msg, configs = 0, None, []
        try:
            _require(ctx, AclOperation.DESCRIBE_CONFIGS, r)
            if r.resource_type == TOPIC:
                configs = _topic_configs(ctx, cls, r.resource_name, keys, synonyms, docs)
            elif r.resource_type == BROKER:
                configs = _broker_configs(ctx, cls, r.resource_name, keys, synonyms, docs)
            else:
                raise errors.InvalidRequestError(f"resource type {r.resource_type} is not supported")
        except Exception as e:
            code, msg = failure(e, "configs of %s", r.resource_name)
        out.append(cls.Results(error_code=code, error_message=msg, resource_type=r.resource_type,
                               resource_name=r.resource_name, configs=configs))
    return cls(throttle_time_ms=0, results=out)


def _alter(ctx: RequestContext, req, new_configs):
    """Run ``new_configs(resource, current overrides) -> overrides`` for each resource."""
    out = []
    for r in req.resources:
        code, msg = 0, None
        try:
            _require(ctx, AclOperation.ALTER_CONFIGS, r)
            if r.resource_type == TOPIC:
                topics = ctx.services.topics
                info = topics.get(r.resource_name)
                if info is None:
                    raise errors.UnknownTopicOrPartitionError(f"topic {r.resource_name!r} does not exist")
                topics.alter_configs(r.resource_name, new_configs(r, dict(info.configs)),
                                     validate_only=bool(req.validate_only))
            elif r.resource_type == BROKER:
                entity = _broker_entity(ctx, r.resource_name)
                dyn = ctx.services.dynamic_config
                dyn.alter(entity, new_configs(r, dyn.stored(entity)), validate_only=bool(req.validate_only))
            else:
                raise errors.InvalidRequestError(f"resource type {r.resource_type} is not supported")
        except Exception as e:
            code, msg = failure(e, "configs of %s", r.resource_name)
        out.append({"error_code": code, "error_message": msg, "resource_type": r.resource_type,
                    "resource_name": r.resource_name})
    return ctx.codec.api.response(throttle_time_ms=0, responses=out)


def handle_alter_configs(ctx: RequestContext, req):
    return _alter(ctx, req, lambda r, _current: {c.name: c.value for c in r.configs if c.value is not None})


def _incremental(r, current: dict[str, str]) -> dict[str, str]:
    names = [c.name for c in r.configs]
    if len(set(names)) != len(names):
        raise errors.InvalidRequestError("Error due to duplicate config keys")
    known, what = (TOPIC_KEYS, "topic") if r.resource_type == TOPIC else (KEYS, "broker")
    for c in r.configs:
        key = known.get(c.name)
        if key is None:
            raise errors.InvalidConfigError(f"unknown {what} configuration {c.name}")
        if c.config_operation == SET:
            current[c.name] = c.value
        elif c.config_operation == DELETE:
            current.pop(c.name, None)
        elif c.config_operation in (APPEND, SUBTRACT):
            verb = "append" if c.config_operation == APPEND else "subtract"
            if key.type is not LIST:
                raise errors.InvalidConfigError(f"Config value {verb} is not allowed for config key: {c.name}")
            have = LIST(current.get(c.name, config_text(key.default) or ""))
            given = LIST(c.value or "")
            if c.config_operation == APPEND:
                have += [v for v in given if v not in have]
            else:
                have = [v for v in have if v not in given]
            current[c.name] = ",".join(have)
        else:
            raise errors.InvalidRequestError(f"unknown config operation {c.config_operation}")
    return current


def handle_incremental_alter_configs(ctx: RequestContext, req):
    return _alter(ctx, req, _incremental)
