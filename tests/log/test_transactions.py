"""Transactions in the log (KIP-98): control batches only from the broker, markers and their
fencing, producer transaction state, the last stable offset, aborted transactions for fetches,
snapshots, truncation, recovery after a crash between markers, compaction and DescribeProducers."""
import json
import os
import shutil

import pytest

from fastkafka import errors
from fastkafka.log.cleaner import LogCleaner
from fastkafka.log.producer_state import ProducerStateManager
from fastkafka.records import (build_batch, build_control_batch, end_txn_marker, iter_batches,
                               read_header)

from .conftest import batch
from .test_cleaner import all_batches


def txn(pid, seq, n=1, epoch=0, keys=None, ts=1000, transactional=True):
    keys = keys or [b"k%d" % i for i in range(n)]
    return bytearray(build_batch([(k, b"v-" + k, [], ts) for k in keys], producer_id=pid,
                                 producer_epoch=epoch, base_sequence=seq,
                                 is_transactional=transactional))


def idem(pid, seq, n=1, epoch=0, keys=None):
    return txn(pid, seq, n, epoch, keys, transactional=False)


def marker(log, pid, commit, epoch=0, coordinator_epoch=0, leader_epoch=0):
    return log.append_marker(pid, epoch, coordinator_epoch, commit, leader_epoch).base_offset


def ongoing(log):
    return {p.producer_id: p.current_txn_start_offset for p in log.describe_producers()
            if p.current_txn_start_offset >= 0}


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def txn_index_bytes(dir):
    out = {}
    for name in sorted(os.listdir(dir)):
        if name.endswith(".txnindex"):
            with open(os.path.join(dir, name), "rb") as f:
                out[name] = f.read()
    return out


# --- 1. control batches come only from the broker ---
@pytest.mark.parametrize("transactional", [True, False])
def test_a_client_produce_with_a_control_batch_is_refused_and_nothing_is_appended(make_log, transactional):
    log = make_log()
    log.append(batch(1))
    size = log.active_segment.size
    control = bytearray(build_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", [], 1)],
                                    producer_id=3, producer_epoch=0, is_control=True,
                                    is_transactional=transactional))
    plain_control = bytearray(build_batch([(b"\x00\x00\x00\x01", b"\x00" * 6, [], 1)], is_control=True))
    for buf in (control, batch(1) + control, idem(9, 0) + control, plain_control,
                bytearray(build_control_batch(True, 3, 0))):
        with pytest.raises(errors.InvalidRecordError, match="must not carry control batches"):
            log.append(buf)
    assert (log.log_end_offset, log.active_segment.size) == (1, size)
    assert log.describe_producers() == []


def test_the_appender_refuses_control_batches_unless_told_markers_are_the_brokers():
    import threading

    from fastkafka._core import appender as ap
    from fastkafka.log.scheduler import wall_clock_ms
    a = ap.Appender(threading.RLock(), tuple, wall_clock_ms, None)     # no segment attached
    markers = bytearray(build_control_batch(False, 3, 0)) + batch(1) + bytearray(build_control_batch(True, 3, 0))
    r = a.append(markers)
    assert (r.status, r.control_batches, r.batch_count) == (ap.CONTROL_BATCH, 2, 3)
    r = a.append(batch(1))
    assert (r.status, r.control_batches) == (ap.CLOSED, 0)            # policy passed: the write
    # the broker's own markers, and a follower's copy, pass policy (and reach the write step)
    r = a.append(markers, -1, ap.MARKERS_ALLOWED | ap.PRODUCER_CHECKED)
    assert (r.status, r.control_batches) == (ap.CLOSED, 2)
    copy = (bytearray(build_control_batch(False, 3, 0, base_offset=0))
            + bytearray(build_batch([(b"k", b"v", [], 1)], base_offset=1))
            + bytearray(build_control_batch(True, 3, 0, base_offset=2)))
    assert a.append(copy, -1, ap.AS_FOLLOWER).status == ap.CLOSED
    # a marker is not a producer's data batch: the summary's producer fields leave it out, and a
    # set mixing one with an idempotent batch is "mixed" (the producer state walks it)
    r = a.append(bytearray(build_control_batch(True, 3, 0)), -1, ap.MARKERS_ALLOWED)
    assert (r.status, r.producer_batches, r.producer_id, r.control_batches) == (ap.CLOSED, 0, -1, 1)
    r = a.append(idem(4, 0) + bytearray(build_control_batch(True, 3, 0)), -1,
                 ap.MARKERS_ALLOWED | ap.PRODUCER_CHECKED)
    assert (r.producer_batches, r.producer_id, r.mixed_producers) == (1, 4, True)


