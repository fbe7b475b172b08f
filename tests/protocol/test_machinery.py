"""The generic machinery on a synthetic schema: every primitive, compact and nullable variants,
nested structs, tagged fields — beyond what the declared APIs exercise today."""
import random
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from fastkafka.protocol import ProtocolError
from fastkafka.protocol.codec import _GEN
from fastkafka.protocol.schema import parse_struct

from .samples import plain, sample

EVERYTHING = parse_struct("Everything", """
    a        int8
    b        uint16
    c        float64
    d        uuid
    e        string   null
    f        bytes    null   v1+
    g        []int64  null
    h        []string
    s        {}
      x      int32
      y      string
    items    []       null
      k      int16
      r      records
    old      int32    v0     =7
    t1       string   v1+    tag=1   =""
    t0       []int32  v1+    tag=0
""")


def _roundtrip(obj, v, flex):
    out, regions = bytearray(), []
    _GEN.encoder(EVERYTHING, v, flex)(obj, out, regions)
    back, pos = _GEN.decoder(EVERYTHING, v, flex)(memoryview(bytes(out)), 0)
    assert pos == len(out) and not regions
    return back, bytes(out)


@pytest.mark.parametrize("v,flex", [(0, False), (1, False), (1, True)])
def test_random_roundtrips(v, flex):
    rng = random.Random(v * 2 + flex)
    for _ in range(50):
        obj = sample(EVERYTHING, v, rng)
        back, _ = _roundtrip(obj, v, flex)
        assert plain(back) == plain(obj)


def test_exact_flexible_bytes():
    obj = EVERYTHING.cls(a=-1, b=65535, c=0.5, d=uuid.UUID(int=1), e=None, f=b"\x01",
                         g=None, h=["é"], s=EVERYTHING.cls.S(x=3, y=""), items=None,
                         t1="z", t0=[])
    _, wire = _roundtrip(obj, 1, True)
    assert wire == bytes.fromhex(
        "ff" "ffff" "3fe0000000000000" + "00" * 15 + "01"   # a, b, c, d
        "00"                       # e: compact null
        "0201"                     # f: compact bytes of 1
        "00"                       # g: compact null array
        "02 03c3a9"                # h: ["é"] (2 UTF-8 bytes, compact len 3)
        "00000003 01 00"           # s: x, y="", s's (empty) tagged fields
        "00"                       # items: null
        "01 01 02 027a")           # tagged: 1 field, tag 1, size 2, compact "z"  (t0 empty: omitted)


def test_non_nullable_null_is_refused_both_ways():
    with pytest.raises(ProtocolError):
        _GEN.encoder(EVERYTHING, 0, False)(EVERYTHING.cls(h=None), bytearray(), [])
    wire = bytearray()
    _GEN.encoder(EVERYTHING, 0, False)(EVERYTHING.cls(), wire, [])
    # h is after a(1) b(2) c(8) d(16) e(2) g(4): replace its count with -1
    wire[33:37] = b"\xff\xff\xff\xff"
    with pytest.raises(ProtocolError):
        _GEN.decoder(EVERYTHING, 0, False)(memoryview(bytes(wire)), 0)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.sampled_from([(0, False), (1, False), (1, True)]))
def test_random_bytes_raise_only_protocol_errors(blob, vf):
    from fastkafka.protocol.codec import Codec
    dec = _GEN.decoder(EVERYTHING, *vf)
    try:
        Codec._decode(_FakeCodec, dec, blob, 0)
    except ProtocolError:
        pass


class _FakeApi:
    name = "Everything"


class _FakeCodec:
    api, version = _FakeApi, 0


def test_defaults_and_dict_coercion():
    obj = EVERYTHING.cls()
    assert (obj.old, obj.h, obj.items, obj.s.x, obj.t1) == (7, [], [], 0, "")
    assert EVERYTHING.cls().h is not obj.h           # fresh mutable defaults
    back, _ = _roundtrip({"a": 5, "s": {"x": 9, "y": "q"}, "items": [{"k": 1, "r": b"R"}]}, 1, True)
    assert (back.a, back.s.y, back.items[0].k, bytes(back.items[0].r)) == (5, "q", 1, b"R")
    with pytest.raises(TypeError):
        EVERYTHING.cls.coerce({"nope": 1})
