"""Golden bytes written by hand from Kafka's protocol guide, independent of any library."""
from fastkafka import protocol as P
from fastkafka.protocol import ApiKey


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


# ApiVersions v3 request as librdkafka sends it: header v2 (client_id stays an int16-length
# string, then an empty tagged section), body of compact strings and tagged fields.
API_VERSIONS_V3_REQUEST = h(
    "0000001e"                   # size 30
    "0012 0003 00000001"         # api_key 18, version 3, correlation_id 1
    "0005 72646b6166"            # client_id "rdkaf"
    "00"                         # header tagged fields: none
    "09 6c696272646b6166"        # client_software_name "librdkaf" (compact: len+1)
    "04 322e30"                  # client_software_version "2.0"
    "00")                        # body tagged fields: none


def test_api_versions_v3_request_decodes_and_encodes():
    frames = P.FrameDecoder().feed(API_VERSIONS_V3_REQUEST)
    header, req = P.parse_request(frames[0])
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 3, 1)
    assert header.client_id == "rdkaf" and header.header_version == 2
    assert (req.client_software_name, req.client_software_version) == ("librdkaf", "2.0")
    assert bytes(P.encode_request(18, 3, 1, req, "rdkaf")) == API_VERSIONS_V3_REQUEST


def test_api_versions_v3_response_has_header_v0_and_tagged_fields():
    body = {"error_code": 0, "throttle_time_ms": 0,
            "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 7}],
            "finalized_features_epoch": 5}
    wire = b"".join(P.encode_response(18, 3, 9, body))
    assert wire == h(
        "0000001d"               # size 29
        "00000009"               # correlation_id; header v0: NO tagged fields even in v3
        "0000"                   # error_code
        "02 0000 0000 0007 00"   # compact array of 1: api_key, min, max, tagged fields
        "00000000"               # throttle_time_ms
        "01 01 08 0000000000000005")   # 1 tagged field: tag 1, size 8, finalized_features_epoch
    corr, resp = P.decode_response(18, 3, wire[4:])
    assert corr == 9 and resp.finalized_features_epoch == 5 and resp.supported_features == []


def test_unknown_tagged_fields_are_skipped():
    # tags 7 (unknown, 3 bytes) and 1 (known) in the body's tagged section
    body = h("0000 01 00000000 02 07 03 aabbcc 01 08 0000000000000003")
    resp = P.codec_for(18, 3).decode_response(body)
    assert resp.api_keys == [] and resp.finalized_features_epoch == 3


def test_produce_v0_request():
    wire = h("00000000"                      # placeholder for size, checked below
             "0000 0000 0000002a ffff"       # Produce v0, corr 42, client_id null
             "0001 000003e8"                 # acks 1, timeout 1000
             "00000001 0001 74"              # 1 topic "t"
             "00000001 00000002"             # 1 partition: index 2
             "00000003 010203")              # records: 3 bytes
    wire = len(wire[4:]).to_bytes(4, "big") + wire[4:]
    header, req = P.parse_request(P.FrameDecoder().feed(wire)[0])
    assert header.client_id is None
    p = req.topic_data[0].partition_data[0]
    assert (req.acks, req.timeout_ms, req.topic_data[0].name, p.index) == (1, 1000, "t", 2)
    assert isinstance(p.records, memoryview) and bytes(p.records) == b"\x01\x02\x03"
    assert req.transactional_id is None          # absent in v0: its default
    assert bytes(P.encode_request(0, 0, 42, req, None)) == wire


def test_metadata_v0_response():
    resp = {"brokers": [{"node_id": 1, "host": "h", "port": 9092}],
            "topics": [{"error_code": 0, "name": "t", "partitions": [
                {"error_code": 0, "partition_index": 0, "leader_id": 1,
                 "replica_nodes": [1], "isr_nodes": [1]}]}]}
    wire = b"".join(P.encode_response(ApiKey.METADATA, 0, 5, resp))
    assert wire[4:] == h(
        "00000005"
        "00000001 00000001 0001 68 00002384"       # brokers: node 1, "h", 9092 (no rack in v0)
        "00000001 0000 0001 74"                    # topics: error 0, "t" (no is_internal in v0)
        "00000001 0000 00000000 00000001"          # partition 0, leader 1
        "00000001 00000001 00000001 00000001")     # replicas [1], isr [1]
    assert int.from_bytes(wire[:4], "big") == len(wire) - 4


def test_api_versions_v4_header_parses_though_the_version_is_unsupported():
    # Newer clients open with ApiVersions v4 (flexible, header v2): we must read the header to
    # answer with UNSUPPORTED_VERSION, without understanding the body.
    frame = h("0012 0004 00000063 0002 6b63 00 05 6b636174 02 31 00")
    header, pos = P.read_request_header(frame)
    assert (header.api_version, header.correlation_id, header.client_id, pos) == (4, 99, "kc", 13)
    import pytest
    from fastkafka import errors
    with pytest.raises(errors.UnsupportedVersionError):
        P.parse_request(frame)