def test_a_follower_copies_markers_as_they_are(make_log):
    leader = make_log(dirname="l-0")
    leader.append(txn(1, 0, 2))
    leader.append(txn(2, 0))
    marker(leader, 1, commit=False, coordinator_epoch=3, leader_epoch=4)
    leader.append(batch(1))
    marker(leader, 2, commit=True, coordinator_epoch=3, leader_epoch=4)
    leader.append(txn(1, 2))                                 # P1's next transaction, open
    follower = make_log(dirname="f-0")
    follower.high_watermark_follows_end = False
    data = bytearray(leader.read(0, 1 << 20).read_bytes())
    follower.append_as_follower(data)
    assert follower.log_end_offset == leader.log_end_offset
    assert follower.read(0, 1 << 20).read_bytes() == leader.read(0, 1 << 20).read_bytes()
    assert txn_index_bytes(follower.dir) == {
        k: v for k, v in txn_index_bytes(leader.dir).items()}
    assert follower.aborted_transactions(0, 10) == leader.aborted_transactions(0, 10) == [(1, 0)]
    assert follower.describe_producers() == leader.describe_producers()
    assert ongoing(follower) == {1: 6}
    # the follower's high watermark bounds its last stable offset until replication moves it
    assert follower.last_stable_offset == 0
    follower.update_high_watermark(follower.log_end_offset)
    assert follower.last_stable_offset == leader.last_stable_offset == 6
    leader.close()
    follower.close()


# --- 2. markers ---
def test_a_marker_is_a_control_batch_stamped_like_a_leader_append(make_log, clock):
    log = make_log()
    log.append(txn(5, 0))
    info = log.append_marker(5, 0, coordinator_epoch=9, commit=True, leader_epoch=6)
    assert (info.base_offset, info.last_offset) == (1, 1)
    b = next(iter_batches(log.read(1, 1 << 20).read_bytes()))
    h = b.header
    assert h.is_control and h.is_transactional and h.partition_leader_epoch == 6
    assert (h.producer_id, h.producer_epoch, h.base_offset, h.max_timestamp) == (5, 0, 1, clock.now)
    assert end_txn_marker(b) == (True, 9)
    info = log.append_marker(5, 0, coordinator_epoch=9, commit=False, leader_epoch=6, timestamp=77)
    assert read_header(log.read(2, 1 << 20).read_bytes()).max_timestamp == 77
    log.close()


def test_a_marker_append_rolls_like_any_append(make_log):
    log = make_log(segment_bytes=200)
    log.append(txn(5, 0, n=3))
    log.append(txn(5, 3, n=1))
    marker(log, 5, commit=False)
    assert len(log.segments) == 2 and log.active_segment.base_offset == 4
    assert os.path.exists(os.path.join(log.dir, "%020d.txnindex" % 4))
    log.close()


def test_markers_from_an_older_producer_or_coordinator_epoch_are_fenced(make_log):
    log = make_log()
    log.append(txn(5, 0, epoch=2))
    marker(log, 5, commit=True, epoch=2, coordinator_epoch=4)
    end = log.log_end_offset
    with pytest.raises(errors.InvalidProducerEpochError):
        log.append_marker(5, 1, 4, True, 0)
    with pytest.raises(errors.TransactionCoordinatorFencedError):
        log.append_marker(5, 2, 3, True, 0)
    assert log.log_end_offset == end
    # the same or newer coordinator epoch is fine
    marker(log, 5, commit=False, epoch=2, coordinator_epoch=4)
    marker(log, 5, commit=False, epoch=2, coordinator_epoch=5)
    (p,) = log.describe_producers()
    assert (p.producer_epoch, p.coordinator_epoch) == (2, 5)
    log.close()


def test_a_marker_with_nothing_ongoing_only_records_the_epochs(make_log):
    log = make_log()
    log.append(batch(1))
    off = marker(log, 8, commit=False, epoch=3, coordinator_epoch=2)
    assert off == 1 and log.log_end_offset == 2
    assert txn_index_bytes(log.dir) == {}
    assert log.last_stable_offset == log.high_watermark == 2 and log.first_unstable_offset is None
    (p,) = log.describe_producers()
    assert (p.producer_id, p.producer_epoch, p.coordinator_epoch, p.current_txn_start_offset,
            p.last_sequence) == (8, 3, 2, -1, -1)
    # the producer's epoch is now 3: older data is fenced, and its sequence starts at 0
    with pytest.raises(errors.InvalidProducerEpochError):
        log.append(txn(8, 0, epoch=2))
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        log.append(txn(8, 4, epoch=3))
    assert log.append(txn(8, 0, epoch=3)).base_offset == 2
    log.close()


