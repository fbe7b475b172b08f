"""Dynamic broker configs (Kafka's DynamicBrokerConfig, ZooKeeper mode): the broker's
``server.properties`` overlaid, at run time, by configs stored for the whole cluster
(``/config/brokers/<default>``) and for this broker (``/config/brokers/<id>``); the broker's own
layer wins over the cluster's, both over the file, the file over Kafka's defaults.

What may change this way are the broker-wide defaults of topic configs (``log.retention.ms``,
``log.segment.bytes``, ``log.cleanup.policy``, ``min.insync.replicas``, ``compression.type``,
``message.max.bytes``, ... as Kafka's DynamicLogConfig): a topic without an override of its own
takes the new value at once; and the replication throttle rates
(``leader.replication.throttled.rate``, ``follower.replication.throttled.rate``) -- every name
in :data:`RECONFIGURABLE`. Any other
key is refused with INVALID_REQUEST, as Kafka refuses a config it cannot update dynamically.

The layers live in the metadata store (ZooKeeper in cluster mode, the ``meta`` file of an
embedded broker); :meth:`DynamicBrokerConfig.refresh` follows them (the broker calls it on every
metadata change). Thread-safe: ``current`` is an immutable KafkaConfig, replaced whole.

Example::

    >>> import tempfile
    >>> from fastkafka.cluster.embedded import EmbeddedMetadata
    >>> tmpdir = tempfile.TemporaryDirectory(); store = EmbeddedMetadata(tmpdir.name)
    >>> dyn = DynamicBrokerConfig(KafkaConfig({"log.retention.hours": 1}), store, broker_id=0)
    >>> dyn.alter(DEFAULT_ENTITY, {"log.retention.ms": "60000"}); dyn.refresh()
    True
    >>> dyn.current.log_retention_ms, dyn.synonyms("log.retention.ms")
    (60000, [('log.retention.ms', '60000', 3)])
    >>> try:
    ...     dyn.alter("0", {"num.io.threads": "4"})
    ... except errors.InvalidRequestError as e:
    ...     print(e)
    Cannot update these configs dynamically: num.io.threads
    >>> tmpdir.cleanup()
"""
from __future__ import annotations

import logging
import threading
from typing import Mapping

from fastkafka import errors
from fastkafka.config import KEYS, TOPIC_KEYS, ConfigException, KafkaConfig, LogConfig
from fastkafka.config.definitions import SASL_LOGIN_KEYS

__all__ = ["DynamicBrokerConfig", "DEFAULT_ENTITY", "RECONFIGURABLE", "PER_BROKER", "DYNAMIC_BROKER_CONFIG",
           "DYNAMIC_DEFAULT_BROKER_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "config_text"]

log = logging.getLogger("fastkafka.server")

DEFAULT_ENTITY = "<default>"
#: Kafka's ConfigSource of DescribeConfigs v1+
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 2, 3, 4, 5
#: broker keys only one broker may set at run time, not the cluster default (Kafka's listener
#: configs): the GSSAPI/OAUTHBEARER login settings, accepted without effect
PER_BROKER = frozenset(SASL_LOGIN_KEYS)
#: broker keys that change at run time: the broker-wide defaults of topic configs, the
#: replication throttle rates and PER_BROKER
RECONFIGURABLE = frozenset([k.name for k in TOPIC_KEYS.values() if k.name in KEYS]
                           + ["leader.replication.throttled.rate", "follower.replication.throttled.rate"]) | PER_BROKER


class DynamicBrokerConfig:
    """The effective configuration of broker ``broker_id`` (``current``)."""

    def __init__(self, static: KafkaConfig, metadata, broker_id: int):
        self.static = static
        self._metadata = metadata
        self._entity = str(broker_id)
        self._layers: tuple[dict, dict] = ({}, {})
        self._lock = threading.Lock()
        self.current = static

    def _stored(self) -> tuple[dict, dict]:
        """(cluster-wide, this broker's) dynamic configs as stored now."""
        return (dict(self._metadata.broker_configs(DEFAULT_ENTITY)),
                dict(self._metadata.broker_configs(self._entity)))

    def refresh(self) -> bool:
        """Follow the stored layers; True when ``current`` changed. A stored value that does not
        parse (written past validation, by another tool) is logged and the layers kept."""
        with self._lock:
            layers = self._stored()
            if layers == self._layers:
                return False
            try:
                cfg = self._compose(*layers)
            except ConfigException as e:
                log.warning("ignoring the dynamic broker configs %s: %s", layers, e)
                return False
            self._layers, self.current = layers, cfg
        log.info("dynamic broker configs now: cluster-wide %s, broker %s %s", layers[0], self._entity, layers[1])
        return True

    def _compose(self, cluster: Mapping[str, str], own: Mapping[str, str]) -> KafkaConfig:
        props = dict(self.static.originals)
        props.update(cluster)
        props.update(own)
        cfg = KafkaConfig(props)
        LogConfig.from_broker(cfg)          # the topic defaults they make must hold together
        return cfg

    def alter(self, entity: str, configs: Mapping[str, str], validate_only: bool = False) -> None:
        """Replace the dynamic configs of ``entity`` (this broker's id, or DEFAULT_ENTITY) with
        ``configs``. INVALID_CONFIG for an unknown key or a bad value, INVALID_REQUEST for a
        key that cannot change at run time; nothing is stored then."""
        unknown = sorted(k for k in configs if k not in KEYS)
        if unknown:
            raise errors.InvalidConfigError(f"Unknown broker configs: {', '.join(unknown)}")
        static = sorted(k for k in configs if k not in RECONFIGURABLE)
        if static:
            raise errors.InvalidRequestError(f"Cannot update these configs dynamically: {', '.join(static)}")
        per_broker = sorted(k for k in configs if k in PER_BROKER)
        if per_broker and entity == DEFAULT_ENTITY:
            raise errors.InvalidRequestError("Cannot update these configs at default cluster level, broker id must "
                                             f"be specified: {', '.join(per_broker)}")
        cluster, own = self._stored()
        if entity == DEFAULT_ENTITY:
            cluster = dict(configs)
        else:
            own = dict(configs)
        try:
            self._compose(cluster, own)
        except ConfigException as e:
            raise errors.InvalidConfigError(str(e)) from None
        if not validate_only:
            self._metadata.set_broker_configs(entity, configs)

    def stored(self, entity: str) -> dict[str, str]:
        """The dynamic configs stored for ``entity`` (what IncrementalAlterConfigs starts from)."""
        return dict(self._metadata.broker_configs(entity))

    def synonyms(self, name: str) -> list[tuple[str, str | None, int]]:
        """Where broker key ``name``'s value comes from, most specific first: ``(name, value,
        ConfigSource)`` for this broker's layer, the cluster's, ``server.properties``; Kafka's
        default last only when nothing else sets it."""
        cluster, own = self._layers
        out = [(name, layer[name], source) for layer, source in
               ((own, DYNAMIC_BROKER_CONFIG), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG)) if name in layer]
        originals = self.static.originals
        if name in originals:
            out.append((name, config_text(originals[name]), STATIC_BROKER_CONFIG))
        return out


def config_text(v) -> str | None:
    """A config value as Kafka's tools show it (``true``, ``a,b``; None stays None)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)
