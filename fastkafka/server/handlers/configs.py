"""DescribeConfigs v0–2, AlterConfigs v0–1 and IncrementalAlterConfigs v0–1, for topics (resource
type 2) and this broker (type 4).

Topic overrides change at run time as in Kafka: AlterConfigs replaces a topic's whole set,
IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT (the last two on list-valued
configs, from the override or else the default), both validated as at creation and taking effect
on the topic's logs at once. Broker configs are not dynamic here yet: altering one answers
INVALID_REQUEST naming it, as Kafka does for a config it cannot update dynamically.

Topic entries list every topic-level property with its effective value and where it comes from
(Kafka's ConfigSource): DYNAMIC_TOPIC_CONFIG for the topic's own overrides, STATIC_BROKER_CONFIG
when the broker's server.properties set the underlying ``log.*`` key, DEFAULT_CONFIG otherwise.
v0 marks defaults with ``is_default``; v1+ with ``config_source`` and, on request, synonyms
(override, broker value, default — most specific first). Broker properties are read-only here.

Authorization (with an authorizer): DESCRIBE_CONFIGS (describe) or ALTER_CONFIGS (alter) on the
topic (TOPIC_AUTHORIZATION_FAILED) or on the cluster for a broker (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from fastkafka import errors
from fastkafka.config import KEYS, LIST, PASSWORD, TOPIC_KEYS

from .authorization import AclOperation, require_cluster, require_topic
from .failure import failure

__all__ = ["handle_describe_configs", "handle_alter_configs", "handle_incremental_alter_configs"]

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3     # IncrementalAlterConfigs' config_operation


def _require(ctx, op: AclOperation, r) -> None:
    if r.resource_type == TOPIC:
        require_topic(ctx, op, r.resource_name)
    elif r.resource_type == BROKER:
        require_cluster(ctx, op)


def _fmt(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)


def _wanted(keys, names):
    return [n for n in names if keys is None or n in keys]


def _topic_configs(ctx, cls, name: str, keys, synonyms: bool):
    topics = ctx.broker.topics
    info = topics.get(name)
    if info is None:
        raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
    effective = topics.log_config(name)
    originals = ctx.broker.config.originals
    out = []
    for tname in _wanted(keys, sorted(TOPIC_KEYS)):
        key = TOPIC_KEYS[tname]
        value = getattr(effective, tname.replace(".", "_"), None)
        syn = []
        if tname in info.configs:
            source = DYNAMIC_TOPIC_CONFIG
            syn.append((tname, info.configs[tname], DYNAMIC_TOPIC_CONFIG))
        elif key.name in originals:
            source = STATIC_BROKER_CONFIG
        else:
            source = DEFAULT_CONFIG
        if key.name in originals:
            syn.append((key.name, _fmt(originals[key.name]), STATIC_BROKER_CONFIG))
        syn.append((key.name, _fmt(key.default), DEFAULT_CONFIG))
        out.append(_entry(cls, tname, _fmt(value), False, source, syn if synonyms else []))
    return out


def _broker_configs(ctx, cls, name: str, keys, synonyms: bool):
    broker = ctx.broker
    if name not in ("", str(broker.broker_id)):
        raise errors.InvalidRequestError(f"this is broker {broker.broker_id}, not {name!r}")
    originals = broker.config.originals
    out = []
    for kname in _wanted(keys, sorted(KEYS)):
        sensitive = KEYS[kname].type is PASSWORD
        value = None if sensitive else _fmt(broker.config[kname])   # Kafka never shows secrets
        source = STATIC_BROKER_CONFIG if kname in originals else DEFAULT_CONFIG
        syn = [(kname, value, source)]
        out.append(_entry(cls, kname, value, True, source, syn if synonyms else [], sensitive))
    return out


def _entry(cls, name, value, read_only, source, synonyms, sensitive=False):
    c = cls.Results.Configs
    return c(name=name, value=value, read_only=read_only, config_source=source,
             is_default=source == DEFAULT_CONFIG, is_sensitive=sensitive,
             synonyms=[c.Synonyms(name=n, value=v, source=s) for n, v, s in synonyms])


def handle_describe_configs(ctx, req):
    cls = ctx.codec.api.response
    synonyms = bool(req.include_synonyms)
    out = []
    for r in req.resources:
        keys = None if r.configuration_keys is None else set(r.configuration_keys)
        code, msg, configs = 0, None, []
        try:
            _require(ctx, AclOperation.DESCRIBE_CONFIGS, r)
            if r.resource_type == TOPIC:
                configs = _topic_configs(ctx, cls, r.resource_name, keys, synonyms)
            elif r.resource_type == BROKER:
                configs = _broker_configs(ctx, cls, r.resource_name, keys, synonyms)
            else:
                raise errors.InvalidRequestError(f"resource type {r.resource_type} is not supported")
        except Exception as e:
            code, msg = failure(e, "configs of %s", r.resource_name)
        out.append(cls.Results(error_code=code, error_message=msg, resource_type=r.resource_type,
                               resource_name=r.resource_name, configs=configs))
    return cls(throttle_time_ms=0, results=out)


def _alter(ctx, req, new_configs):
    """Run ``new_configs(resource, current overrides) -> overrides`` for each resource."""
    out = []
    for r in req.resources:
        code, msg = 0, None
        try:
            _require(ctx, AclOperation.ALTER_CONFIGS, r)
            if r.resource_type == TOPIC:
                topics = ctx.broker.topics
                info = topics.get(r.resource_name)
                if info is None:
                    raise errors.UnknownTopicOrPartitionError(f"topic {r.resource_name!r} does not exist")
                topics.alter_configs(r.resource_name, new_configs(r, dict(info.configs)),
                                     validate_only=bool(req.validate_only))
            elif r.resource_type == BROKER:
                names = ", ".join(sorted(c.name for c in r.configs))
                raise errors.InvalidRequestError(f"Cannot update these configs dynamically: {names}")
            else:
                raise errors.InvalidRequestError(f"resource type {r.resource_type} is not supported")
        except Exception as e:
            code, msg = failure(e, "configs of %s", r.resource_name)
        out.append({"error_code": code, "error_message": msg, "resource_type": r.resource_type,
                    "resource_name": r.resource_name})
    return ctx.codec.api.response(throttle_time_ms=0, responses=out)


def handle_alter_configs(ctx, req):
    return _alter(ctx, req, lambda r, _current: {c.name: c.value for c in r.configs if c.value is not None})


def _incremental(r, current: dict[str, str]) -> dict[str, str]:
    names = [c.name for c in r.configs]
    if len(set(names)) != len(names):
        raise errors.InvalidRequestError("Error due to duplicate config keys")
    for c in r.configs:
        key = TOPIC_KEYS.get(c.name)
        if key is None:
            raise errors.InvalidConfigError(f"unknown topic configuration {c.name}")
        if c.config_operation == SET:
            current[c.name] = c.value
        elif c.config_operation == DELETE:
            current.pop(c.name, None)
        elif c.config_operation in (APPEND, SUBTRACT):
            verb = "append" if c.config_operation == APPEND else "subtract"
            if key.type is not LIST:
                raise errors.InvalidConfigError(f"Config value {verb} is not allowed for config key: {c.name}")
            have = LIST(current.get(c.name, _fmt(key.default) or ""))
            given = LIST(c.value or "")
            if c.config_operation == APPEND:
                have += [v for v in given if v not in have]
            else:
                have = [v for v in have if v not in given]
            current[c.name] = ",".join(have)
        else:
            raise errors.InvalidRequestError(f"unknown config operation {c.config_operation}")
    return current


def handle_incremental_alter_configs(ctx, req):
    return _alter(ctx, req, _incremental)
