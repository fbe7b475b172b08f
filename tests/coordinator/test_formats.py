"""__consumer_offsets key/value layouts: golden bytes (Kafka's layouts) and round trips."""
import pytest
from hypothesis import given, strategies as st

from fastkafka.coordinator.formats import (GroupKey, GroupRecord, MemberRecord, OffsetAndMetadata,
                                           OffsetKey, decode_group_value, decode_key,
                                           decode_offset_value, group_key, group_value,
                                           java_string_hashcode, offset_key, offset_value,
                                           partition_for)
from fastkafka.coordinator.txn_formats import EMPTY, ONGOING, TxnRecord, decode_txn_value
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


def _i(n, size):
    return n.to_bytes(size, "big", signed=True)


def test_flexible_v4_values_as_kafka_4_writes_them():
    # OffsetCommitValue v4: v3's fields, compact string (length + 1), an empty tagged-fields section
    v4 = b"\x00\x04" + _i(42, 8) + _i(7, 4) + b"\x03hi" + _i(1000, 8) + b"\x00"
    assert decode_offset_value(v4) == OffsetAndMetadata(42, "hi", 1000, None, 7)
    # the same with an unknown tagged field (tag 5, 2 bytes) a later Kafka may add: skipped
    assert decode_offset_value(v4[:-1] + b"\x01\x05\x02ab") == OffsetAndMetadata(42, "hi", 1000, None, 7)
    with pytest.raises(errors.CorruptRecordError):     # the non-flexible v3 layout is not v4
        decode_offset_value(b"\x00\x04" + offset_value(OffsetAndMetadata(42, "hi", 1000, None, 7))[2:])
    # GroupMetadataValue v4: compact (nullable) strings, compact array and bytes, tags per struct
    member = (b"\x03m1" + b"\x00" + b"\x02c" + b"\x02h" + _i(300, 4) + _i(100, 4)
              + b"\x03su" + b"\x01" + b"\x00")
    g4 = (b"\x00\x04" + b"\x09consumer" + _i(3, 4) + b"\x06range" + b"\x00" + _i(55, 8)
          + b"\x02" + member + b"\x00")
    assert decode_group_value(g4) == GroupRecord("consumer", 3, "range", None, 55,
                                                 [MemberRecord("m1", None, "c", "h", 300, 100, b"su", b"")])
    with pytest.raises(errors.CorruptRecordError):
        decode_group_value(g4[:-3])
    with pytest.raises(errors.CorruptRecordError):
        decode_offset_value(b"\x00\x05" + v4[2:])      # a version after Kafka's


def test_txn_value_v1_flexible_as_kafka_4_writes_it():
    head = b"\x00\x01" + _i(7, 8) + _i(2, 2) + _i(60000, 4)
    times = _i(1000, 8) + _i(900, 8)
    partitions = b"\x02" + b"\x02t" + b"\x03" + _i(0, 4) + _i(1, 4) + b"\x00"
    # tagged: previous_producer_id (0) = 6, client_transaction_version (2) = 1
    tags = b"\x02" + b"\x00\x08" + _i(6, 8) + b"\x02\x02" + _i(1, 2)
    assert decode_txn_value(head + _i(ONGOING, 1) + partitions + times + tags) == \
        TxnRecord(7, 2, 60000, ONGOING, {("t", 0), ("t", 1)}, 1000, 900)
    # Empty: Kafka writes null partitions
    assert decode_txn_value(head + _i(EMPTY, 1) + b"\x00" + times + b"\x00").partitions == set()
    # a transaction of a client on transaction version 2 (epoch bump per transaction) is skipped
    with pytest.raises(errors.CorruptRecordError, match="transaction version 2"):
        decode_txn_value(head + _i(ONGOING, 1) + partitions + times + b"\x01\x02\x02" + _i(2, 2))
    with pytest.raises(errors.CorruptRecordError):
        decode_txn_value(head + _i(ONGOING, 1) + partitions[:-3])


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
    assert decode_group_value(group_value(rec, version=4)) == rec      # flexible
    v0 = decode_group_value(group_value(rec, version=0))
    assert v0.members == [m._replace(group_instance_id=None, rebalance_timeout_ms=-1) for m in ms]
    assert v0.current_state_timestamp == -1


@given(st.integers(-1, 2**63 - 1), st.text(max_size=50), st.integers(0, 2**62),
       st.none() | st.integers(0, 2**62), st.integers(-1, 2**31 - 1))
def test_offset_value_round_trip(off, meta, ts, exp, epoch):
    om = OffsetAndMetadata(off, meta, ts, exp, epoch if exp is None else -1)
    assert decode_offset_value(offset_value(om)) == om
