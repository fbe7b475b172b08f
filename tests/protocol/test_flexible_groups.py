"""The group APIs' flexible versions (KIP-482) as bytes written by hand the way Kafka's Java
client frames them: request header v2 (int16 client id, then a tag buffer), compact strings and
arrays (length + 1 as an unsigned varint, 0 for null), a tag buffer after every struct.
Independent of kafka-python, whose JSON-driven codecs test_golden compares with."""
from fastkafka import protocol as P
from fastkafka.protocol import ApiKey


def h(s: str) -> bytes:
    return bytes.fromhex("".join(s.split()))


def framed(body_hex: str) -> bytes:
    b = h(body_hex)
    return len(b).to_bytes(4, "big") + b


def parse(wire: bytes):
    frames = P.FrameDecoder().feed(wire)
    assert len(frames) == 1
    return P.parse_request(frames[0])


FIND_COORDINATOR_V4 = framed(
    "000a 0004 00000003 0003 636c69 00"    # FindCoordinator v4, corr 3, client "cli", no tags
    "00"                                   # key_type 0 (group)
    "03 02 61 03 6262"                     # coordinator_keys: ["a", "bb"]
    "00")                                  # body tag buffer


def test_find_coordinator_v4_request_is_a_batch_of_keys():
    header, req = parse(FIND_COORDINATOR_V4)
    assert (header.api_key, header.api_version, header.header_version) == (10, 4, 2)
    assert req.coordinator_keys == ["a", "bb"] and req.key_type == 0
    assert bytes(P.encode_request(10, 4, 3, req, "cli")) == FIND_COORDINATOR_V4


def test_find_coordinator_v4_response_answers_each_key():
    cls = P.APIS[ApiKey.FIND_COORDINATOR].response
    resp = cls(throttle_time_ms=0, coordinators=[
        cls.Coordinators(key="a", node_id=1, host="h", port=9092, error_code=0, error_message=None),
        cls.Coordinators(key="bb", node_id=-1, host="", port=-1, error_code=15, error_message="x")])
    wire = b"".join(bytes(c) for c in P.encode_response(10, 4, 3, resp))
    assert wire[4:] == h(
        "00000003 00"                          # header v1: correlation id, tag buffer
        "00000000"                             # throttle_time_ms (no top-level error in v4)
        "03"                                   # coordinators: 2
        "02 61 00000001 02 68 00002384 0000 00 00"          # "a" -> 1 h:9092, no error, null msg
        "03 6262 ffffffff 01 ffffffff 000f 02 78 00"        # "bb" -> COORDINATOR_NOT_AVAILABLE "x"
        "00")
    _, back = P.decode_response(10, 4, wire[4:])
    assert [(c.key, c.node_id, c.error_code, c.error_message) for c in back.coordinators] == [
        ("a", 1, 0, None), ("bb", -1, 15, "x")]


JOIN_GROUP_V9 = framed(
    "000b 0009 00000007 0003 636c69 00"    # JoinGroup v9, corr 7, client "cli", no header tags
    "02 67"                                # group_id "g"
    "00002710 0000ea60"                    # session 10000 ms, rebalance 60000 ms
    "01"                                   # member_id ""
    "00"                                   # group_instance_id null
    "09 636f6e73756d6572"                  # protocol_type "consumer"
    "02 06 72616e6765 04 010203 00"        # protocols: [("range", 01 02 03)], element tags
    "0a 72656a6f696e696e67"                # reason "rejoining" (v8+)
    "01 05 02 abcd")                       # one tagged field: unknown tag 5, 2 bytes (skipped)


def test_join_group_v9_request_with_reason_and_an_unknown_tag():
    header, req = parse(JOIN_GROUP_V9)
    assert (header.api_version, header.correlation_id, header.client_id) == (9, 7, "cli")
    assert (req.group_id, req.session_timeout_ms, req.rebalance_timeout_ms) == ("g", 10000, 60000)
    assert req.member_id == "" and req.group_instance_id is None and req.reason == "rejoining"
    assert [(p.name, bytes(p.metadata)) for p in req.protocols] == [("range", b"\1\2\3")]
    # re-encoded without the unknown tag: the same bytes up to the tag buffer
    again = bytes(P.encode_request(11, 9, 7, req, "cli"))
    assert again[4:] == JOIN_GROUP_V9[4:-5] + b"\x00"


def test_join_group_v9_response_has_protocol_type_and_skip_assignment():
    cls = P.APIS[ApiKey.JOIN_GROUP].response
    resp = cls(throttle_time_ms=0, error_code=0, generation_id=1, protocol_type="consumer",
               protocol_name="range", leader="m", skip_assignment=False, member_id="m",
               members=[cls.Members(member_id="m", group_instance_id=None, metadata=b"\1")])
    wire = b"".join(bytes(c) for c in P.encode_response(11, 9, 7, resp))
    assert wire[4:] == h(
        "00000007 00"
        "00000000 0000 00000001"               # throttle, error, generation
        "09 636f6e73756d6572"                  # protocol_type "consumer" (v7+)
        "06 72616e6765"                        # protocol_name "range"
        "02 6d"                                # leader "m"
        "00"                                   # skip_assignment false (v9+)
        "02 6d"                                # member_id "m"
        "02 02 6d 00 02 01 00"                 # members: [("m", null, 01)]
        "00")
    # an error answer: protocol type and name are null from v7 on
    err = cls(error_code=79, protocol_type=None, protocol_name=None, member_id="x")
    wire = b"".join(bytes(c) for c in P.encode_response(11, 7, 1, err))
    _, back = P.decode_response(11, 7, wire[4:])
    assert (back.error_code, back.protocol_type, back.protocol_name) == (79, None, None)


LEAVE_GROUP_V5 = framed(
    "000d 0005 00000009 ffff 00"           # LeaveGroup v5, corr 9, null client id
    "02 67"                                # group_id "g"
    "03"                                   # members: 2
    "01 03 6931 04 627965 00"              # ("", instance "i1", reason "bye")
    "03 6d32 00 00 00"                     # ("m2", null instance, null reason)
    "00")


def test_leave_group_v5_request_names_members_by_instance_id():
    header, req = parse(LEAVE_GROUP_V5)
    assert header.client_id is None and req.group_id == "g"
    assert [(m.member_id, m.group_instance_id, m.reason) for m in req.members] == [
        ("", "i1", "bye"), ("m2", None, None)]
    assert bytes(P.encode_request(13, 5, 9, req, None)) == LEAVE_GROUP_V5


def test_list_groups_v4_states_filter_and_sync_group_v5_protocol_fields():
    wire = framed("0010 0004 00000001 0000 00"     # ListGroups v4, client ""
                  "02 07 537461626c65 00")          # states_filter ["Stable"]
    _, req = parse(wire)
    assert req.states_filter == ["Stable"]
    wire = framed("000e 0005 00000002 0000 00"      # SyncGroup v5
                  "02 67 00000001 02 6d 00"         # "g", generation 1, member "m", no instance
                  "09 636f6e73756d6572 00"          # protocol_type "consumer", protocol_name null
                  "01 00")                          # no assignments
    _, req = parse(wire)
    assert (req.generation_id, req.protocol_type, req.protocol_name, req.assignments) == (
        1, "consumer", None, [])
