"""The leader-epoch cache (fastkafka/log/leader_epochs.py): the checkpoint file, the assign rules,
the OffsetForLeaderEpoch answers, and truncation from either end."""
from __future__ import annotations

import itertools
import logging
import os
import threading

import pytest

from fastkafka.log import leader_epochs
from fastkafka.log.leader_epochs import CHECKPOINT, LeaderEpochCache


def cache_with(tmp_path, *entries):
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=0)
    for epoch, start in entries:
        assert cache.assign(epoch, start)
    return cache


def file_text(tmp_path) -> str:
    return (tmp_path / CHECKPOINT).read_text()


def write_file(tmp_path, text: str) -> None:
    (tmp_path / CHECKPOINT).write_text(text)


def inode(tmp_path) -> int:
    """Every rewrite renames a new file into place, so an unchanged inode means no rewrite."""
    return os.stat(tmp_path / CHECKPOINT).st_ino


# -- the checkpoint file --------------------------------------------------------------------------

def test_missing_file_is_an_empty_cache(tmp_path):
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=0)
    assert cache.entries() == []
    assert cache.latest_epoch() == -1
    assert cache.latest_entry() is None
    assert not (tmp_path / CHECKPOINT).exists()      # nothing to record, nothing written


def test_file_is_kafkas_layout_and_round_trips(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (3, 1200))
    assert file_text(tmp_path) == "0\n2\n0 0\n3 1200\n"
    again = LeaderEpochCache(str(tmp_path), log_end_offset=1500)
    assert again.entries() == [(0, 0), (3, 1200)]
    assert again.latest_epoch() == 3
    assert again.latest_entry() == (3, 1200)
    assert again.earliest_entry() == (0, 0)
    assert cache.entries() == again.entries()


def test_reads_a_file_written_by_kafka(tmp_path):
    write_file(tmp_path, "0\n3\n1 0\n4 57\n9 3000\n")
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=5000)
    assert cache.entries() == [(1, 0), (4, 57), (9, 3000)]
    assert file_text(tmp_path) == "0\n3\n1 0\n4 57\n9 3000\n"   # unchanged: not rewritten


def test_write_is_atomic_and_leaves_no_tmp_file(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (1, 10), (2, 20))
    cache.truncate_from_end(15)
    cache.truncate_from_start(5)
    assert sorted(os.listdir(tmp_path)) == [CHECKPOINT]
    assert file_text(tmp_path) == "0\n2\n0 5\n1 10\n"


def test_a_stale_tmp_file_is_replaced_not_read(tmp_path):
    (tmp_path / (CHECKPOINT + ".tmp")).write_text("garbage")
    cache = cache_with(tmp_path, (2, 7))
    assert sorted(os.listdir(tmp_path)) == [CHECKPOINT]
    assert LeaderEpochCache(str(tmp_path), log_end_offset=100).entries() == [(2, 7)]
    assert cache.entries() == [(2, 7)]


def test_write_fsyncs_the_file_and_the_directory(tmp_path, monkeypatch):
    synced_dirs = []
    monkeypatch.setattr(leader_epochs, "fsync_dir", synced_dirs.append)
    fsyncs = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    cache_with(tmp_path, (0, 0))
    assert len(fsyncs) == 1
    assert synced_dirs == [str(tmp_path)]


@pytest.mark.parametrize("text", [
    "",                              # empty
    "1\n1\n0 0\n",                   # unknown version
    "0\n",                           # no count
    "0\n2\n0 0\n",                   # fewer entries than counted
    "0\n1\n0 0\n3 1200\n",           # more entries than counted
    "0\n1\n0\n",                     # one field
    "0\n1\n0 0 0\n",                 # three fields
    "0\n1\nzero 0\n",                # not a number
    "0\n1\n-2 5\n",                  # negative epoch
    "0\n1\n2 -5\n",                  # negative offset
    "0\nx\n",                        # bad count
])
def test_malformed_file_gives_an_empty_cache_and_a_warning(tmp_path, caplog, text):
    write_file(tmp_path, text)
    with caplog.at_level(logging.WARNING, logger="fastkafka.log"):
        cache = LeaderEpochCache(str(tmp_path), log_end_offset=5000)
    assert cache.entries() == []
    assert cache.latest_epoch() == -1
    assert any("malformed" in r.getMessage() for r in caplog.records)
    assert all(r.name.startswith("fastkafka.log") for r in caplog.records)
    assert cache.assign(4, 100)                      # and it works from there
    assert file_text(tmp_path) == "0\n1\n4 100\n"


def test_undecodable_file_gives_an_empty_cache(tmp_path, caplog):
    (tmp_path / CHECKPOINT).write_bytes(b"\xff\xfe\x00garbage")
    with caplog.at_level(logging.WARNING, logger="fastkafka.log"):
        cache = LeaderEpochCache(str(tmp_path), log_end_offset=5000)
    assert cache.entries() == []
    assert caplog.records


