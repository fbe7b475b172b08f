"""A leader's replication bookkeeping (server/partition.py) over a real Log."""
from __future__ import annotations

import threading

import pytest

from fastkafka import errors
from fastkafka.log import Log
from fastkafka.records import build_batch
from fastkafka.server.partition import FOLLOWER, LEADER, Partition, acks_all_code, append_as_leader


def append(lg, n: int) -> None:
    lg.append(bytearray(build_batch([(b"k", b"v", [], 1000)] * n)))


def leader(tmp_path, isr=(1, 2, 3)) -> Partition:
    lg = Log(str(tmp_path / "t-0"))
    p = Partition("t", 0, 1, lg)
    p.become_leader(epoch=5, replicas=(1, 2, 3), isr=isr, version=0, now=0)
    return p


def test_high_watermark_is_the_smallest_end_over_the_isr(tmp_path):
    p = leader(tmp_path)
    lg = p.log
    assert lg.leader_epochs.entries() == [(5, 0)] and not lg.high_watermark_follows_end
    append(lg, 10)
    assert lg.high_watermark == 0                        # nobody has it yet
    assert p.follower_fetched(2, 10, now=1) is False     # one of two followers
    assert p.follower_fetched(3, 6, now=1) is True and lg.high_watermark == 6
    assert p.follower_fetched(3, 10, now=2) is True and lg.high_watermark == 10
    assert p.follower_fetched(3, 4, now=3) is False and lg.high_watermark == 10   # never back
    assert p.follower_fetched(9, 10, now=3) is False     # not a replica of this partition



def test_low_watermark_is_the_smallest_log_start_over_live_replicas(tmp_path):
    p = leader(tmp_path, isr=(1, 2))                     # 3 is out of the ISR but counts while alive
    lg = p.log
    append(lg, 10)
    p.follower_fetched(2, 10, now=1)
    lg.delete_records(6)
    assert p.low_watermark(live={1, 2, 3}) == -1         # nobody said where their logs start
    assert p.follower_log_start(2, 6) is True and p.follower_log_start(2, 6) is False
    assert p.follower_log_start(3, 2) is True
    assert p.low_watermark(live={1, 2, 3}) == 2
    assert p.low_watermark(live={1, 2}) == 6             # a dead broker holds nothing back
    assert p.follower_log_start(9, 0) is False           # not a replica

def test_lagging_follower_leaves_and_a_caught_up_one_rejoins(tmp_path):
    p = leader(tmp_path)
    append(p.log, 4)
    p.follower_fetched(2, 4, now=1_000)                  # caught up
    p.follower_fetched(3, 1, now=1_000)                  # behind since the start of the term (0)
    assert p.isr_to_shrink(now=1_500, lag_ms=1_000) == (1, 2)
    p.isr_written((1, 2), version=1)
    assert p.isr_to_expand() is None and p.log.high_watermark == 4   # the shrink let it move
    p.follower_fetched(3, 2, now=1_600)                  # read all there was at its last fetch? no: behind
    assert p.isr_to_expand() is None
    p.follower_fetched(3, 4, now=1_700)
    assert p.isr_to_expand() == (1, 2, 3)


def test_follower_fetching_from_where_the_log_ended_at_its_last_fetch_is_caught_up(tmp_path):
    p = leader(tmp_path)                                 # the term starts at 0: everyone caught up then
    append(p.log, 2)
    p.follower_fetched(2, 0, now=100)                    # behind; the log ended at 2 then
    append(p.log, 3)                                     # the end moves on to 5
    p.follower_fetched(2, 2, now=900)                    # it read all there was at 100: caught up as of 100
    assert p.isr_to_shrink(now=1_050, lag_ms=1_000) == (1, 2)   # 3 never fetched since 0; 2 counts from 100
    assert p.isr_to_shrink(now=1_150, lag_ms=1_000) == (1,)


def test_alone_in_the_isr_every_append_commits(tmp_path):
    p = leader(tmp_path, isr=(1,))
    append(p.log, 3)
    assert p.log.high_watermark_follows_end and p.log.high_watermark == 3