def test_a_marker_of_a_newer_epoch_completes_the_transaction_and_restarts_sequences(make_log):
    log = make_log()
    log.append(txn(5, 0, n=3))                       # epoch 0, sequences 0..2
    marker(log, 5, commit=False, epoch=1)            # the coordinator fenced epoch 0
    assert ongoing(log) == {} and log.aborted_transactions(0, 4) == [(5, 0)]
    with pytest.raises(errors.InvalidProducerEpochError):
        log.append(txn(5, 3, epoch=0))
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        log.append(txn(5, 3, epoch=1))
    assert log.append(txn(5, 0, epoch=1)).base_offset == 4
    assert ongoing(log) == {5: 4}
    log.close()


# --- 3. producer state ---
def test_transactional_and_plain_batches_of_one_producer(make_log):
    log = make_log()
    log.append(idem(5, 0))                                    # idempotent, no transaction
    log.append(txn(5, 1))                                     # then a transaction: fine
    assert ongoing(log) == {5: 1}
    with pytest.raises(errors.InvalidTxnStateError):
        log.append(idem(5, 2))                                # plain inside the transaction
    with pytest.raises(errors.InvalidTxnStateError):          # ... also in a set of several
        log.append(txn(5, 2) + idem(5, 3))
    with pytest.raises(errors.InvalidTxnStateError):
        log.append(batch(1) + idem(5, 2))
    assert log.log_end_offset == 2
    log.append(txn(5, 2) + txn(5, 3))                         # a set of several, all transactional
    assert ongoing(log) == {5: 1}
    assert log.append(txn(5, 3)).base_offset == 3             # a retry is still a duplicate
    assert log.log_end_offset == 4
    marker(log, 5, commit=True)
    assert log.append(idem(5, 4)).base_offset == 5            # after the commit: plain again
    log.close()


def test_a_transactional_set_begins_the_transaction_at_its_first_offset(make_log):
    log = make_log()
    log.append(batch(3))
    log.append(idem(6, 0) + txn(6, 1, n=2))                   # several batches, one producer
    assert ongoing(log) == {6: 4}
    log.append(batch(1) + txn(7, 0) + txn(8, 0))              # several producers
    assert ongoing(log) == {6: 4, 7: 7, 8: 8}
    assert log.first_unstable_offset == 4
    log.close()


def test_expiry_never_drops_a_producer_with_a_transaction_ongoing(make_log, clock):
    log = make_log()
    log.append(txn(1, 0, ts=1000))
    log.append(idem(2, 0))
    log.append(txn(3, 0, ts=1000))
    marker(log, 3, commit=True)
    assert log.remove_expired_producers(clock.now + 10 * 86_400_000, 1000) == 1 + 1
    assert [p.producer_id for p in log.describe_producers()] == [1]
    assert ongoing(log) == {1: 0}
    log.close()


def test_describe_producers_reports_the_transaction(make_log):
    log = make_log()
    log.append(txn(4, 0, n=2, epoch=1, ts=500))
    marker(log, 4, commit=True, epoch=1, coordinator_epoch=12)
    log.append(txn(4, 2, epoch=1, ts=600))
    (p,) = log.describe_producers()
    assert p._asdict() == {"producer_id": 4, "producer_epoch": 1, "last_sequence": 2,
                           "last_timestamp": p.last_timestamp, "coordinator_epoch": 12,
                           "current_txn_start_offset": 3}
    assert p.last_timestamp >= 600
    assert [a[:4] for a in log.describe_producers()] == [(4, 1, 2, p.last_timestamp)]
    log.close()


# --- 4. the last stable offset ---
def test_the_last_stable_offset_follows_interleaved_transactions(make_log):
    log = make_log()
    log.append(batch(2))                                        # 0-1
    assert log.last_stable_offset == log.high_watermark == 2 and log.first_unstable_offset is None
    log.append(txn(1, 0))                                       # 2 P1 begins
    log.append(batch(1))                                        # 3
    log.append(txn(2, 0))                                       # 4 P2 begins
    assert (log.high_watermark, log.last_stable_offset, log.first_unstable_offset) == (5, 2, 2)
    marker(log, 1, commit=True)                                 # 5
    assert (log.last_stable_offset, log.first_unstable_offset) == (4, 4)
    log.append(txn(1, 1))                                       # 6 P1 again
    marker(log, 2, commit=False)                                # 7
    assert (log.last_stable_offset, log.first_unstable_offset) == (6, 6)
    marker(log, 1, commit=False)                                # 8
    assert log.last_stable_offset == log.high_watermark == log.log_end_offset == 9
    assert log.first_unstable_offset is None
    # read_committed reads up to the last stable offset
    log.append(txn(3, 0))                                       # 9
    log.append(batch(1))                                        # 10
    r = log.read(0, 1 << 20, max_offset=log.last_stable_offset)
    assert [b.last_offset for b in iter_batches(r.read_bytes())][-1] == 8
    log.close()


