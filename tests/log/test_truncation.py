"""Moving a log's start and end (fastkafka/log/truncation.py): a follower starting over at its
leader's log start (truncate_fully_and_start_at), following the leader's log start
(maybe_increment_log_start_offset), truncating below its own start, and retention bounded by
the high watermark -- each keeping segments, indexes, the leader-epoch cache, the producer
state and the high watermark consistent, across a reopen too."""
from __future__ import annotations

import os

import pytest

from fastkafka import errors
from fastkafka.log.leader_epochs import CHECKPOINT
from fastkafka.log.producer_state import ProducerStateManager
from fastkafka.records import build_batch, iter_batches


def leader_batch(base: int, n: int, epoch: int, ts: int = 1000, **kw) -> bytearray:
    """What a leader sends: offsets and epoch stamped, 50-byte values (a few per segment)."""
    return bytearray(build_batch([(b"k%d" % i, b"v" * 50, [], ts + i) for i in range(n)],
                                 base_offset=base, partition_leader_epoch=epoch, **kw))


def follower_with_history(make_log, **cfg):
    """A follower that copied offsets 0..29 in epochs 1 and 2 (idempotent producer 7 among
    them), committed up to 25, over several segments with producer snapshots."""
    cfg.setdefault("retention_ms", -1)     # the batches' timestamps are old: no time retention
    lg = make_log(segment_bytes=400, file_delete_delay_ms=0, **cfg)
    lg.high_watermark_follows_end = False
    seq = 0
    for base in range(0, 30, 3):
        epoch = 1 if base < 15 else 2
        lg.append_as_follower(leader_batch(base, 3, epoch, producer_id=7, producer_epoch=0, base_sequence=seq))
        seq += 3
    lg.update_high_watermark(25)
    assert len(lg.segments) > 3 and ProducerStateManager.snapshot_offsets(lg.dir)
    assert lg.leader_epochs.entries() == [(1, 0), (2, 15)]
    return lg


def offsets_of(lg, start: int) -> list[int]:
    """Base offsets of the batches from the one holding ``start`` to the log end."""
    out = []
    while start < lg.log_end_offset:
        got = list(iter_batches(lg.read(start, 1 << 20).read_bytes()))
        out += [b.base_offset for b in got]
        start = got[-1].base_offset + got[-1].last_offset_delta + 1
    return out


# --- truncate_fully_and_start_at ---------------------------------------------------------------

def test_start_over_past_the_end_drops_everything_and_continues_there(make_log, clock):
    lg = follower_with_history(make_log)
    old = lg.segments
    lg.truncate_fully_and_start_at(100)

    assert [s.base_offset for s in lg.segments] == [100]
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark, lg.recovery_point) == (100, 100, 100, 100)
    assert lg.leader_epochs.entries() == [] and not os.path.exists(os.path.join(lg.dir, CHECKPOINT))
    assert lg.describe_producers() == [] and ProducerStateManager.snapshot_offsets(lg.dir) == []
    assert lg.last_stable_offset == 100 and lg.first_unstable_offset is None
    assert all(s.log_path.endswith(".deleted") for s in old)
    with pytest.raises(errors.OffsetOutOfRangeError):
        lg.read(99, 1 << 20)
    assert lg.read(100, 1 << 20).length == 0
    lg.scheduler.run_due()                                   # file.delete.delay.ms 0: the files go
    assert sorted(os.listdir(lg.dir)) == ["00000000000000000100.log"]   # indexes open lazily

    # the leader's batches from its log start append as if the log had always started there,
    # epochs and producers recorded afresh (producer 7's sequence no longer known: accepted)
    lg.append_as_follower(leader_batch(100, 3, 5, ts=5000, producer_id=7, producer_epoch=0, base_sequence=300))
    lg.append_as_follower(leader_batch(103, 3, 6, ts=6000))
    assert lg.log_end_offset == 106 and lg.leader_epochs.entries() == [(5, 100), (6, 103)]
    assert [p[:3] for p in lg.describe_producers()] == [(7, 0, 302)]
    assert offsets_of(lg, 100) == [100, 103] and offsets_of(lg, 104) == [103]
    assert lg.offset_for_timestamp(6001) == (104, 6001)
    lg.update_high_watermark(106)
    assert lg.high_watermark == 106


def test_start_over_survives_a_reopen(make_log):
    lg = follower_with_history(make_log)
    lg.truncate_fully_and_start_at(100)
    lg.append_as_follower(leader_batch(100, 3, 5))
    lg.close()
    again = make_log(segment_bytes=400)
    assert (again.log_start_offset, again.log_end_offset) == (100, 103)
    assert again.leader_epochs.entries() == [(5, 100)]
    assert offsets_of(again, 100) == [100]


def test_start_over_at_an_existing_segments_base_offset(make_log):
    """The new segment takes the file names of an old one, renamed out of the way first; a
    reader holding a region of the old file still reads the old bytes."""
    lg = follower_with_history(make_log)
    held = lg.read(0, 1 << 20)
    before = held.read_bytes()
    lg.truncate_fully_and_start_at(0)
    assert [s.base_offset for s in lg.segments] == [0] and lg.log_end_offset == 0
    assert held.read_bytes() == before
    lg.append_as_follower(leader_batch(0, 2, 9))
    assert offsets_of(lg, 0) == [0] and lg.leader_epochs.entries() == [(9, 0)]


