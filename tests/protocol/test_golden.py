"""Every (API, version) we declare, checked byte for byte against kafka-python's codecs.

kafka-python 3 builds its codecs from Apache Kafka's own message definitions, independently of
ours, so identical bytes in both directions pin our schemas to the real protocol.
"""
import random

import pytest

from fastkafka.protocol import APIS, SUPPORTED, codec_for

from .samples import THEIRS, from_theirs, plain, sample, their_class, to_theirs

# kafka-python 3 has no KIP-848 messages: those are pinned by test_consumer_group_wire.py's bytes
# and by librdkafka end to end (tests/clients/test_consumer_group_protocol.py)
NOT_IN_KAFKA_PYTHON = {68, 69}
CASES = [(key, v, kind) for key, (lo, hi) in SUPPORTED.items() if key not in NOT_IN_KAFKA_PYTHON
         for v in range(lo, hi + 1) for kind in ("request", "response")]
SAMPLES_PER_CASE = 6


def _ids(case):
    key, v, kind = case
    return f"{APIS[key].name}-v{v}-{kind}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_matches_kafka_python(case):
    key, v, kind = case
    api, c = APIS[key], codec_for(key, v)
    struct = api.request_struct if kind == "request" else api.response_struct
    theirs_cls = their_class(key, kind)[v]
    encode = (lambda o: bytes(c.encode_request_body(o))) if kind == "request" else \
        (lambda o: b"".join(bytes(x) for x in c.encode_response_body(o)))
    decode = c.decode_request if kind == "request" else c.decode_response
    rng = random.Random(f"{key}/{v}/{kind}")
    for _ in range(SAMPLES_PER_CASE):
        ours = sample(struct, v, rng)
        if (key, kind) == (18, "response") and v > 0:
            ours.error_code = 0     # kafka-python reads any failed ApiVersions body as v0
        their_obj = to_theirs(ours, struct, v, c.flexible, theirs_cls)
        their_bytes = bytes(their_obj.encode())
        our_bytes = encode(ours)
        assert our_bytes == their_bytes, (ours, their_obj)
        # Our decoder reads their bytes back to the same values ...
        assert plain(decode(their_bytes)) == plain(ours)
        # ... and theirs reads ours.
        back = their_class(key, kind).decode(our_bytes, version=v)
        assert plain(from_theirs(back, struct, v)) == plain(ours)


def test_every_declared_version_is_covered():
    assert {k for k, _ in THEIRS} & NOT_IN_KAFKA_PYTHON == set()     # else: compare them here too
    assert len(CASES) == 2 * sum(hi - lo + 1 for k, (lo, hi) in SUPPORTED.items() if k not in NOT_IN_KAFKA_PYTHON)
    assert {APIS[k].name for k, _, _ in CASES} >= {"ApiVersions", "Produce", "Fetch", "Metadata"}


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_whole_frames_match_kafka_python(case):
    """Size prefix + header (v0/v1/v2 request, v0/v1 response) + body, as kafka-python frames it."""
    key, v, kind = case
    api, c = APIS[key], codec_for(key, v)
    struct = api.request_struct if kind == "request" else api.response_struct
    ours = sample(struct, v, random.Random(f"frame/{key}/{v}/{kind}"))
    if (key, kind) == (18, "response"):
        ours.error_code = 0
    theirs = to_theirs(ours, struct, v, c.flexible, their_class(key, kind)[v])
    if kind == "request":
        theirs.with_header(correlation_id=12345, client_id="cli-é")
        ours_frame = bytes(c.encode_request(12345, ours, client_id="cli-é"))
    else:
        theirs.with_header(correlation_id=12345)
        ours_frame = b"".join(bytes(x) for x in c.encode_response(12345, ours))
    assert ours_frame == bytes(theirs.encode(header=True, framed=True))
    if kind == "response":
        corr, back = c.decode_response_frame(ours_frame[4:])
        assert corr == 12345 and plain(back) == plain(ours)