def test_the_last_stable_offset_waits_for_the_high_watermark_to_pass_the_marker(make_log):
    log = make_log()
    log.high_watermark_follows_end = False                      # replicated: the leader moves it
    log.append(txn(1, 0, n=2))                                  # 0-1
    log.append(batch(1))                                        # 2
    marker(log, 1, commit=True)                                 # 3
    assert log.high_watermark == 0 and log.last_stable_offset == 0
    log.update_high_watermark(2)
    assert log.last_stable_offset == 0                          # the marker is not replicated yet
    assert log.first_unstable_offset == 0
    log.update_high_watermark(3)
    assert log.last_stable_offset == 0                          # ... still not: it is at 3
    log.update_high_watermark(4)
    assert log.last_stable_offset == 4 and log.first_unstable_offset is None
    # an ongoing transaction bounds it below the high watermark
    log.append(batch(1))                                        # 4
    log.append(txn(2, 0))                                       # 5
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 5
    log.close()


def test_the_high_watermark_following_the_end_again_settles_completed_transactions(make_log):
    log = make_log()
    log.high_watermark_follows_end = False
    log.append(txn(1, 0))
    marker(log, 1, commit=False)
    assert log.last_stable_offset == 0
    log.high_watermark_follows_end = True
    assert log.last_stable_offset == log.log_end_offset == 2
    assert log.producer_state.unreplicated == {}
    log.close()


def test_the_last_stable_offset_is_at_least_the_log_start_offset(make_log):
    log = make_log(segment_bytes=200, file_delete_delay_ms=0, retention_ms=-1)
    log.append(txn(1, 0))                                       # 0: P1's open transaction
    for _ in range(6):
        log.append(batch(1))
    assert log.last_stable_offset == 0
    log.delete_records(4)
    assert log.log_start_offset == 4
    assert log.last_stable_offset == 4 and log.first_unstable_offset == 4
    log.close()


# --- 6. aborted transactions for fetches ---
def test_aborted_transactions_across_segments(make_log):
    log = make_log()
    log.append(txn(1, 0))                                       # 0 P1
    log.append(txn(2, 0))                                       # 1 P2
    log.roll()
    log.append(batch(1))                                        # 2
    marker(log, 1, commit=False)                                # 3 P1 aborted (lso 1: P2 ongoing)
    log.roll()
    log.append(txn(3, 0))                                       # 4 P3
    marker(log, 2, commit=True)                                 # 5 P2 committed
    marker(log, 3, commit=False)                                # 6 P3 aborted (lso 7)
    log.roll()
    log.append(txn(1, 1))                                       # 7 P1
    marker(log, 1, commit=False)                                # 8 P1 aborted (lso 9)
    assert log.aborted_transactions(0, 9) == [(1, 0), (3, 4), (1, 7)]
    assert log.aborted_transactions(0, 1) == [(1, 0)]
    assert log.aborted_transactions(2, 4) == [(1, 0)]           # P1's data from 0 spans 2..3
    assert log.aborted_transactions(4, 7) == [(3, 4)]
    assert log.aborted_transactions(7, 9) == [(1, 7)]
    assert log.aborted_transactions(5, 5) == []
    assert log.aborted_transactions(9, 9) == []
    entries = log.collect_aborted_transactions(0, 9)
    assert [tuple(e) for e in entries] == [(1, 0, 3, 1), (3, 4, 6, 7), (1, 7, 8, 9)]
    log.close()


def test_aborted_transactions_stop_at_an_entry_whose_lso_reaches_the_bound(make_log):
    log = make_log(dirname="s-0")
    log.append(txn(1, 0))                                       # 0
    marker(log, 1, commit=False)                                # 1 (lso 2)
    log.roll()
    log.append(txn(2, 0))                                       # 2
    marker(log, 2, commit=False)                                # 3 (lso 4)
    log.roll()
    log.close()
    log = make_log(dirname="s-0")             # indexes load on first use from here
    second = log.segments[1].txn_index.path
    os.rename(second, second + ".away")
    # asking for [0, 2) finds P1's entry, whose lso 2 ends the search: the second segment's
    # index is not read (had it been, it would have loaded empty and stayed so)
    assert log.aborted_transactions(0, 2) == [(1, 0)]
    os.rename(second + ".away", second)
    assert log.aborted_transactions(0, 4) == [(1, 0), (2, 2)]
    log.close()


# --- 5/7. snapshots, reopening, truncation, recovery ---
def test_snapshots_keep_the_transaction_fields(make_log):
    log = make_log()
    log.append(txn(1, 0))
    marker(log, 1, commit=True, coordinator_epoch=7)
    log.append(txn(1, 1))
    log.append(txn(2, 0, epoch=3))
    log.close()
    snap = os.path.join(log.dir, "%020d.snapshot" % log.log_end_offset)
    doc = json.loads(read_file(snap))
    assert doc["version"] == 2
    by_id = {p["id"]: p for p in doc["producers"]}
    assert (by_id[1]["coordinator_epoch"], by_id[1]["txn_first_offset"]) == (7, 2)
    assert (by_id[2]["epoch"], by_id[2]["txn_first_offset"]) == (3, 3)
    again = make_log()
    assert again.describe_producers() == log.describe_producers()
    assert ongoing(again) == {1: 2, 2: 3} and again.last_stable_offset == 2
    again.close()