def test_trailing_blank_lines_are_tolerated(tmp_path):
    write_file(tmp_path, "0\n1\n3 40\n\n")
    assert LeaderEpochCache(str(tmp_path), log_end_offset=100).entries() == [(3, 40)]


def test_non_monotonic_file_entries_go_through_the_assign_rules(tmp_path, caplog):
    write_file(tmp_path, "0\n3\n0 0\n5 100\n2 200\n")     # epoch 2 after 5: ignored
    with caplog.at_level(logging.WARNING, logger="fastkafka.log"):
        cache = LeaderEpochCache(str(tmp_path), log_end_offset=1000)
    assert cache.entries() == [(0, 0), (5, 100)]
    assert caplog.records
    assert file_text(tmp_path) == "0\n2\n0 0\n5 100\n"    # the repaired cache is written


# -- load-time truncation by the log end offset ---------------------------------------------------

def test_load_drops_entries_starting_at_or_after_the_log_end(tmp_path):
    write_file(tmp_path, "0\n4\n0 0\n2 100\n3 200\n5 300\n")
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=200)
    assert cache.entries() == [(0, 0), (2, 100)]            # 3@200 starts at the end: gone too
    assert file_text(tmp_path) == "0\n2\n0 0\n2 100\n"


def test_load_keeps_entries_before_the_log_end(tmp_path):
    write_file(tmp_path, "0\n2\n0 0\n2 100\n")
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=101)
    assert cache.entries() == [(0, 0), (2, 100)]


def test_load_of_an_empty_log_drops_everything(tmp_path):
    write_file(tmp_path, "0\n2\n0 0\n2 100\n")
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=0)
    assert cache.entries() == []
    assert file_text(tmp_path) == "0\n0\n"


# -- assign ---------------------------------------------------------------------------------------

def test_assign_appends_higher_epochs(tmp_path):
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=0)
    assert cache.assign(0, 0) is True
    assert cache.assign(2, 50) is True
    assert cache.assign(7, 51) is True
    assert cache.entries() == [(0, 0), (2, 50), (7, 51)]
    assert cache.latest_epoch() == 7
    assert file_text(tmp_path) == "0\n3\n0 0\n2 50\n7 51\n"


def test_assign_of_the_latest_epoch_keeps_its_start_offset(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (3, 1200))
    before = inode(tmp_path)
    assert cache.assign(3, 1500) is False                  # later batch of the same epoch
    assert cache.assign(3, 1100) is False                  # even a lower offset does not move it
    assert cache.entries() == [(0, 0), (3, 1200)]
    assert file_text(tmp_path) == "0\n2\n0 0\n3 1200\n"
    assert inode(tmp_path) == before


def test_assign_of_a_lower_epoch_is_ignored_with_a_warning(tmp_path, caplog):
    cache = cache_with(tmp_path, (0, 0), (3, 1200))
    with caplog.at_level(logging.WARNING, logger="fastkafka.log"):
        assert cache.assign(2, 1300) is False
        assert cache.assign(0, 1400) is False
    assert cache.entries() == [(0, 0), (3, 1200)]
    assert file_text(tmp_path) == "0\n2\n0 0\n3 1200\n"
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_assign_of_a_higher_epoch_at_a_lower_offset_truncates_conflicting_entries(tmp_path, caplog):
    cache = cache_with(tmp_path, (0, 0), (2, 100), (4, 200), (5, 300))
    with caplog.at_level(logging.WARNING, logger="fastkafka.log"):
        assert cache.assign(6, 150) is True
    assert cache.entries() == [(0, 0), (2, 100), (6, 150)]
    assert file_text(tmp_path) == "0\n3\n0 0\n2 100\n6 150\n"
    assert any("conflicting" in r.getMessage() for r in caplog.records)


def test_assign_of_a_higher_epoch_at_the_same_offset_replaces_the_empty_epoch(tmp_path, caplog):
    cache = cache_with(tmp_path, (0, 0), (2, 100))
    with caplog.at_level(logging.WARNING, logger="fastkafka.log"):
        assert cache.assign(3, 100) is True                # epoch 2 wrote nothing
    assert cache.entries() == [(0, 0), (3, 100)]
    assert not caplog.records                              # expected, so no warning


def test_assign_rejects_negative_values(tmp_path):
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=0)
    with pytest.raises(ValueError):
        cache.assign(-1, 0)
    with pytest.raises(ValueError):
        cache.assign(0, -1)
    assert cache.entries() == []
    assert not (tmp_path / CHECKPOINT).exists()


# -- end_offset_for (OffsetForLeaderEpoch) --------------------------------------------------------

def test_end_offset_for_an_empty_cache_is_undefined(tmp_path):
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=0)
    assert cache.end_offset_for(0, log_end_offset=0) == (-1, -1)
    assert cache.end_offset_for(5, log_end_offset=100) == (-1, -1)


