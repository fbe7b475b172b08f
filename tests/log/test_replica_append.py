"""A follower's append (``Log.append_as_follower``): the leader's offsets, epochs and producer
state kept as they came, nothing re-stamped, and the high watermark left to replication."""
from __future__ import annotations

import pytest

from fastkafka import errors
from fastkafka.records import build_batch


def leader_batch(base: int, n: int, epoch: int, **kw) -> bytearray:
    return bytearray(build_batch([(b"k%d" % i, b"v%d" % i, [], 1000 + i) for i in range(n)],
                                 base_offset=base, partition_leader_epoch=epoch, **kw))


def test_offsets_epochs_and_bytes_are_kept(make_log):
    lg = make_log()
    lg.high_watermark_follows_end = False
    a, b = leader_batch(0, 3, 4), leader_batch(3, 2, 6)
    info = lg.append_as_follower(a + b)
    assert (info.base_offset, info.last_offset, lg.log_end_offset) == (0, 4, 5)
    assert lg.read(0, 1 << 20).read_bytes() == bytes(a + b)          # stored exactly as the leader sent it
    assert lg.leader_epochs.entries() == [(4, 0), (6, 3)]             # two epochs in one set: walked
    assert lg.high_watermark == 0                                      # replication moves it, not the append
    assert lg.update_high_watermark(4) == 4


def test_a_gap_is_kept_and_a_step_back_is_refused(make_log):
    lg = make_log()
    lg.append_as_follower(leader_batch(0, 2, 0))
    lg.append_as_follower(leader_batch(10, 1, 0))                      # compacted leader: offsets 2-9 gone
    assert lg.log_end_offset == 11
    with pytest.raises(errors.ReplicaDivergedError):
        lg.append_as_follower(leader_batch(5, 1, 0))
    with pytest.raises(errors.ReplicaDivergedError):                  # offsets within the set go back
        lg.append_as_follower(leader_batch(20, 2, 0) + leader_batch(20, 1, 0))
    assert lg.log_end_offset == 11


def test_a_fetch_cut_inside_its_last_batch_appends_the_whole_ones(make_log):
    lg = make_log()
    whole, cut = leader_batch(0, 2, 1), leader_batch(2, 3, 1)
    info = lg.append_as_follower(whole + cut[: len(cut) - 7])
    assert (info.last_offset, lg.log_end_offset) == (1, 2)
    assert lg.append_as_follower(cut[:20]) is None                     # nothing whole: nothing written
    assert lg.append_as_follower(cut[:70]) is None
    assert lg.log_end_offset == 2 and lg.leader_epochs.entries() == [(1, 0)]


def test_corrupt_bytes_from_the_leader_are_refused(make_log):
    lg = make_log()
    bad = leader_batch(0, 2, 1)
    bad[-1] ^= 0xFF
    with pytest.raises(errors.CorruptMessageError):
        lg.append_as_follower(bad)
    assert lg.log_end_offset == 0


def test_producer_state_is_rebuilt_from_the_copied_batches(make_log):
    lg = make_log()
    lg.append_as_follower(leader_batch(0, 3, 0, producer_id=42, producer_epoch=1, base_sequence=0))
    assert lg.describe_producers()[0][:3] == (42, 1, 2)
    # the follower, once leader, answers the producer's retry of that batch as a duplicate
    retry = bytearray(build_batch([(b"k%d" % i, b"v%d" % i, [], 1000 + i) for i in range(3)],
                                  producer_id=42, producer_epoch=1, base_sequence=0))
    assert lg.append(retry).base_offset == 0 and lg.log_end_offset == 3


def test_truncation_drops_epochs_past_the_cut(make_log):
    lg = make_log()
    lg.append_as_follower(leader_batch(0, 2, 1) + leader_batch(2, 2, 2))
    lg.truncate_to(2)
    assert lg.log_end_offset == 2 and lg.leader_epochs.entries() == [(1, 0)]
    assert lg.leader_epochs.end_offset_for(1, lg.log_end_offset) == (1, 2)


def test_high_watermark_follows_the_end_again_when_alone(make_log):
    lg = make_log()
    lg.high_watermark_follows_end = False
    lg.append(leader_batch(0, 3, 0))
    assert lg.high_watermark == 0
    lg.high_watermark_follows_end = True
    assert lg.high_watermark == 3
    lg.append(leader_batch(0, 1, 0))
    assert lg.high_watermark == 4