def test_a_version_1_snapshot_still_loads(tmp_path):
    with open(tmp_path / ("%020d.snapshot" % 5), "w") as f:
        json.dump({"version": 1, "offset": 5, "producers": [
            {"id": 7, "epoch": 1, "batches": [[0, 1, 0, 1, 100], [2, 4, 2, 4, 120]]}]}, f)
    psm = ProducerStateManager()
    assert psm.load_snapshot(str(tmp_path), 10) == 5
    e = psm.producers[7]
    assert (e.epoch, e.last_seq, e.last_timestamp, e.coordinator_epoch, e.current_txn_first_offset) == \
        (1, 4, 120, -1, -1)
    assert psm.first_unstable_offset(100) is None


def test_unreplicated_transactions_survive_a_snapshot(make_log):
    log = make_log()
    log.high_watermark_follows_end = False
    log.append(txn(1, 0))
    marker(log, 1, commit=True)
    log.append(batch(1))
    log.update_high_watermark(1)
    assert log.last_stable_offset == 0
    log.close()
    psm = ProducerStateManager()
    assert psm.load_snapshot(log.dir, 100) == 3
    assert psm.first_unstable_offset(1) == 0 and psm.first_unstable_offset(2) is None


def test_truncation_reopens_a_transaction_whose_marker_went_and_drops_later_ones(make_log):
    log = make_log()
    log.append(txn(1, 0))                      # 0 P1
    log.append(batch(1))                       # 1
    log.roll()                                 # a snapshot at 2 (P1 ongoing)
    log.append(txn(2, 0))                      # 2 P2
    marker(log, 1, commit=True)                # 3
    log.append(txn(3, 0))                      # 4 P3
    marker(log, 2, commit=False)               # 5
    assert ongoing(log) == {3: 4}
    log.truncate_to(4)                         # P2's marker and P3's batch go
    assert ongoing(log) == {2: 2} and log.last_stable_offset == 2
    assert log.aborted_transactions(0, 10) == []
    log.truncate_to(3)                         # P1's marker goes too
    assert ongoing(log) == {1: 0, 2: 2} and log.last_stable_offset == 0
    log.truncate_to(2)
    assert ongoing(log) == {1: 0}
    # the producers continue from the truncated state
    marker(log, 1, commit=False)
    assert log.aborted_transactions(0, 3) == [(1, 0)] and log.last_stable_offset == 3
    log.close()


SCRIPT = [                       # (op, producer, arg): a log with several producers, rolls,
    ("txn", 1, 0), ("plain", 0, 0), ("txn", 2, 0), ("idem", 4, 0),   # commits, aborts and
    ("txn", 1, 1), ("commit", 1, 0), ("txn", 3, 0), ("roll", 0, 0),  # interleaved open ones
    ("abort", 2, 0), ("txn", 1, 2), ("plain", 0, 0), ("txn", 2, 1), ("abort", 3, 0),
    ("roll", 0, 0), ("txn", 3, 1), ("abort", 1, 0), ("idem", 4, 1), ("commit", 2, 0),
    ("txn", 1, 3), ("abort", 3, 0), ("roll", 0, 0), ("txn", 2, 2), ("txn", 3, 2),
    ("abort", 1, 0), ("plain", 0, 0), ("abort", 2, 0), ("txn", 1, 4),
]


def run_script(log, steps):
    for op, pid, arg in steps:
        if op == "txn":
            log.append(txn(pid, arg))
        elif op == "idem":
            log.append(idem(pid, arg))
        elif op == "plain":
            log.append(batch(1))
        elif op == "roll":
            log.roll()
        else:
            marker(log, pid, commit=(op == "commit"), coordinator_epoch=1)


def state_of(log):
    return (log.log_end_offset, log.last_stable_offset, log.first_unstable_offset, ongoing(log),
            sorted((p.producer_id, p.producer_epoch, p.last_sequence, p.coordinator_epoch,
                    p.current_txn_start_offset) for p in log.describe_producers()),
            txn_index_bytes(log.dir), log.collect_aborted_transactions(0, log.log_end_offset))