@pytest.mark.parametrize("requested, expected", [
    (-1, (-1, -1)),          # no epoch requested (UNDEFINED_EPOCH)
    (6, (6, 2000)),          # the latest epoch: ends at the log end offset
    (4, (4, 1800)),          # a cached epoch: ends where the next one starts
    (1, (1, 1200)),
    (2, (1, 1200)),          # not cached: the largest epoch below it, ending at the next start
    (3, (1, 1200)),
    (5, (4, 1800)),
    (0, (0, 100)),           # below the earliest epoch: Kafka answers the earliest start offset
    (7, (-1, -1)),           # above the latest epoch
    (100, (-1, -1)),
])
def test_end_offset_for(tmp_path, requested, expected):
    cache = cache_with(tmp_path, (1, 100), (4, 1200), (6, 1800))
    assert cache.end_offset_for(requested, log_end_offset=2000) == expected


def test_end_offset_for_a_single_epoch(tmp_path):
    cache = cache_with(tmp_path, (3, 0))
    assert cache.end_offset_for(3, log_end_offset=42) == (3, 42)
    assert cache.end_offset_for(2, log_end_offset=42) == (2, 0)
    assert cache.end_offset_for(4, log_end_offset=42) == (-1, -1)


# -- truncation -----------------------------------------------------------------------------------

def test_truncate_from_end_removes_entries_starting_at_or_after_the_offset(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 100), (4, 200), (5, 300))
    cache.truncate_from_end(200)
    assert cache.entries() == [(0, 0), (2, 100)]
    assert file_text(tmp_path) == "0\n2\n0 0\n2 100\n"
    assert cache.end_offset_for(2, log_end_offset=200) == (2, 200)    # 2 is the latest again


def test_truncate_from_end_past_every_entry_changes_nothing(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 100))
    before = inode(tmp_path)
    cache.truncate_from_end(101)
    cache.truncate_from_end(-1)                             # undefined: ignored
    assert cache.entries() == [(0, 0), (2, 100)]
    assert inode(tmp_path) == before


def test_truncate_from_end_to_zero_empties_the_cache(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 100))
    cache.truncate_from_end(0)
    assert cache.entries() == []
    assert cache.latest_epoch() == -1
    assert file_text(tmp_path) == "0\n0\n"


def test_truncate_from_start_moves_the_latest_older_entry_up(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 100), (4, 200), (5, 300))
    cache.truncate_from_start(250)
    assert cache.entries() == [(4, 250), (5, 300)]
    assert file_text(tmp_path) == "0\n2\n4 250\n5 300\n"
    assert cache.end_offset_for(4, log_end_offset=400) == (4, 300)


def test_truncate_from_start_at_an_entry_start_keeps_that_entry(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 100), (4, 200))
    cache.truncate_from_start(200)
    assert cache.entries() == [(4, 200)]
    assert file_text(tmp_path) == "0\n1\n4 200\n"


def test_truncate_from_start_past_every_entry_keeps_the_latest_epoch(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 100))
    cache.truncate_from_start(500)
    assert cache.entries() == [(2, 500)]
    assert file_text(tmp_path) == "0\n1\n2 500\n"


def test_truncate_from_start_before_every_entry_changes_nothing(tmp_path):
    cache = cache_with(tmp_path, (1, 100), (2, 200))
    before = inode(tmp_path)
    cache.truncate_from_start(50)
    cache.truncate_from_start(100)                          # the earliest already starts there
    assert cache.entries() == [(1, 100), (2, 200)]
    assert inode(tmp_path) == before


def test_clear_removes_entries_and_the_file(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 100))
    cache.clear()
    assert cache.entries() == []
    assert cache.latest_epoch() == -1
    assert os.listdir(tmp_path) == []
    assert LeaderEpochCache(str(tmp_path), log_end_offset=1000).entries() == []
    cache.clear()                                           # again: nothing to remove, no error
    assert cache.assign(3, 0)
    assert file_text(tmp_path) == "0\n1\n3 0\n"


def test_concurrent_assigns_and_reads_stay_consistent(tmp_path):
    cache = LeaderEpochCache(str(tmp_path), log_end_offset=0)
    errors = []

    def writer(k):
        for i in range(50):
            epoch = i * 4 + k
            cache.assign(epoch, epoch * 10)

    def reader():
        for _ in range(200):
            entries = cache.entries()
            if entries != sorted(entries) or len({e for e, _ in entries}) != len(entries):
                errors.append(entries)
            cache.end_offset_for(7, log_end_offset=10_000)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    entries = cache.entries()
    assert errors == []
    assert entries[-1] == (199, 1990)                      # the highest epoch always wins
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(entries))
    assert LeaderEpochCache(str(tmp_path), log_end_offset=10_000).entries() == entries
