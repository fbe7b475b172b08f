"""Idempotent producer: sequence checks over the last five batches, epochs, snapshots, id blocks."""
import threading

import pytest

from fastkafka import errors as E
from fastkafka.coordinator.producer_ids import FileBlockStore, ProducerIdManager
from fastkafka.log.producer_state import ProducerStateManager
from fastkafka.records import build_batch

pytestmark = pytest.mark.timeout(30)


def batch(pid, epoch, seq, n=1, base_offset=0):
    return bytearray(build_batch([(None, b"v%d" % i, [], 1000 + i) for i in range(n)],
                                 producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                 base_offset=base_offset))


class FakeLog:
    """Just enough of Log.append to exercise the hook as the log wires it."""

    def __init__(self):
        self.psm = ProducerStateManager()
        self.next = 0
        self.appended = 0

    def append(self, pid, epoch, seq, n=1):
        b = batch(pid, epoch, seq, n)
        dup = self.psm.check(b)
        if dup is not None:
            return dup.first_offset, dup.last_offset
        b = batch(pid, epoch, seq, n, base_offset=self.next)
        self.next += n
        self.appended += 1
        self.psm.update(b)
        return self.next - n, self.next - 1


def test_in_sequence_batches_append_and_duplicates_return_original_offsets():
    log = FakeLog()
    assert log.append(1, 0, 0, 3) == (0, 2)
    assert log.append(1, 0, 3, 2) == (3, 4)
    assert log.append(1, 0, 0, 3) == (0, 2)           # retry of the first batch
    assert log.append(1, 0, 3, 2) == (3, 4)
    assert log.appended == 2
    assert log.append(2, 0, 0) == (5, 5)               # another producer is independent


def test_only_the_last_five_batches_are_remembered():
    log = FakeLog()
    for i in range(6):
        log.append(1, 0, i)
    assert log.append(1, 0, 5) == (5, 5)
    assert log.append(1, 0, 1) == (1, 1)
    with pytest.raises(E.OutOfOrderSequenceNumberError):
        log.append(1, 0, 0)                           # fell out of the window


def test_gap_is_out_of_order_and_appends_nothing():
    log = FakeLog()
    log.append(1, 0, 0, 2)
    with pytest.raises(E.OutOfOrderSequenceNumberError):
        log.append(1, 0, 5)
    assert log.appended == 1
    assert log.append(1, 0, 2) == (2, 2)


def test_epochs_fence_zombies_and_restart_sequences():
    log = FakeLog()
    log.append(1, 3, 0)
    with pytest.raises(E.InvalidProducerEpochError):
        log.append(1, 2, 1)
    with pytest.raises(E.OutOfOrderSequenceNumberError):
        log.append(1, 4, 7)
    assert log.append(1, 4, 0) == (1, 1)
    with pytest.raises(E.InvalidProducerEpochError):
        log.append(1, 3, 1)


def test_sequence_wraps_at_int32_max():
    log = FakeLog()
    top = (1 << 31) - 2
    log.append(1, 0, top, 2)                          # top, top+1 = INT32_MAX
    assert log.append(1, 0, 0) == (2, 2)


def test_plain_producers_are_not_tracked():
    psm = ProducerStateManager()
    b = bytearray(build_batch([(None, b"x", [], 1)]))
    assert psm.check(b) is None
    psm.update(b)
    assert psm.check(b) is None and len(psm) == 0


def test_several_batches_in_one_request_must_be_contiguous():
    psm = ProducerStateManager()
    ok = batch(1, 0, 0, 2) + batch(1, 0, 2, 1)
    assert psm.check(ok) is None
    with pytest.raises(E.OutOfOrderSequenceNumberError):
        psm.check(batch(1, 0, 0, 2) + batch(1, 0, 5, 1))


def test_snapshot_round_trip_truncate_and_expiry(tmp_path):
    log = FakeLog()
    for i in range(3):
        log.append(7, 1, i * 2, 2)
    log.psm.write_snapshot(str(tmp_path), 6)
    (tmp_path / f"{9:020d}.snapshot").write_text("{torn")
    psm = ProducerStateManager()
    assert psm.load_snapshot(str(tmp_path), 100) == 6          # torn newest skipped
    assert psm.check(batch(7, 1, 4, 2)).first_offset == 4
    assert psm.load_snapshot(str(tmp_path), 5) is None and len(psm) == 0
    psm.load_snapshot(str(tmp_path), 6)
    psm.truncate_after(4)
    with pytest.raises(E.OutOfOrderSequenceNumberError):
        psm.check(batch(7, 1, 6, 1))
    assert psm.check(batch(7, 1, 4, 2)) is None                 # appendable again
    assert psm.remove_expired(10_000, 5_000) == 1 and len(psm) == 0
    psm.delete_snapshots(str(tmp_path), after=6)
    assert ProducerStateManager.snapshot_offsets(str(tmp_path)) == [6]


def test_producer_ids_unique_across_restarts_and_threads(tmp_path):
    path = str(tmp_path / "producer_id_block")
    m = ProducerIdManager(FileBlockStore(path), block_size=7)
    got = []
    lock = threading.Lock()

    def take():
        for _ in range(20):
            pid = m.next_id()
            with lock:
                got.append(pid)
    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(80))
    after = ProducerIdManager(FileBlockStore(path), block_size=7).next_id()
    assert after > max(got)
    (tmp_path / "producer_id_block").write_text("garbage")
    with pytest.raises(E.KafkaStorageError):
        ProducerIdManager(FileBlockStore(path)).next_id()
