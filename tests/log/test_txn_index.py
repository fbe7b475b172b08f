"""The aborted-transaction index (``%020d.txnindex``): Kafka's 34-byte entries, created lazily,
torn tails cut on load, truncation, the fetch-range search, and the file following its segment
through retention, deletion, truncation and compaction."""
import os

import pytest

from fastkafka import errors
from fastkafka.cli.dump_log import main as dump_log
from fastkafka.log.cleaner import LogCleaner
from fastkafka.log.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex, iter_entries
from fastkafka.records import build_batch

from .conftest import batch, clean_crashing_at, swap_steps_of


def txn_batch(pid, seq, keys=(b"k",), epoch=0, ts=1000):
    return bytearray(build_batch([(k, b"v-" + k, [], ts) for k in keys], producer_id=pid,
                                 producer_epoch=epoch, base_sequence=seq, is_transactional=True))


def kafka_entry(pid, first, last, lso, version=0):
    """Kafka's AbortedTxn, written field by field (version int16, then four int64, big-endian)."""
    return (version.to_bytes(2, "big", signed=True) + pid.to_bytes(8, "big", signed=True)
            + first.to_bytes(8, "big", signed=True) + last.to_bytes(8, "big", signed=True)
            + lso.to_bytes(8, "big", signed=True))


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def txn_files(dir):
    return sorted(n for n in os.listdir(dir) if n.endswith(".txnindex"))


# --- the file ---
def test_entries_are_kafkas_34_byte_layout(tmp_path):
    idx = TransactionIndex(str(tmp_path / "00000000000000000000.txnindex"))
    idx.append(AbortedTxn(7, 3, 9, 10))
    idx.append(AbortedTxn(-2, 1 << 40, (1 << 40) + 5, 4))
    data = (tmp_path / "00000000000000000000.txnindex").read_bytes()
    assert ENTRY_SIZE == 34
    assert data == kafka_entry(7, 3, 9, 10) + kafka_entry(-2, 1 << 40, (1 << 40) + 5, 4)
    # and it reads back from a file written the other way
    (tmp_path / "x.txnindex").write_bytes(kafka_entry(1, 2, 3, 4) + kafka_entry(5, 6, 7, 8))
    assert TransactionIndex(str(tmp_path / "x.txnindex")).entries() == [
        AbortedTxn(1, 2, 3, 4), AbortedTxn(5, 6, 7, 8)]


def test_file_is_created_by_the_first_entry_only(tmp_path):
    path = str(tmp_path / "00000000000000000005.txnindex")
    idx = TransactionIndex(path)
    assert idx.entries() == [] and not os.path.exists(path)
    idx.truncate_to(0)
    idx.flush()
    assert not os.path.exists(path)
    idx.append(AbortedTxn(1, 5, 6, 7))
    assert os.path.getsize(path) == 34


def test_a_torn_file_is_cut_to_whole_entries_on_load(tmp_path):
    path = tmp_path / "t.txnindex"
    path.write_bytes(kafka_entry(1, 0, 4, 5) + kafka_entry(2, 1, 6, 7) + b"\x00\x00\x00\x00\x00\x00\x00\x02\x00")
    idx = TransactionIndex(str(path))
    assert idx.entries() == [AbortedTxn(1, 0, 4, 5), AbortedTxn(2, 1, 6, 7)]
    assert path.stat().st_size == 68
    idx.append(AbortedTxn(3, 8, 9, 10))              # appends land after the whole entries
    assert TransactionIndex(str(path)).entries()[-1] == AbortedTxn(3, 8, 9, 10)
    path.write_bytes(b"\x00" * 20)                     # less than one entry: nothing left
    assert TransactionIndex(str(path)).entries() == [] and not path.exists()


def test_an_unknown_entry_version_is_refused(tmp_path):
    path = tmp_path / "t.txnindex"
    path.write_bytes(kafka_entry(1, 0, 4, 5, version=1))
    with pytest.raises(errors.KafkaStorageError, match="version 1"):
        TransactionIndex(str(path)).entries()


def test_entries_must_come_in_marker_order(tmp_path):
    idx = TransactionIndex(str(tmp_path / "t.txnindex"))
    idx.append(AbortedTxn(1, 0, 10, 11))
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(2, 3, 10, 11))
    assert len(idx.entries()) == 1 and os.path.getsize(idx.path) == 34


def test_truncate_to_drops_entries_from_a_marker_offset_and_the_empty_file(tmp_path):
    idx = TransactionIndex(str(tmp_path / "t.txnindex"))
    for i in range(4):
        idx.append(AbortedTxn(i, 10 * i, 10 * i + 5, 10 * i + 6))     # markers at 5, 15, 25, 35
    held = idx.entries()
    idx.truncate_to(16)
    assert [e.last_offset for e in idx.entries()] == [5, 15]
    assert os.path.getsize(idx.path) == 68
    assert len(held) == 4                 # a reader's list is not changed under it
    assert TransactionIndex(idx.path).entries() == idx.entries()
    idx.truncate_to(15)
    assert [e.last_offset for e in idx.entries()] == [5]
    idx.truncate_to(0)
    assert idx.entries() == [] and not os.path.exists(idx.path)


