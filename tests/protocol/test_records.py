"""Records fields: zero-copy memoryviews on decode, regions spliced in on encode."""
from fastkafka import protocol as P
from fastkafka.protocol import ApiKey, Region


def _fetch_response(records):
    return {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "high_watermark": 10, "records": records},
        {"partition_index": 1, "records": None}]}]}


def test_produce_records_are_views_of_the_request_buffer():
    batch = bytes(range(61)) * 3
    wire = P.encode_request(ApiKey.PRODUCE, 7, 1, {"acks": 1, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": batch}]}]})
    payload = P.FrameDecoder().feed(wire)[0]
    _, req = P.parse_request(payload)
    records = req.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is payload.obj
    assert bytes(records) == batch


def test_fetch_regions_are_spliced_in_order_with_exact_sizes():
    r1, r2 = Region("seg-a", 100, 40), Region("seg-b", 0, 25)
    data_a, data_b = b"a" * 40, b"b" * 25
    for version in (0, 4, 11):
        chunks = P.encode_response(ApiKey.FETCH, version, 3, _fetch_response([r1, r2]))
        assert [c for c in chunks if isinstance(c, Region)] == [r1, r2]
        spliced = b"".join(data_a if c is r1 else data_b if c is r2 else bytes(c) for c in chunks)
        inline = P.encode_response(ApiKey.FETCH, version, 3, _fetch_response(data_a + data_b))
        assert len(inline) == 1 and spliced == bytes(inline[0])
        assert int.from_bytes(spliced[:4], "big") == len(spliced) - 4
        _, resp = P.decode_response(ApiKey.FETCH, version, spliced[4:])
        assert bytes(resp.responses[0].partitions[0].records) == data_a + data_b
        assert resp.responses[0].partitions[1].records is None


def test_any_object_with_a_length_is_a_region():
    class FileRange:
        def __len__(self):
            return 7
    region = FileRange()
    chunks = P.encode_response(ApiKey.FETCH, 11, 1, _fetch_response(region))
    assert chunks[1] is region and sum(len(c) for c in chunks) - 4 == \
        int.from_bytes(bytes(chunks[0][:4]), "big")