@pytest.mark.parametrize("drop_snapshots", [False, True], ids=["from-snapshot", "full-replay"])
def test_a_crash_between_markers_recovers_the_same_transactions(make_log, tmp_path, drop_snapshots):
    """Copy the directory of a live log (a kill -9: what the page cache holds, no snapshot at
    the log end, no clean-shutdown marker) after each step, reopen the copy uncleanly, and
    compare the LSO, the ongoing transactions and the .txnindex bytes with the live log's."""
    log = make_log(dirname="live-0")
    aborts = 0
    for i in range(len(SCRIPT)):
        run_script(log, SCRIPT[i:i + 1])
        aborts += SCRIPT[i][0] == "abort"
        copy = tmp_path / f"crash{i}-0"
        shutil.copytree(log.dir, copy)
        if drop_snapshots:
            for name in os.listdir(copy):
                if name.endswith(".snapshot"):
                    os.unlink(copy / name)
            with open(copy / ("%020d.snapshot" % 0), "w") as f:    # replay everything
                json.dump({"version": 1, "offset": 0, "producers": []}, f)
        reopened = make_log(dirname=f"crash{i}-0", clean_shutdown=False)
        assert state_of(reopened) == state_of(log), SCRIPT[i]
        reopened.close()
    assert aborts >= 5 and len(ongoing(log)) >= 1 and len(txn_index_bytes(log.dir)) >= 2
    # and a clean close and reopen changes nothing
    before = state_of(log)
    log.close()
    assert state_of(make_log(dirname="live-0")) == before


def test_recovery_cuts_a_torn_txnindex_and_rebuilds_entries_after_the_snapshot(make_log, tmp_path):
    log = make_log(dirname="r-0")
    run_script(log, SCRIPT)
    expected = state_of(log)
    shutil.copytree(log.dir, tmp_path / "torn-0")
    name = max(expected[5])
    with open(tmp_path / "torn-0" / name, "r+b") as f:       # the newest entry half written
        f.truncate(len(expected[5][name]) - 20)
    reopened = make_log(dirname="torn-0", clean_shutdown=False)
    assert state_of(reopened) == expected
    reopened.close()
    log.close()


def test_a_torn_log_tail_takes_its_markers_and_index_entries(make_log, tmp_path):
    log = make_log(dirname="t-0")
    log.append(txn(1, 0))
    log.append(txn(2, 0))
    marker(log, 1, commit=False)
    cut = log.active_segment.size
    marker(log, 2, commit=False)
    shutil.copytree(log.dir, tmp_path / "cut-0")
    with open(tmp_path / "cut-0" / ("%020d.log" % 0), "r+b") as f:
        f.truncate(cut + 30)                                   # the last marker torn
    reopened = make_log(dirname="cut-0", clean_shutdown=False)
    assert reopened.log_end_offset == 3
    assert ongoing(reopened) == {2: 1} and reopened.last_stable_offset == 1
    assert [tuple(e) for e in reopened.collect_aborted_transactions(0, 3)] == [(1, 0, 2, 1)]
    reopened.close()
    log.close()


# --- 8. compaction ---
def compacted(make_log, dirname="c-0"):
    return make_log(dirname=dirname, cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0)


def test_compaction_keeps_markers_and_drops_aborted_records(make_log, clock):
    log = compacted(make_log)
    log.append(batch(1, key=b"a"))                              # 0 a=committed value
    log.append(txn(1, 0, keys=[b"a", b"b"]))                    # 1-2 aborted
    marker(log, 1, commit=False)                                # 3
    log.append(txn(2, 0, keys=[b"c"]))                          # 4 committed
    marker(log, 2, commit=True)                                 # 5
    log.roll()
    log.append(batch(1, key=b"z"))
    assert LogCleaner(clock=clock).clean(log, force=True)
    got = {}
    controls = []
    for b in all_batches(log):
        if b.is_control:
            controls.append((b.base_offset, end_txn_marker(b)))
        else:
            for r in b.records():
                got[r.key] = r.offset
    assert controls == [(3, (False, 0)), (5, (True, 0))]        # markers stay
    # the aborted "a" did not shadow the committed one, and "b" (aborted only) is gone
    assert got == {b"a": 0, b"c": 4, b"z": 6}
    assert log.aborted_transactions(0, 6) == [(1, 1)]
    log.close()