def test_collect_follows_kafkas_search(tmp_path):
    idx = TransactionIndex(str(tmp_path / "t.txnindex"))
    # P1 [0..10], P2 [5..20] (P3 ongoing from 12 when it was aborted), P3 [12..30], P4 [40..50]
    entries = [AbortedTxn(1, 0, 10, 5), AbortedTxn(2, 5, 20, 12), AbortedTxn(3, 12, 30, 31),
               AbortedTxn(4, 40, 50, 51)]
    for e in entries:
        idx.append(e)
    assert idx.collect(0, 5) == ([entries[0]], True)          # stops at P1's lso 5 >= 5
    assert idx.collect(0, 6) == ([entries[0], entries[1]], True)   # P2's lso 12 >= 6
    assert idx.collect(11, 13) == ([entries[1], entries[2]], True)  # P1 ended before 11
    assert idx.collect(21, 45) == ([entries[2], entries[3]], True)
    assert idx.collect(31, 40) == ([], True)                   # P4 starts at 40: not in [31, 40)
    assert idx.collect(51, 60) == ([], False)                  # nothing here: look further
    assert idx.collect(45, 100) == ([entries[3]], False)


def test_iter_entries_reads_whole_entries_without_changing_anything(tmp_path):
    data = kafka_entry(1, 2, 3, 4) + b"\x01\x02"
    assert list(iter_entries(data)) == [(0, AbortedTxn(1, 2, 3, 4))]


# --- the index of a log ---
def test_a_log_without_aborts_has_no_txnindex_files(make_log):
    log = make_log(segment_bytes=300)
    for i in range(6):
        log.append(txn_batch(1, i))
        log.append_marker(1, 0, 0, commit=True, leader_epoch=0)
        log.append(batch(1))
    log.append_marker(2, 0, 0, commit=False, leader_epoch=0)    # aborts nothing here
    assert len(log.segments) > 2
    assert txn_files(log.dir) == []
    log.close()
    assert txn_files(log.dir) == []


def test_an_abort_is_written_to_the_segment_holding_its_marker(make_log):
    log = make_log()
    log.append(txn_batch(1, 0))                     # 0
    log.roll()
    log.append(batch(1))                            # 1
    log.append(txn_batch(2, 0))                     # 2
    log.roll()
    m1 = log.append_marker(1, 0, 4, commit=False, leader_epoch=0).base_offset   # 3
    m2 = log.append_marker(2, 0, 4, commit=False, leader_epoch=0).base_offset   # 4
    assert (m1, m2) == (3, 4)
    assert txn_files(log.dir) == ["%020d.txnindex" % 3]
    data = read_file(os.path.join(log.dir, "%020d.txnindex" % 3))
    # P1's abort: P2 still ongoing from 2 -> lso 2; P2's: nothing else ongoing -> marker + 1
    assert data == kafka_entry(1, 0, 3, 2) + kafka_entry(2, 2, 4, 5)
    assert log.aborted_transactions(0, 5) == [(1, 0), (2, 2)]
    log.close()


def test_retention_and_log_deletion_take_the_index_with_the_segment(make_log, clock):
    log = make_log(retention_ms=1000, file_delete_delay_ms=0)
    for seq in range(2):      # two segments, each with an aborted transaction and its marker
        log.append(txn_batch(1, seq, ts=clock.now))
        log.append_marker(1, 0, 0, commit=False, leader_epoch=0, timestamp=clock.now)
        log.roll()
    log.append(txn_batch(2, 0, ts=clock.now + 10_000))
    log.append_marker(2, 0, 0, commit=False, leader_epoch=0, timestamp=clock.now + 10_000)
    assert txn_files(log.dir) == ["%020d.txnindex" % o for o in (0, 2, 4)]
    clock.advance(5000)
    assert log.delete_old_segments() == 2
    names = os.listdir(log.dir)
    assert sorted(n for n in names if ".txnindex" in n) == [
        "%020d.txnindex.deleted" % 0, "%020d.txnindex.deleted" % 2, "%020d.txnindex" % 4]
    log.scheduler.run_due()
    assert txn_files(log.dir) == ["%020d.txnindex" % 4]
    assert not [n for n in os.listdir(log.dir) if n.endswith(".deleted")]
    assert log.aborted_transactions(0, log.log_end_offset) == [(2, 4)]
    log.delete()
    log.scheduler.run_due()
    assert not os.path.exists(log.dir)
    assert not [n for n in os.listdir(os.path.dirname(log.dir)) if n.startswith("t-0")]


