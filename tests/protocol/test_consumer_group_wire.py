"""KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe on the wire, byte by byte as Kafka's
message definitions lay them out (kafka-python has no classes for them to compare against): every
version flexible, the response's assignment a nullable struct (int8 -1 when absent, 1 before it)."""
import uuid

import pytest

from fastkafka.protocol import ProtocolError, codec_for

TID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def body(c, obj, kind):
    if kind == "request":
        return bytes(c.encode_request_body(obj))
    return b"".join(bytes(x) for x in c.encode_response_body(obj))


def test_heartbeat_request_v1_as_librdkafka_sends_its_join():
    c = codec_for(68, 1)
    wire = bytes.fromhex(
        "0267" "026d" "00000000"          # group "g", member "m", epoch 0
        "00" "00" "000493e0"              # no instance, no rack, rebalance timeout 300000
        "020274"                          # subscribed ["t"]
        "01"                              # regex "" (v1 only)
        "0672616e6765"                    # server assignor "range"
        "00"                              # topic partitions: null
        "00")                             # tagged fields
    req = c.decode_request(wire)
    assert (req.group_id, req.member_id, req.member_epoch, req.rebalance_timeout_ms) == ("g", "m", 0, 300000)
    assert req.subscribed_topic_names == ["t"] and req.subscribed_topic_regex == ""
    assert req.server_assignor == "range" and req.topic_partitions is None
    assert body(c, req, "request") == wire
    v0 = codec_for(68, 0)
    assert v0.decode_request(wire[:17] + wire[18:]).server_assignor == "range"     # no regex in v0


def test_heartbeat_request_owned_partitions_by_topic_id():
    c = codec_for(68, 0)
    R = c.api.request
    req = R(group_id="g", member_id="m", member_epoch=3,
            topic_partitions=[R.TopicPartitions(topic_id=TID, partitions=[0, 2])])
    wire = body(c, req, "request")
    assert wire.endswith(bytes.fromhex("02") + TID.bytes + bytes.fromhex("03" "00000000" "00000002" "00" "00"))
    assert c.decode_request(wire).topic_partitions[0].partitions == [0, 2]


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_response_assignment_is_a_nullable_struct(version):
    c = codec_for(68, version)
    R = c.api.response
    head = "00000000" "0000" "00" "026d" "00000001" "00001388"     # throttle, error, message null, "m", 1, 5000
    none = R(error_code=0, member_id="m", member_epoch=1, heartbeat_interval_ms=5000, assignment=None)
    assert body(c, none, "response") == bytes.fromhex(head + "ff" + "00")
    some = R(error_code=0, member_id="m", member_epoch=1, heartbeat_interval_ms=5000,
             assignment=R.Assignment(topic_partitions=[R.Assignment.TopicPartitions(topic_id=TID, partitions=[1])]))
    wire = body(c, some, "response")
    assert wire == bytes.fromhex(head + "01" + "02") + TID.bytes + bytes.fromhex("02" "00000001" "00" "00" "00")
    assert c.decode_response(wire).assignment.topic_partitions[0].topic_id == TID
    assert c.decode_response(bytes.fromhex(head + "ff00")).assignment is None
    with pytest.raises(ProtocolError):
        c.decode_response(bytes.fromhex(head))          # the marker itself missing


def test_describe_round_trip_names_topics_and_both_assignments():
    c = codec_for(69, 0)
    req = c.decode_request(bytes.fromhex("03" "0267" "0268" "01" "00"))     # ["g", "h"], with operations
    assert req.group_ids == ["g", "h"] and req.include_authorized_operations is True
    R = c.api.response
    M = R.Groups.Members
    tp = [M.Assignment.TopicPartitions(topic_id=TID, topic_name="t", partitions=[0])]
    resp = R(groups=[R.Groups(group_id="g", group_state="Stable", group_epoch=2, assignment_epoch=2,
                              assignor_name="uniform", members=[M(
                                  member_id="m", member_epoch=2, client_id="c", client_host="/h",
                                  subscribed_topic_names=["t"], assignment=M.Assignment(topic_partitions=tp),
                                  target_assignment=M.TargetAssignment(topic_partitions=[]))])])
    back = c.decode_response(body(c, resp, "response"))
    g = back.groups[0]
    assert (g.group_state, g.group_epoch, g.assignor_name, g.authorized_operations) == \
        ("Stable", 2, "uniform", -2147483648)
    assert g.members[0].assignment.topic_partitions[0].topic_name == "t"
    assert g.members[0].target_assignment.topic_partitions == []