def test_spent_markers_go_like_tombstones_once_their_transaction_is_gone(make_log, clock):
    """Kafka's rule: an ABORT goes in a pass after the one that dropped its records, a COMMIT once
    no batch of its transaction is left, each only past delete.retention.ms, and never the marker
    that may be its producer's newest batch (it carries the fencing epoch)."""
    log = compacted(make_log)
    log.append(txn(1, 0, keys=[b"a", b"b"]))                    # 0-1 aborted
    marker(log, 1, commit=False)                                # 2
    log.append(txn(1, 2, keys=[b"c"]))                          # 3 committed, overwritten at 7
    marker(log, 1, commit=True)                                 # 4
    log.append(txn(1, 3, keys=[b"d"]))                          # 5 committed, stays
    marker(log, 1, commit=True)                                 # 6
    log.append(batch(1, key=b"c"))                              # 7
    marker(log, 3, commit=False)                                # 8: producer 3's only batch
    log.roll()
    log.append(batch(1, key=b"tail"))

    def controls():
        return [(b.base_offset, end_txn_marker(b)) for b in all_batches(log) if b.is_control]

    assert LogCleaner(clock=clock).clean(log, force=True)      # markers are younger than the horizon
    assert controls() == [(2, (False, 0)), (4, (True, 0)), (6, (True, 0)), (8, (False, 0))]
    assert log.aborted_transactions(0, log.log_end_offset) == [(1, 0)]
    clock.advance(log.config.delete_retention_ms + 1)
    log.append(batch(1, key=b"tail"))                           # dirty data for a second pass
    log.roll()
    log.append(batch(1, key=b"end"))
    assert LogCleaner(clock=clock).clean(log, force=True)
    assert controls() == [(6, (True, 0)), (8, (False, 0))]      # 5 is 6's transaction's batch
    assert log.aborted_transactions(0, log.log_end_offset) == []
    data = {r.key: r.offset for b in all_batches(log) if not b.is_control for r in b.records()}
    assert data == {b"c": 7, b"d": 5, b"tail": 10, b"end": 11}
    expected = (log.last_stable_offset, ongoing(log), txn_index_bytes(log.dir))
    assert expected[:2] == (log.log_end_offset, {})
    log.close()
    for name in os.listdir(log.dir):                            # rebuild the producer state from the log
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(log.dir, name))
    again = make_log(dirname="c-0", clean_shutdown=False, cleanup_policy=("compact",),
                     min_cleanable_dirty_ratio=0.0)
    assert (again.last_stable_offset, ongoing(again), txn_index_bytes(again.dir)) == expected
    again.close()


def test_compaction_never_cleans_past_the_last_stable_offset(make_log, clock):
    log = compacted(make_log)
    log.append(batch(1, key=b"a"))                              # 0
    log.roll()
    log.append(txn(1, 0, keys=[b"a"]))                          # 1: open
    log.append(batch(1, key=b"x"))                              # 2
    log.roll()
    log.append(batch(1, key=b"a"))                              # 3
    log.roll()
    log.append(batch(1, key=b"tail"))
    before = [b.base_offset for b in all_batches(log)]
    assert log.last_stable_offset == 1
    # only the first segment is below the LSO; its "a" is newest within that range
    LogCleaner(clock=clock).clean(log, force=True)
    assert [b.base_offset for b in all_batches(log)] == before
    marker(log, 1, commit=True)
    assert LogCleaner(clock=clock).clean(log, force=True)
    after = {r.key: r.offset for b in all_batches(log) if not b.is_control for r in b.records()}
    assert after[b"a"] == 3 and 0 not in after.values()
    log.close()


def test_a_marker_is_never_taken_for_a_producers_last_batch(make_log, clock):
    """The cleaner keeps each producer's last data batch (emptied) so its sequence survives;
    the producer state rebuilt from the log (replay after a crash) must point at that batch,
    not at the marker after it."""
    log = compacted(make_log)
    log.append(txn(7, 0, n=2, keys=[b"p", b"q"]))               # 0-1: P7's last data batch
    marker(log, 7, commit=True)                                 # 2
    log.append(batch(1, key=b"p") + batch(1, key=b"q"))         # 3-4 overwrite both
    log.roll()
    log.append(batch(1, key=b"tail"))
    assert log.producer_last_offsets() == {7: 1}
    log.close()
    for name in os.listdir(log.dir):                            # rebuild from the log alone
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(log.dir, name))
    with open(os.path.join(log.dir, "%020d.snapshot" % 0), "w") as f:
        json.dump({"version": 2, "offset": 0, "producers": []}, f)
    log = make_log(dirname="c-0", clean_shutdown=False, cleanup_policy=("compact",),
                   min_cleanable_dirty_ratio=0.0)
    assert log.producer_last_offsets() == {7: 1}
    assert LogCleaner(clock=clock).clean(log, force=True)
    kept = [b for b in all_batches(log) if b.producer_id == 7]
    assert [(b.base_offset, b.record_count, b.is_control) for b in kept] == [(0, 0, False), (2, 1, True)]
    assert kept[0].base_sequence + kept[0].last_offset_delta == 1
    log.append(txn(7, 2))                                        # the sequence goes on
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        log.append(txn(7, 9))
    log.close()


def test_compaction_on_a_transactional_topic_then_reopen(make_log, clock):
    log = compacted(make_log)
    run_script(log, SCRIPT[:-1] + [("commit", 1, 0), ("roll", 0, 0)])
    expected = (log.last_stable_offset, ongoing(log))
    assert LogCleaner(clock=clock).clean(log, force=True)
    assert (log.last_stable_offset, ongoing(log)) == expected
    entries = log.collect_aborted_transactions(0, log.log_end_offset)
    log.close()
    again = make_log(dirname="c-0", clean_shutdown=False, cleanup_policy=("compact",),
                     min_cleanable_dirty_ratio=0.0)
    assert (again.last_stable_offset, ongoing(again)) == expected
    assert again.collect_aborted_transactions(0, again.log_end_offset) == entries
    again.close()


