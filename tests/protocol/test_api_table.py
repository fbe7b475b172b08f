"""The API table, ApiVersions answers, request-level error responses."""
import pytest
from kafka.protocol.metadata import ApiVersionsResponse

from fastkafka.protocol import (APIS, SUPPORTED, Advertised, ApiKey, codec_for, decode_response,
                                encode_api_versions_error, encode_response, error_response)

PHASE_1 = {"ApiVersions": 3, "Produce": 7, "Fetch": 11, "ListOffsets": 5, "Metadata": 8,
           "OffsetCommit": 7, "OffsetFetch": 5, "FindCoordinator": 2, "JoinGroup": 5,
           "SyncGroup": 3, "Heartbeat": 3, "LeaveGroup": 2, "ListGroups": 2, "DescribeGroups": 4,
           "CreateTopics": 7, "DeleteTopics": 5, "CreatePartitions": 1, "DeleteRecords": 1,
           "DescribeConfigs": 2, "DeleteGroups": 1}
# Phase 2's admin surface of Kafka 3.x clients (issue 17)
PHASE_2 = {"DescribeCluster": 1, "DescribeLogDirs": 4, "OffsetDelete": 0, "IncrementalAlterConfigs": 1,
           "DescribeProducers": 0,
           "ElectLeaders": 2,           # preferred and unclean elections (KIP-183, KIP-460)
           "AlterPartitionReassignments": 0, "ListPartitionReassignments": 0,    # KIP-455
           # transactions (issue 15); InitProducerId 2+ (flexible) and 3+ (KIP-360 epoch bumps)
           "InitProducerId": 4, "AddPartitionsToTxn": 3, "AddOffsetsToTxn": 3, "EndTxn": 3,
           "WriteTxnMarkers": 1, "TxnOffsetCommit": 3, "DescribeTransactions": 0,
           "ListTransactions": 1,
           # security (issue 16): SASL (KIP-43, KIP-152, KIP-368), SCRAM users (KIP-554)
           "SaslHandshake": 1, "SaslAuthenticate": 2, "DescribeUserScramCredentials": 0,
           "AlterUserScramCredentials": 0,
           # client quotas (KIP-546; v1 is flexible)
           "DescribeClientQuotas": 1, "AlterClientQuotas": 1,
           # flexible versions (KIP-482) of the group APIs, up to Kafka 3.x's
           "FindCoordinator": 5, "JoinGroup": 9, "SyncGroup": 5, "Heartbeat": 4, "LeaveGroup": 5,
           "ListGroups": 5, "DescribeGroups": 5,
           # and of Metadata (v10+ topic ids: all zero here), offsets (v8 OffsetFetch: many groups)
           # (v9: KIP-848's member epochs)
           "Metadata": 12, "OffsetCommit": 9, "OffsetFetch": 9,
           # v8: -4 local log start, v9: -5 last tiered offset (no tiered storage here)
           "ListOffsets": 9,
           # the rest of the admin surface's flexible versions (KIP-482): DescribeConfigs v3
           # types and documentation, ACLs v3 the USER resource type, DeleteTopics v6 topic ids,
           # ListGroups v5 group types, FindCoordinator v5 (TRANSACTION_ABORTABLE understood)
           "DescribeConfigs": 4, "AlterConfigs": 2, "CreatePartitions": 3, "DeleteRecords": 2,
           "DeleteGroups": 2, "OffsetForLeaderEpoch": 4, "DescribeAcls": 3, "CreateAcls": 3,
           "DeleteAcls": 3, "DeleteTopics": 6,
           # Produce v8 error messages (KIP-467), v9 and Fetch v12 flexible (Fetch v12: last fetched
           # epoch and diverging epoch, KIP-320; v13's topic ids need KIP-516); Produce v10 leader
           # hints (KIP-951; v11 needs KIP-890's transactions)
           "Produce": 10, "Fetch": 16,
           # KIP-848's consumer group protocol (heartbeat v1: KIP-1082's client-chosen member ids)
           "ConsumerGroupHeartbeat": 1, "ConsumerGroupDescribe": 0}



def test_declared_ranges_are_the_design_ranges():
    assert {APIS[k].name: hi for k, (lo, hi) in SUPPORTED.items()} == PHASE_1 | PHASE_2
    assert all(lo == 0 for lo, _ in SUPPORTED.values())