def test_becoming_follower_hands_the_high_watermark_to_replication(tmp_path):
    p = leader(tmp_path, isr=(1,))
    assert p.become_follower(2, 6, (1, 2, 3), (2, 3), version=3) is True
    assert (p.role, p.leader, p.leader_epoch) == (FOLLOWER, 2, 6)
    assert p.become_follower(2, 6, (1, 2, 3), (2, 3), version=4) is False   # same leader and epoch
    append(p.log, 2)
    assert p.log.high_watermark == 0 and not p.log.high_watermark_follows_end
    assert p.follower_fetched(3, 2, now=1) is False      # a follower tracks nobody
    p.become_leader(7, (1, 2, 3), (1,), version=5, now=10)
    assert p.role == LEADER and p.log.leader_epochs.entries() == [(5, 0), (7, 2)]


def test_a_follower_removed_by_the_controller_needs_a_new_fetch_to_rejoin(tmp_path):
    p = leader(tmp_path)
    append(p.log, 3)
    p.follower_fetched(2, 3, now=10)
    p.follower_fetched(3, 3, now=10)
    p.become_leader(epoch=5, replicas=(1, 2, 3), isr=(1, 3), version=1, now=20)   # 2's broker died
    assert p.isr_to_expand() is None          # its last position does not bring a dead broker back
    p.follower_fetched(2, 3, now=30)          # it is back and caught up
    assert p.isr_to_expand() == (1, 2, 3)


def test_a_follower_without_a_zookeeper_session_does_not_rejoin(tmp_path):
    """KIP-841: a broker the controller dropped for its lost session keeps fetching (it has not
    noticed yet); the leader must not re-admit it until it is registered again."""
    p = leader(tmp_path)
    append(p.log, 3)
    p.become_leader(epoch=5, replicas=(1, 2, 3), isr=(1, 3), version=1, now=20)
    p.follower_fetched(2, 3, now=30)
    assert p.isr_to_expand(live={1, 3}) is None
    assert p.isr_to_expand(live={1, 2, 3}) == (1, 2, 3)


def test_a_role_change_waits_for_a_leader_append_in_progress(tmp_path):
    """The append that found the replica leading lands before it follows (and may truncate)."""
    p = leader(tmp_path, isr=(1,))
    changed = threading.Event()
    with p.leading() as epoch:
        assert epoch == 5
        t = threading.Thread(target=lambda: (p.become_follower(2, 6, (1, 2, 3), (2,), 1), changed.set()))
        t.start()
        assert not changed.wait(0.3)                     # held off while this write runs
        append(p.log, 3)
    assert changed.wait(10) and p.role == FOLLOWER
    t.join()
    with pytest.raises(errors.NotLeaderOrFollowerError):
        append_as_leader(p.log, p, bytearray(build_batch([(b"k", b"v", [], 1)])), acks=1)
    assert p.log.log_end_offset == 3


def test_an_acks_all_write_fails_once_leadership_moved_on_even_if_it_came_back(tmp_path):
    """A write waits in the epoch it was stamped with: won back in a later epoch, the log may have
    been truncated below it, so the high watermark passing its offset acknowledges nothing."""
    p = leader(tmp_path, isr=(1, 2))
    info, w = append_as_leader(p.log, p, bytearray(build_batch([(b"k", b"v", [], 1)] * 2)), acks=-1)
    assert (w.required, w.epoch, w.key) == (info.last_offset + 1, 5, ("t", 0)) and acks_all_code(w) is None
    p.become_leader(epoch=7, replicas=(1, 2, 3), isr=(1, 2), version=1, now=0)
    p.follower_fetched(2, 2, now=1)
    assert p.log.high_watermark == 2
    assert acks_all_code(w) == errors.NotLeaderOrFollowerError.code
    _, w7 = append_as_leader(p.log, p, bytearray(build_batch([(b"k", b"v", [], 1)])), acks=-1)
    p.follower_fetched(2, 3, now=2)
    assert acks_all_code(w7) == 0