def test_a_follower_fetching_in_small_pieces_ends_with_the_leaders_state(make_log):
    leader = make_log(dirname="l-0", segment_bytes=400)
    run_script(leader, SCRIPT)
    follower = make_log(dirname="f-0", segment_bytes=400)
    follower.high_watermark_follows_end = False
    while follower.log_end_offset < leader.log_end_offset:
        region = leader.read(follower.log_end_offset, 150, min_one_message=False)
        data = bytearray(region.read_bytes())
        if not data or follower.append_as_follower(data) is None:     # cut inside its first batch
            data = bytearray(leader.read(follower.log_end_offset, 1 << 20).read_bytes())
            follower.append_as_follower(data[:read_header(data).size])
    follower.update_high_watermark(leader.high_watermark)
    assert follower.last_stable_offset == leader.last_stable_offset
    assert ongoing(follower) == ongoing(leader)
    assert follower.collect_aborted_transactions(0, follower.log_end_offset) == \
        leader.collect_aborted_transactions(0, leader.log_end_offset)
    assert sorted(follower.describe_producers()) == sorted(leader.describe_producers())
    leader.close()
    follower.close()


def test_lock_free_readers_see_a_consistent_last_stable_offset(make_log):
    import threading
    log = make_log(segment_bytes=2000)
    stop = threading.Event()
    problems = []

    def read():
        last = 0
        while not stop.is_set():
            hw = log.high_watermark
            lso = log.last_stable_offset
            if lso < last or lso > log.high_watermark or lso < 0:
                problems.append((last, lso, hw))
            last = lso
            for pid, first in log.aborted_transactions(0, lso):
                if first >= lso:
                    problems.append(("aborted past the bound", pid, first, lso))
    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        seqs = {1: 0, 2: 0, 3: 0}
        for i in range(300):
            pid = 1 + i % 3
            log.append(txn(pid, seqs[pid]))
            seqs[pid] += 1
            if i % 4 == 3:
                marker(log, pid, commit=bool(i % 8 == 3))
            if i % 7 == 0:
                log.append(batch(1))
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert problems == []
    assert log.aborted_transactions(0, log.last_stable_offset)      # some aborts were indexed
    log.close()


def test_the_coordinators_sequence_less_batches_are_checked_for_their_epoch_only(make_log):
    """TxnOffsetCommit: the group coordinator writes a transaction's offsets with the producer's
    id and epoch and no sequence (base sequence -1), as Kafka's AppendOrigin.COORDINATOR."""
    log = make_log(dirname="__consumer_offsets-0")

    def offsets(pid, epoch, key=b"g"):
        return bytearray(build_batch([(key, b"offset", [], 1)], producer_id=pid,
                                     producer_epoch=epoch, is_transactional=True))
    for _ in range(3):                                     # several commits in one transaction
        log.append(offsets(9, 0))
    assert ongoing(log) == {9: 0}
    marker(log, 9, commit=True)
    log.append(offsets(9, 0))                              # the next transaction, same epoch
    marker(log, 9, commit=False, epoch=1)                  # fenced by the coordinator
    with pytest.raises(errors.InvalidProducerEpochError):
        log.append(offsets(9, 0))
    log.append(offsets(9, 1) + offsets(9, 1, b"h"))        # a set of two, new epoch
    log.append(offsets(9, 2))                              # a newer epoch needs no sequence 0
    assert ongoing(log) == {9: 6}
    (p,) = log.describe_producers()
    assert (p.producer_epoch, p.last_sequence, p.current_txn_start_offset) == (2, -1, 6)
    assert log.aborted_transactions(0, log.log_end_offset) == [(9, 4)]
    log.close()
    again = make_log(dirname="__consumer_offsets-0", clean_shutdown=False)
    assert again.describe_producers() == [p]
    again.close()


def test_a_producers_last_timestamp_is_its_last_batchs(tmp_path):
    """As Kafka's ProducerStateEntry: the newest batch's time, even when an earlier one carried a
    later CreateTime (what DescribeProducers reports and producer.id.expiration.ms counts from)."""
    psm = ProducerStateManager()
    for seq, ts in ((0, 500), (1, 300)):
        psm.update(bytearray(build_batch([(None, b"x", [], ts)], producer_id=9, producer_epoch=0,
                                         base_sequence=seq, base_offset=seq)))
    assert psm.producers[9].last_timestamp == 300
    psm.write_snapshot(str(tmp_path), 2)
    again = ProducerStateManager()
    assert again.load_snapshot(str(tmp_path), 2) == 2 and again.producers[9].last_timestamp == 300
