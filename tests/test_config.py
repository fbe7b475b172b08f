"""Typed configs: Kafka's names and defaults, precedence rules, validation, unknown keys."""
import pytest

from fastkafka import config as C
from fastkafka.config import ConfigException, KafkaConfig, LogConfig


def test_kafka_defaults():
    c = KafkaConfig()
    assert c["log.segment.bytes"] == 1 << 30
    assert c["log.index.interval.bytes"] == 4096
    assert c["log.index.size.max.bytes"] == 10 * 1024 * 1024
    assert c["message.max.bytes"] == 1048588
    assert c.log_retention_ms == 7 * 24 * 3600 * 1000 and c.log_roll_ms == 7 * 24 * 3600 * 1000
    assert c["log.retention.bytes"] == -1 and c["log.cleanup.policy"] == ["delete"]
    assert c["log.flush.interval.messages"] == (1 << 63) - 1   # flushing left to the OS
    assert c.log_flush_interval_ms == (1 << 63) - 1
    assert c.log_dirs == ["/tmp/kafka-logs"]


def test_strings_parse_and_precedence():
    c = KafkaConfig({"log.retention.hours": "1", "log.retention.minutes": "5", "log.roll.hours": "2",
                     "log.dirs": " /a , /b ", "log.cleaner.enable": "false"})
    assert c.log_retention_ms == 5 * 60_000           # minutes beat hours
    assert KafkaConfig({"log.retention.ms": 7, "log.retention.minutes": 5}).log_retention_ms == 7
    assert c.log_roll_ms == 2 * 3_600_000 and c.log_dirs == ["/a", "/b"]
    assert c["log.cleaner.enable"] is False


@pytest.mark.parametrize("key,value", [
    ("log.segment.bytes", "10"),            # below the minimum
    ("log.segment.bytes", "lots"),          # not an integer
    ("log.segment.bytes", str(1 << 40)),    # does not fit an int
    ("log.cleanup.policy", "shred"),
    ("log.message.timestamp.type", "Now"),
    ("log.cleaner.enable", "maybe"),
    ("log.cleaner.min.cleanable.ratio", "2"),
])
def test_bad_values_raise_a_clear_error(key, value):
    with pytest.raises(ConfigException, match=key.replace(".", r"\.")):
        KafkaConfig({key: value})


def test_unknown_keys_are_reported_not_fatal():
    c = KafkaConfig({"log.segment.bytes": 1 << 20, "no.such.key": 1, "listenerz": "x"})
    assert c.unknown == ["listenerz", "no.such.key"]
    with pytest.raises(ConfigException, match="no.such.key"):
        KafkaConfig({"no.such.key": 1}, strict=True)


def test_topic_overrides():
    broker = KafkaConfig({"log.retention.hours": 1, "log.segment.bytes": 1 << 20})
    lc = LogConfig.from_broker(broker, {"segment.bytes": "4096", "cleanup.policy": "compact,delete",
                                         "flush.messages": 100, "segment.ms": 1000})
    assert lc.segment_bytes == 4096 and lc.compact and lc.delete
    assert lc.flush_messages == 100 and lc.segment_ms == 1000 and lc.retention_ms == 3_600_000
    assert LogConfig.from_broker(broker).segment_bytes == 1 << 20
    with pytest.raises(ConfigException):
        LogConfig.from_broker(broker, {"log.segment.bytes": 1})     # broker name, not a topic name
    with pytest.raises(ConfigException, match="max.message.bytes"):
        LogConfig.from_broker(broker, {"max.message.bytes": -5})


def test_adding_a_key_is_one_declaration():
    name = C.define("test.only.threads", C.INT, 3, C.at_least(1), "for this test", topic="test.only")
    try:
        assert name == "test.only.threads" and isinstance(name, C.ConfigName)
        assert KafkaConfig({"test.only.threads": "8"})[name] == 8
        assert C.TOPIC_KEYS["test.only"] is C.KEYS[name]
        with pytest.raises(ValueError):
            C.define("test.only.threads", C.INT, 3, None, "twice")
    finally:
        del C.KEYS["test.only.threads"], C.TOPIC_KEYS["test.only"]


def test_every_read_key_has_its_typed_name():
    """Each declared key is bound in definitions to its name in capitals (SASL_LOGIN_KEYS, accepted
    and never read, aside), and no module reads a broker key through a string literal."""
    import pathlib
    import re
    from fastkafka.config import definitions
    unread = set(definitions.SASL_LOGIN_KEYS)
    for name in C.KEYS:
        if name in unread:
            continue
        const = re.sub(r"[^A-Za-z0-9]", "_", name).upper()
        assert getattr(definitions, const, None) == name, f"{name} has no constant {const} in definitions"
    root = pathlib.Path(C.__file__).parents[1]
    literal = re.compile(r'(?:config|cfg|\bc|self)(?:\(\))?\[\s*"([a-z][a-z0-9.\-]*)"\s*\]')
    found = []
    for pkg in ("config", "log", "coordinator", "server", "cluster"):
        for path in (root / pkg).rglob("*.py"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if line.lstrip().startswith((">>>", "#")):
                    continue
                found += [f"{path.relative_to(root)}:{n}: {m.group(1)}" for m in literal.finditer(line)
                          if m.group(1) in C.KEYS]
    assert not found, "read through the typed name instead:\n" + "\n".join(found)
