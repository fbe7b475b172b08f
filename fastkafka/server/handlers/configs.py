"""DescribeConfigs v0–2 for topics (resource type 2) and this broker (type 4).

Topic entries list every topic-level property with its effective value and where it comes from
(Kafka's ConfigSource): DYNAMIC_TOPIC_CONFIG for the topic's own overrides, STATIC_BROKER_CONFIG
when the broker's server.properties set the underlying ``log.*`` key, DEFAULT_CONFIG otherwise.
v0 marks defaults with ``is_default``; v1+ with ``config_source`` and, on request, synonyms
(override, broker value, default — most specific first). Broker properties are read-only here.
"""
from __future__ import annotations

from fastkafka import errors
from fastkafka.config import KEYS, TOPIC_KEYS

__all__ = ["handle_describe_configs"]

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


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
        value = _fmt(broker.config[kname])
        source = STATIC_BROKER_CONFIG if kname in originals else DEFAULT_CONFIG
        syn = [(kname, value, source)]
        out.append(_entry(cls, kname, value, True, source, syn if synonyms else []))
    return out


def _entry(cls, name, value, read_only, source, synonyms):
    c = cls.Results.Configs
    return c(name=name, value=value, read_only=read_only, config_source=source,
             is_default=source == DEFAULT_CONFIG, is_sensitive=False,
             synonyms=[c.Synonyms(name=n, value=v, source=s) for n, v, s in synonyms])


def handle_describe_configs(ctx, req):
    cls = ctx.codec.api.response
    synonyms = bool(req.include_synonyms)
    out = []
    for r in req.resources:
        keys = None if r.configuration_keys is None else set(r.configuration_keys)
        code, msg, configs = 0, None, []
        try:
            if r.resource_type == TOPIC:
                configs = _topic_configs(ctx, cls, r.resource_name, keys, synonyms)
            elif r.resource_type == BROKER:
                configs = _broker_configs(ctx, cls, r.resource_name, keys, synonyms)
            else:
                raise errors.InvalidRequestError(f"resource type {r.resource_type} is not supported")
        except errors.KafkaError as e:
            code, msg = e.code, str(e) or None
        out.append(cls.Results(error_code=code, error_message=msg, resource_type=r.resource_type,
                               resource_name=r.resource_name, configs=configs))
    return cls(throttle_time_ms=0, results=out)
