"""Option validation mirrors Spark's Kafka source (same conditions, same messages); no Spark."""
import doctest

import pytest

from fastkafka.spark import options as O
from fastkafka.spark.options import KafkaOptionError, parse_sink_options, parse_source_options

pytestmark = pytest.mark.timeout(30)
BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def parse(streaming=False, **kw):
    return parse_source_options({**BASE, **kw}, streaming=streaming)


def test_doc_examples():
    assert doctest.testmod(O).failed == 0


def test_defaults_batch_and_stream():
    b = parse(subscribe="t")
    assert (b.starting.kind, b.ending.kind) == ("earliest", "latest")
    assert b.fail_on_data_loss and not b.include_headers and b.min_partitions is None
    s = parse(streaming=True, subscribe="t")
    assert s.starting.kind == "latest"


def test_option_names_are_case_insensitive():
    o = parse_source_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SUBSCRIBE": "t",
                              "includeheaders": "TRUE", "MINPARTITIONS": "3"}, streaming=False)
    assert o.include_headers and o.min_partitions == 3 and o.bootstrap_servers == "h:1"


@pytest.mark.parametrize("opts, message", [
    ({}, "One of the following options must be specified for Kafka source: subscribe, "
         "subscribePattern, assign. See the docs for more details."),
    ({"subscribe": "a", "assign": '{"a":[0]}'},
     "Only one of the following options can be specified for Kafka source: subscribe, "
     "subscribePattern, assign. See the docs for more details."),
    ({"subscribe": " , "}, "No topics to subscribe to as specified value for option 'subscribe' is ' , '"),
    ({"subscribePattern": " "}, "Pattern to subscribe is empty as specified value for option "
                                "'subscribePattern' is ' '"),
    ({"assign": "a:0"}, "No topicpartitions to assign as specified value for option 'assign' is 'a:0'"),
    ({"assign": '{"a":0}'}, 'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {"a":0}'),
    ({"subscribe": "a", "minPartitions": "0"}, "minPartitions must be positive"),
    ({"subscribe": "a", "startingOffsets": "latest"},
     "starting offset can't be latest for batch queries on Kafka"),
    ({"subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'},
     "startingOffsets for a-0 can't be latest for batch queries on Kafka"),
    ({"subscribe": "a", "endingOffsets": "earliest"},
     "ending offset can't be earliest for batch queries on Kafka"),
    ({"subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'},
     "ending offset for a-0 can't be earliest for batch queries on Kafka"),
    ({"subscribe": "a", "startingOffsets": "{bad"},
     'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {bad'),
    ({"subscribe": "a", "startingTimestamp": "yesterday"}, "Expected a single long value, got yesterday"),
    ({"subscribe": "a", "kafka.enable.auto.commit": "true"},
     "Kafka option 'enable.auto.commit' is not supported"),
    ({"subscribe": "a", "kafka.value.deserializer": "x"},
     "Kafka option 'value.deserializer' is not supported as values are deserialized as byte "
     "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values."),
])
def test_rejections_match_spark(opts, message):
    with pytest.raises(KafkaOptionError) as e:
        parse(**opts)
    assert str(e.value) == message


def test_missing_bootstrap_and_auto_offset_reset():
    with pytest.raises(KafkaOptionError, match="Option 'kafka.bootstrap.servers' must be specified "
                                               "for configuring Kafka consumer"):
        parse_source_options({"subscribe": "a"}, streaming=False)
    with pytest.raises(KafkaOptionError, match="Kafka option 'auto.offset.reset' is not supported"):
        parse(subscribe="a", **{"kafka.auto.offset.reset": "earliest"})


def test_streaming_rejects_ending_offsets():
    with pytest.raises(KafkaOptionError, match="^ending offset not valid in streaming queries$"):
        parse(streaming=True, subscribe="a", endingOffsets="latest")
    with pytest.raises(KafkaOptionError, match="^ending timestamp not valid in streaming queries$"):
        parse(streaming=True, subscribe="a", endingOffsetsByTimestamp='{"a":{"0":1}}')


def test_timestamp_preference_order():
    # Spark prefers the global timestamp over per-partition ones over offsets.
    o = parse(subscribe="a", startingTimestamp="1000", startingOffsetsByTimestamp='{"a":{"0":5}}',
              startingOffsets="earliest")
    assert (o.starting.kind, o.starting.timestamp) == ("timestamp", 1000)
    o = parse(subscribe="a", startingOffsetsByTimestamp='{"a":{"0":5}}', startingOffsets="earliest",
              endingOffsetsByTimestamp='{"a":{"1":7}}')
    assert o.starting.kind == "timestamps" and o.starting.offsets == {("a", 0): 5}
    assert o.ending.offsets == {("a", 1): 7}


def test_assign_and_pattern():
    o = parse(assign='{"x":[2,0],"y":[1]}')
    assert o.assign == (("x", 2), ("x", 0), ("y", 1)) and o.matches("y") and not o.matches("z")
    o = parse(subscribePattern="ev.*")
    assert o.matches("events") and not o.matches("xevents")


def test_sink_options():
    s = parse_sink_options({**BASE, "topic": "out", "kafka.acks": "1"})
    assert (s.topic, s.acks, s.compression) == ("out", 1, "none")
    with pytest.raises(KafkaOptionError, match="'key.serializer' is not supported"):
        parse_sink_options({**BASE, "kafka.key.serializer": "x"})
    with pytest.raises(KafkaOptionError, match="configuring Kafka producer"):
        parse_sink_options({"topic": "t"})
