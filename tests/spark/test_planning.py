"""Offset-range planning is pure: resolution, data-loss checks, minPartitions, rate limits."""
import doctest

import pytest

from fastkafka.spark import planning as PL
from fastkafka.spark.options import OffsetSpec
from fastkafka.spark.planning import (DataLossError, OffsetRange, PlanningError, offsets_from_json,
                                      offsets_to_json, plan_ranges, rate_limit, resolve_offsets,
                                      split_ranges)

pytestmark = pytest.mark.timeout(30)
A0, A1 = ("a", 0), ("a", 1)
EARLY = {A0: 10, A1: 0}
LATE = {A0: 100, A1: 50}


def test_doc_examples():
    assert doctest.testmod(PL).failed == 0


def test_resolve_earliest_latest_and_sentinels():
    assert resolve_offsets(OffsetSpec("earliest"), [A0, A1], earliest=EARLY, latest=LATE) == EARLY
    assert resolve_offsets(OffsetSpec("latest"), [A0, A1], earliest=EARLY, latest=LATE) == LATE
    spec = OffsetSpec("offsets", {A0: -1, A1: 20})
    assert resolve_offsets(spec, [A0, A1], earliest=EARLY, latest=LATE) == {A0: 100, A1: 20}


def test_json_offsets_must_name_every_partition():
    with pytest.raises(PlanningError, match="you must specify all TopicPartitions"):
        resolve_offsets(OffsetSpec("offsets", {A0: 5}), [A0, A1], earliest=EARLY, latest=LATE)


def test_timestamps_start_and_end():
    spec = OffsetSpec("timestamp", timestamp=1234)
    assert PL.timestamp_queries(spec, [A0, A1]) == {A0: 1234, A1: 1234}
    found = {A0: 40, A1: None}
    with pytest.raises(PlanningError, match="No offset matched from request of topic-partition a-1 "
                                            "and timestamp 1234."):
        resolve_offsets(spec, [A0, A1], earliest=EARLY, latest=LATE, by_timestamp=found)
    assert resolve_offsets(spec, [A0, A1], earliest=EARLY, latest=LATE, by_timestamp=found,
                           timestamp_strategy="latest") == {A0: 40, A1: 50}
    # An end with no record that recent is the partition's end.
    assert resolve_offsets(spec, [A0, A1], earliest=EARLY, latest=LATE, by_timestamp=found,
                           role="end") == {A0: 40, A1: 50}


def test_plan_ranges_data_loss_and_reversed():
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        plan_ranges({A0: 5}, {A0: 100}, earliest=EARLY)
    assert plan_ranges({A0: 5}, {A0: 100}, earliest=EARLY, fail_on_data_loss=False) == [
        OffsetRange("a", 0, 10, 100)]
    with pytest.raises(PlanningError, match="Beginning offset 60 is after the ending offset 50"):
        plan_ranges({A1: 60}, {A1: 50}, earliest=EARLY)
    assert plan_ranges({A0: 100, A1: 0}, {A0: 100, A1: 0}, earliest=EARLY) == []


@pytest.mark.parametrize("sizes, minp", [([1000], 7), ([10, 990], 5), ([3, 3, 3], 8), ([5], 5)])
def test_split_covers_exactly_and_reaches_min_partitions(sizes, minp):
    ranges = [OffsetRange("t", i, 100, 100 + s) for i, s in enumerate(sizes)]
    out = split_ranges(ranges, minp)
    assert len(out) >= minp
    for r in ranges:  # consecutive, non-empty, covering [start, end) exactly
        pieces = [x for x in out if x.partition == r.partition]
        assert pieces[0].start == r.start and pieces[-1].end == r.end
        assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
        assert all(p.size > 0 for p in pieces)


def test_split_never_splits_when_enough_ranges():
    ranges = [OffsetRange("t", i, 0, 1000) for i in range(4)]
    assert split_ranges(ranges, 3) == ranges and split_ranges(ranges, None) == ranges


def test_rate_limit_prorates_and_never_starves():
    start = {A0: 0, A1: 0}
    end = rate_limit(start, {A0: 1000, A1: 1}, 100)
    assert end[A1] == 1 and end[A0] == 99
    assert rate_limit(start, {A0: 30, A1: 20}, None) == {A0: 30, A1: 20}
    # successive triggers eventually reach the end
    cur, latest, steps = dict(start), {A0: 1000, A1: 7}, 0
    while cur != latest:
        cur, steps = rate_limit(cur, latest, 100), steps + 1
    assert steps <= 12


def test_checkpoint_json_roundtrip():
    offs = {("t", 10): 5, ("t", 2): 7, ("u", 0): 0}
    j = offsets_to_json(offs)
    assert all(isinstance(k, str) for parts in j.values() for k in parts)
    assert offsets_from_json(j) == offs