def test_truncation_cuts_the_index_and_the_replay_does_not_duplicate(make_log):
    log = make_log()
    log.append(txn_batch(1, 0))                                       # 0
    log.append_marker(1, 0, 0, commit=False, leader_epoch=0)          # 1
    log.append(txn_batch(1, 1))                                       # 2
    log.append_marker(1, 0, 0, commit=False, leader_epoch=0)          # 3
    log.append(txn_batch(1, 2))                                       # 4
    log.append_marker(1, 0, 0, commit=False, leader_epoch=0)          # 5
    path = os.path.join(log.dir, "%020d.txnindex" % 0)
    assert os.path.getsize(path) == 3 * 34
    log.truncate_to(3)
    assert read_file(path) == kafka_entry(1, 0, 1, 2)
    assert log.aborted_transactions(0, 10) == [(1, 0)]
    # P1's transaction from offset 2 is ongoing again (its marker is gone)
    assert log.first_unstable_offset == 2 and log.last_stable_offset == 2
    log.append_marker(1, 0, 0, commit=False, leader_epoch=0)          # 3 again
    assert read_file(path) == kafka_entry(1, 0, 1, 2) + kafka_entry(1, 2, 3, 4)
    log.truncate_to(1)
    assert not os.path.exists(path) and log.aborted_transactions(0, 10) == []
    assert log.last_stable_offset == 0
    log.close()


def test_dump_log_prints_markers_and_index_entries(make_log, capsys):
    log = make_log()
    log.append(txn_batch(1, 0))
    log.append_marker(1, 0, 7, commit=False, leader_epoch=0)
    log.close()
    seg = log.segments[0]
    assert dump_log(["--print-data-log", seg.log_path, seg.txn_index.path]) == 0
    out = capsys.readouterr().out
    assert "| offset: 1 endTxnMarker: ABORT coordinatorEpoch: 7" in out
    assert "version: 0 producerId: 1 firstOffset: 0 lastOffset: 1 lastStableOffset: 2" in out
    with open(seg.txn_index.path, "ab") as f:
        f.write(b"\x00\x01")
    assert dump_log([seg.txn_index.path]) == 1
    assert os.path.getsize(seg.txn_index.path) == 36      # the tool changes nothing


def _aborting_log(make_log, clock, dirname):
    """A compacted log of three segments, each with an aborted transaction whose marker is in
    the next segment, and committed data overwriting nothing."""
    log = make_log(dirname=dirname, cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0)
    seq = 0
    for i in range(3):
        log.append(txn_batch(1, seq, keys=[b"a%d" % i, b"shared"]))
        seq += 2
        log.append(batch(1, key=b"plain%d" % i))
        log.roll()
        log.append_marker(1, 0, 0, commit=False, leader_epoch=0)
        log.append(batch(1, key=b"shared"))
    log.roll()
    log.append(batch(1, key=b"tail"))
    return log


def test_compaction_merges_the_indexes_and_keeps_every_entry(make_log, clock):
    log = _aborting_log(make_log, clock, "c-0")
    before = log.collect_aborted_transactions(0, log.log_end_offset)
    assert len(before) == 3 and len(txn_files(log.dir)) == 3
    assert LogCleaner(clock=clock).clean(log, force=True)
    assert len(log.segments) == 2
    assert txn_files(log.dir) == ["%020d.txnindex" % 0]
    assert log.collect_aborted_transactions(0, log.log_end_offset) == before
    # ... and the aborted records are gone, while the committed "shared" survives
    from .test_cleaner import all_batches
    keys = [r.key for b in all_batches(log) if not b.is_control for r in b.records()]
    assert b"a0" not in keys and b"a1" not in keys and b"shared" in keys
    log.close()
    again = make_log(dirname="c-0", clean_shutdown=False,
                     cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0)
    assert again.collect_aborted_transactions(0, again.log_end_offset) == before
    again.close()


def test_a_crash_at_each_step_of_a_swap_with_transaction_indexes(make_log, clock, monkeypatch):
    probe = _aborting_log(make_log, clock, "probe-0")
    steps = swap_steps_of(probe, clock, monkeypatch)
    assert "txnindex" in steps and "txnindex-renamed" in steps
    expected = probe.collect_aborted_transactions(0, probe.log_end_offset)
    probe.close()
    for k, name in enumerate(steps):
        log = _aborting_log(make_log, clock, f"k{k}-0")
        clean_crashing_at(log, clock, monkeypatch, k)
        reopened = make_log(dirname=f"k{k}-0", clean_shutdown=False,
                            cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0)
        committed = k >= steps.index("committed")
        assert reopened.collect_aborted_transactions(0, reopened.log_end_offset) == expected, name
        assert len(txn_files(reopened.dir)) == (1 if committed else 3), name
        assert not [n for n in os.listdir(reopened.dir) if n.endswith((".cleaned", ".swap", ".replaced"))]
        # every entry sits in the segment holding its marker
        for seg in reopened.segments:
            for e in seg.txn_index.entries():
                assert seg.base_offset <= e.last_offset
        reopened.close()
        del log
