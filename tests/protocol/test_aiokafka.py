"""A second, independent cross-check: aiokafka's hand-written message structs.

aiokafka declares each (API, version) as a positional schema, so our sample's fields in wire
order, as nested tuples, must encode to our exact bytes and decode back to the same values.
Only non-flexible versions are compared (aiokafka's tagged-field support differs in shape).
"""
import importlib
import inspect
import pkgutil
import random

import pytest

import aiokafka.protocol
from fastkafka.protocol import APIS, SUPPORTED, codec_for

from .samples import plain, sample


def _aiokafka_structs():
    found = {}
    for info in pkgutil.iter_modules(aiokafka.protocol.__path__):
        mod = importlib.import_module(f"aiokafka.protocol.{info.name}")
        for name, cls in inspect.getmembers(mod, inspect.isclass):
            key, version = getattr(cls, "API_KEY", None), getattr(cls, "API_VERSION", None)
            if isinstance(key, int) and isinstance(version, int) and "_v" in name:
                kind = "request" if "Request" in name else "response"
                found[key, version, kind] = cls
    return found


THEIRS = _aiokafka_structs()
# Where aiokafka differs from Kafka's spec or nests the same bytes differently.
SKIP = {
    (2, 4, "request"): "aiokafka declares current_leader_epoch int64 (Kafka: int32; unused there)",
    (2, 5, "request"): "same schema as v4",
    (37, 0, "request"): "aiokafka nests count/assignment in a sub-struct (same bytes)",
    (37, 1, "request"): "same schema as v0",
}
CASES = sorted((k, v, kind) for (k, v, kind) in THEIRS
               if k in SUPPORTED and v <= SUPPORTED[k][1] and not APIS[k].flexible(v)
               and (k, v, kind) not in SKIP)


def _positional(obj, struct, v):
    values = []
    for f in struct.present_fields(v):
        value = getattr(obj, f.name)
        if f.struct is not None and value is not None:
            value = [_positional(x, f.struct, v) for x in value]
            # aiokafka flattens one-field structs: Array(String) for Metadata's topics
            value = [x[0] if len(x) == 1 else tuple(x) for x in value]
        values.append(value)
    return values


def test_there_is_plenty_to_compare():
    assert len(CASES) > 100
    assert {APIS[k].name for k, _, _ in CASES} >= {"Produce", "Fetch", "ListOffsets", "Metadata"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{APIS[c[0]].name}-v{c[1]}-{c[2]}")
def test_matches_aiokafka(case):
    key, v, kind = case
    api, c = APIS[key], codec_for(key, v)
    struct = api.request_struct if kind == "request" else api.response_struct
    theirs = THEIRS[case]
    rng = random.Random(f"aiokafka/{key}/{v}/{kind}")
    for _ in range(4):
        ours = sample(struct, v, rng)
        if kind == "request":
            our_bytes = bytes(c.encode_request_body(ours))
        else:
            our_bytes = b"".join(bytes(x) for x in c.encode_response_body(ours))
        their_bytes = theirs(*_positional(ours, struct, v)).encode()
        assert our_bytes == their_bytes
        decoded = (c.decode_request if kind == "request" else c.decode_response)(their_bytes)
        assert plain(decoded) == plain(ours)