def test_advertised_is_a_switch_per_api():
    adv = Advertised([ApiKey.API_VERSIONS, ApiKey.PRODUCE])
    assert adv.supports(ApiKey.PRODUCE, 10) and not adv.supports(ApiKey.PRODUCE, 11)
    assert not adv.supports(ApiKey.FETCH, 0)
    adv.enable(ApiKey.FETCH, 0, 4)
    assert adv.supports(ApiKey.FETCH, 4) and not adv.supports(ApiKey.FETCH, 5)
    adv.disable(ApiKey.PRODUCE)
    assert list(adv.ranges()) == [ApiKey.FETCH, ApiKey.API_VERSIONS]
    with pytest.raises(ValueError):
        adv.enable(ApiKey.FETCH, 0, 17)          # past what we can decode
    assert Advertised.everything().ranges() == SUPPORTED


def test_unsupported_api_versions_version_gets_v0_body_with_error_35():
    adv = Advertised([ApiKey.API_VERSIONS, ApiKey.METADATA])
    wire = b"".join(bytes(c) for c in encode_api_versions_error(77, adv))
    assert int.from_bytes(wire[:4], "big") == len(wire) - 4
    assert wire[4:8] == (77).to_bytes(4, "big")       # header v0
    # kafka-python reads a failed ApiVersions response as v0 whatever it asked for
    theirs = ApiVersionsResponse.decode(wire[8:], version=4)
    assert theirs.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in theirs.api_keys] == [
        (3, 0, 12), (18, 0, 3)]


def _request(key, v, attempt=0):
    from .samples import sample
    import random
    return sample(APIS[key].request_struct, v, random.Random(f"err/{key}/{v}/{attempt}"))


@pytest.mark.parametrize("key", sorted(SUPPORTED), ids=lambda k: APIS[k].name)
def test_error_response_for_every_api_encodes(key):
    lo, hi = SUPPORTED[key]
    seen = 0
    for v in range(lo, hi + 1):
        for attempt in range(5):       # (random requests with empty arrays answer no partitions)
            req = _request(key, v, attempt)
            resp = error_response(key, v, req, 42, "bad")
            wire = b"".join(bytes(c) for c in encode_response(key, v, 1, resp))
            _, back = decode_response(key, v, wire[4:])
            codes = _error_codes(back, v)
            assert set(codes) <= {42}, (APIS[key].name, v, back)
            seen += len(codes)
    assert seen, APIS[key].name


def _error_codes(obj, v):
    """Every error_code the response carries in version ``v``."""
    found = []
    for f in type(obj)._struct.present_fields(v):
        value = getattr(obj, f.name)
        if f.name == "error_code" or f.name.endswith("_error_code"):
            found.append(value)
        elif f.struct is not None and value:
            for item in value:
                found += _error_codes(item, v)
    return found


def test_error_response_mirrors_every_partition():
    req = APIS[ApiKey.FETCH].request(topics=[
        {"topic": "a", "partitions": [{"partition": 0}, {"partition": 3}]},
        {"topic": "b", "partitions": [{"partition": 1}]}])
    resp = error_response(ApiKey.FETCH, 11, req, 3)
    assert resp.error_code == 3
    got = [(t.topic, p.partition_index, p.error_code, p.high_watermark)
           for t in resp.responses for p in t.partitions]
    assert got == [("a", 0, 3, -1), ("a", 3, 3, -1), ("b", 1, 3, -1)]


def test_error_response_copies_names_from_string_arrays():
    req = codec_for(ApiKey.DELETE_TOPICS, 1).decode_request(
        codec_for(ApiKey.DELETE_TOPICS, 1).encode_request_body(
            {"topic_names": ["x", "y"], "timeout_ms": 5}))
    resp = error_response(ApiKey.DELETE_TOPICS, 1, req, 41)
    assert [(r.name, r.error_code) for r in resp.responses] == [("x", 41), ("y", 41)]
    groups = error_response(ApiKey.DESCRIBE_GROUPS, 0, {"groups": ["g"]}, 15)
    assert [(g.group_id, g.error_code) for g in groups.groups] == [("g", 15)]


def test_error_response_without_a_decodable_request():
    resp = error_response(ApiKey.PRODUCE, 7, None, 42)
    assert resp.responses == []
    resp = error_response(ApiKey.FIND_COORDINATOR, 2, None, 15, "not yet")
    assert (resp.error_code, resp.error_message, resp.node_id, resp.port) == (15, "not yet", -1, -1)
    resp = error_response(ApiKey.API_VERSIONS, 0, None, 35)
    assert resp.error_code == 35 and len(resp.api_keys) == len(SUPPORTED)
