"""__consumer_offsets key/value layouts: golden bytes (Kafka's layouts) and round trips."""
import pytest
from hypothesis import given, strategies as st

from fastkafka.coordinator.formats import (GroupKey, GroupRecord, MemberRecord, OffsetAndMetadata,
                                           OffsetKey, decode_group_value, decode_key,
                                           decode_offset_value, group_key, group_value,
                                           java_string_hashcode, offset_key, offset_value,
                                           partition_for)
from fastkafka import errors

pytestmark = pytest.mark.timeout(60)


def test_offset_key_golden_bytes():
    assert offset_key("g", "t", 2) == b"\x00\x01" b"\x00\x01g" b"\x00\x01t" b"\x00\x00\x00\x02"
    assert decode_key(b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x02") == OffsetKey("g", "t", 2)


def test_group_key_golden_bytes():
    assert group_key("grp") == b"\x00\x02\x00\x03grp"
    assert decode_key(group_key("grp")) == GroupKey("grp")
    assert decode_key(b"\x00\x09\x00\x00") is None           # a kind we do not know


def test_offset_value_versions():
    v3 = offset_value(OffsetAndMetadata(5, "m", 7, None, 2))
    assert v3 == (b"\x00\x03" + (5).to_bytes(8, "big") + (2).to_bytes(4, "big") + b"\x00\x01m"
                  + (7).to_bytes(8, "big"))
    v1 = offset_value(OffsetAndMetadata(5, "", 7, 99))
    assert v1 == b"\x00\x01" + (5).to_bytes(8, "big") + b"\x00\x00" + (7).to_bytes(8, "big") + \
        (99).to_bytes(8, "big")
    assert decode_offset_value(v1) == OffsetAndMetadata(5, "", 7, 99, -1)
    v0 = b"\x00\x00" + (5).to_bytes(8, "big") + b"\x00\x00" + (7).to_bytes(8, "big")
    assert decode_offset_value(v0) == OffsetAndMetadata(5, "", 7, None, -1)
    with pytest.raises(errors.CorruptRecordError):
        decode_offset_value(v3[:-1])


def test_java_hashcode_matches_java():
    # values of String.hashCode() in Java
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("a") == 97
    assert java_string_hashcode("hello") == 99162322
    assert java_string_hashcode("polygenelubricants") == -2147483648
    assert partition_for("polygenelubricants", 50) == 0      # Utils.abs(MIN_VALUE) == 0
    assert java_string_hashcode("\U0001F600") == 0xD83D * 31 + 0xDE00   # two UTF-16 units


members = st.lists(st.builds(MemberRecord, st.text(max_size=20), st.none() | st.text(max_size=5),
                             st.text(max_size=10), st.text(max_size=10),
                             st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1),
                             st.binary(max_size=30), st.binary(max_size=30)), max_size=4)


@given(st.text(max_size=10), st.integers(-1, 2**31 - 1), st.none() | st.text(max_size=10),
       st.none() | st.text(max_size=10), st.integers(-1, 2**62), members)
def test_group_value_round_trip(ptype, gen, proto, leader, ts, ms):
    rec = GroupRecord(ptype, gen, proto, leader, ts, ms)
    assert decode_group_value(group_value(rec)) == rec
    v0 = decode_group_value(group_value(rec, version=0))
    assert v0.members == [m._replace(group_instance_id=None, rebalance_timeout_ms=-1) for m in ms]
    assert v0.current_state_timestamp == -1


@given(st.integers(-1, 2**63 - 1), st.text(max_size=50), st.integers(0, 2**62),
       st.none() | st.integers(0, 2**62), st.integers(-1, 2**31 - 1))
def test_offset_value_round_trip(off, meta, ts, exp, epoch):
    om = OffsetAndMetadata(off, meta, ts, exp, epoch if exp is None else -1)
    assert decode_offset_value(offset_value(om)) == om