def test_start_over_below_the_log_start(make_log):
    lg = follower_with_history(make_log)
    lg.maybe_increment_log_start_offset(20)
    lg.truncate_fully_and_start_at(5)
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark) == (5, 5, 5)
    with pytest.raises(ValueError):
        lg.truncate_fully_and_start_at(-1)


def test_a_first_batch_holding_the_log_start_starts_the_segment_at_its_base(make_log):
    """DeleteRecords put the leader's log start inside a batch; the follower starting over there
    is sent the whole batch, beginning below its log end."""
    lg = follower_with_history(make_log)
    lg.truncate_fully_and_start_at(40)
    with pytest.raises(errors.ReplicaDivergedError):         # wholly below the start: refused
        lg.append_as_follower(leader_batch(36, 3, 4))
    info = lg.append_as_follower(leader_batch(39, 3, 4))
    assert info.base_offset == 39 and [s.base_offset for s in lg.segments] == [39]
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark) == (40, 42, 40)
    assert lg.leader_epochs.entries() == [(4, 40)] and offsets_of(lg, 40) == [39]   # as the leader's
    with pytest.raises(errors.OffsetOutOfRangeError):
        lg.read(39, 1 << 20)
    with pytest.raises(errors.ReplicaDivergedError):         # only into a log holding nothing
        lg.append_as_follower(leader_batch(41, 2, 4))
    lg.close()
    again = make_log(segment_bytes=400)
    assert (again.log_start_offset, again.log_end_offset) == (39, 42)   # no checkpoint here: the segment's base


# --- truncate_to below the log start, and at the end --------------------------------------------

def test_truncating_below_the_log_start_moves_it_down(make_log):
    lg = follower_with_history(make_log)
    second = lg.segments[1]                          # one batch a segment: offsets 3..5
    lg.maybe_increment_log_start_offset(4)           # inside it: it stays, the first goes
    assert lg.segments[0] is second and lg.log_start_offset == 4
    assert lg.leader_epochs.entries() == [(1, 4), (2, 15)]
    lg.truncate_to(3)                                # the leader's log ends there
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark) == (3, 3, 3)
    assert [s.base_offset for s in lg.segments] == [3] and lg.read(3, 1 << 20).length == 0
    assert lg.leader_epochs.entries() == []          # every entry started at or after 3
    lg.append_as_follower(leader_batch(3, 1, 4))
    assert offsets_of(lg, 3) == [3] and lg.leader_epochs.entries() == [(4, 3)]


def test_truncating_below_the_first_segment_starts_over(make_log):
    lg = follower_with_history(make_log)
    lg.maybe_increment_log_start_offset(lg.segments[2].base_offset)
    base = lg.segments[0].base_offset
    lg.truncate_to(base - 1)
    assert [s.base_offset for s in lg.segments] == [base - 1]
    assert (lg.log_start_offset, lg.log_end_offset) == (base - 1, base - 1)
    assert lg.leader_epochs.entries() == [] and lg.describe_producers() == []


def test_truncating_at_the_end_drops_an_empty_epoch_there(make_log):
    """This replica led briefly in epoch 3 and wrote nothing: as a follower again its entry at
    the log end conflicts with the new leader's epochs."""
    lg = follower_with_history(make_log)
    lg.leader_epochs.assign(3, lg.log_end_offset)
    lg.truncate_to(lg.log_end_offset)
    assert lg.log_end_offset == 30 and lg.leader_epochs.entries() == [(1, 0), (2, 15)]
    with pytest.raises(ValueError):
        lg.truncate_to(-1)


# --- maybe_increment_log_start_offset, and retention below the high watermark --------------------

def test_following_the_leaders_log_start(make_log):
    lg = follower_with_history(make_log)
    segs = lg.segments
    with pytest.raises(errors.OffsetOutOfRangeError):       # past the high watermark (25)
        lg.maybe_increment_log_start_offset(26)
    cut = segs[2].base_offset + 1
    assert lg.maybe_increment_log_start_offset(cut)
    assert not lg.maybe_increment_log_start_offset(cut)     # no move: nothing changes
    assert not lg.maybe_increment_log_start_offset(0)       # never back
    assert lg.log_start_offset == cut and lg.segments == segs[2:]   # wholly below it: deleted
    assert lg.leader_epochs.entries()[0] == (lg.leader_epochs.epoch_for_offset(cut), cut)
    assert lg.offset_for_timestamp(-2) == (cut, -1)
    with pytest.raises(errors.OffsetOutOfRangeError):
        lg.read(cut - 1, 1 << 20)
    assert lg.maybe_increment_log_start_offset(17)
    assert lg.leader_epochs.entries() == [(2, 17)]


def test_retention_never_passes_the_high_watermark(make_log, clock):
    lg = follower_with_history(make_log, retention_bytes=0, retention_ms=-1)
    lg.update_high_watermark(10)
    lg.delete_old_segments()
    assert lg.log_start_offset <= 10
    assert all(s.base_offset <= 10 for s in lg.segments[:1])
    assert lg.segments[1].base_offset > 10                   # the one holding offset 10 stays
    lg.update_high_watermark(30)
    lg.delete_old_segments()
    assert len(lg.segments) == 1 and lg.log_start_offset == lg.segments[0].base_offset


def test_delete_records_is_refused_past_the_high_watermark(make_log):
    lg = follower_with_history(make_log)
    with pytest.raises(errors.OffsetOutOfRangeError):
        lg.delete_records(26)
    with pytest.raises(errors.OffsetOutOfRangeError):
        lg.delete_records(-5)
    assert lg.delete_records(-1) == 25 == lg.log_start_offset
