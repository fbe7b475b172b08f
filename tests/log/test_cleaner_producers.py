"""Compaction and idempotent producers: of the batches compaction empties, only each producer's
last batch in the log stays (as an empty batch), so the producer state rebuilt from the cleaned log
is the state before cleaning and the producers continue without a sequence error."""
import json
import os

import pytest

from fastkafka import errors
from fastkafka.config import LogConfig
from fastkafka.log import Log
from fastkafka.log.cleaner import LogCleaner
from fastkafka.log.producer_state import ProducerStateManager
from fastkafka.log.scheduler import Scheduler
from fastkafka.records import build_batch

from .test_cleaner import all_batches


def open_log(path, clock, clean_shutdown=True):
    return Log(str(path), LogConfig().with_overrides(cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0),
               scheduler=Scheduler(clock), clock=clock, clean_shutdown=clean_shutdown,
               recovery_point=0)


def produce(log, clock, keys, pid=None, epoch=0, seq=0):
    meta = {} if pid is None else dict(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    return log.append(bytearray(build_batch([(k, b"v-" + k, [], clock.now) for k in keys], **meta)))


def state(psm):
    """What a producer continues from: producer id -> (epoch, last sequence)."""
    return {pid: (e.epoch, e.last_seq) for pid, e in psm.producers.items()}


@pytest.fixture
def cleaned(tmp_path, clock):
    """Three producers, each with several batches compaction empties; returns the cleaned log, the
    base offsets of every producer's batches, and the producer state before cleaning.

    P1 bumps its epoch and its last batch (epoch 1) is emptied; P2's last batch keeps a record;
    P3's last batch is in the active segment, where the cleaner never goes."""
    log = open_log(tmp_path / "p-0", clock)
    bases = {1: [], 2: [], 3: []}
    rounds = [(1, 0, [b"a1"]), (2, 0, [b"b1"]), (3, 0, [b"c1"]),
              (1, 1, [b"a2", b"a3"]), (2, 1, [b"b2"]), (3, 1, [b"c2"]),
              (1, 3, [b"a4"]), (2, 2, [b"b3", b"keep"]), (3, 2, [b"c3"])]
    for i, (pid, seq, keys) in enumerate(rounds):
        bases[pid].append(produce(log, clock, keys, pid=pid, seq=seq).base_offset)
        if i % 3 == 2:
            log.roll()
    bases[1].append(produce(log, clock, [b"a5"], pid=1, epoch=1, seq=0).base_offset)   # new epoch
    # a plain producer overwrites every key but b"keep"
    produce(log, clock, [b"a1", b"a2", b"a3", b"a4", b"a5", b"b1", b"b2", b"b3", b"c1", b"c2", b"c3"])
    log.roll()
    bases[3].append(produce(log, clock, [b"c4"], pid=3, seq=3).base_offset)            # active
    before = state(log.producer_state)
    assert before == {1: (1, 0), 2: (0, 3), 3: (0, 3)}
    assert LogCleaner(clock=clock).clean(log, force=True)
    return log, bases, before


def test_only_the_last_emptied_batch_of_each_producer_remains(cleaned):
    log, bases, _ = cleaned
    after = {b.base_offset: b for b in all_batches(log)}
    by_producer = {}
    for b in after.values():
        if b.producer_id >= 0:
            by_producer.setdefault(b.producer_id, []).append(b.base_offset)
    # P1: its epoch-1 batch, emptied but its last; P2: its last batch, which kept a record;
    # P3: only the batch in the active segment (its emptied ones were not its last)
    assert by_producer == {1: [bases[1][-1]], 2: [bases[2][-1]], 3: [bases[3][-1]]}
    p1 = after[bases[1][-1]]
    assert (p1.record_count, p1.producer_epoch, p1.base_sequence, p1.last_offset) == (0, 1, 0, bases[1][-1])
    p2 = after[bases[2][-1]]
    assert [r.key for r in p2.records()] == [b"keep"]
    assert (p2.base_sequence, p2.base_sequence + p2.last_offset_delta) == (2, 3)
    log.close()


def _only_an_empty_snapshot_at_zero(dir):
    """Drop the Log's snapshots and leave an empty one at offset 0, so reopening replays every
    batch of the cleaned log: the state then comes from the cleaned log alone."""
    for name in os.listdir(dir):
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(dir, name))
    with open(os.path.join(dir, "%020d.snapshot" % 0), "w") as f:
        json.dump({"version": 1, "offset": 0, "producers": []}, f)


@pytest.mark.parametrize("from_log_only", [False, True], ids=["snapshots", "replay"])
def test_reopened_cleaned_log_has_the_producer_state_of_before(cleaned, tmp_path, clock, from_log_only):
    log, _, before = cleaned
    log.close()
    if from_log_only:
        _only_an_empty_snapshot_at_zero(log.dir)
    log = open_log(tmp_path / "p-0", clock, clean_shutdown=False)     # the recovery path
    assert state(log.producer_state) == before
    # the producers continue where they were: no OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(log, clock, [b"a6"], pid=1, epoch=1, seq=1).base_offset >= 0
    assert produce(log, clock, [b"b4"], pid=2, seq=4).base_offset >= 0
    assert produce(log, clock, [b"c5"], pid=3, seq=4).base_offset >= 0
    # ... and the state is really there: a gap is still refused
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        produce(log, clock, [b"b9"], pid=2, seq=7)
    log.close()


def test_replay_of_the_cleaned_log_equals_the_state_before(cleaned):
    log, _, before = cleaned
    psm = ProducerStateManager()
    psm.replay(log, log.log_start_offset)
    assert state(psm) == before
    log.close()


def test_emptied_last_batch_outlives_later_cleanings_and_producers_only_in_the_active_segment(
        tmp_path, clock):
    log = open_log(tmp_path / "q-0", clock)
    produce(log, clock, [b"x"], pid=5, seq=0)
    last = produce(log, clock, [b"y"], pid=5, seq=1).base_offset
    produce(log, clock, [b"x", b"y"])
    log.roll()
    cleaner = LogCleaner(clock=clock)
    for _ in range(2):                     # a second pass (new data, a merge) keeps it too
        assert cleaner.clean(log, force=True)
        kept = [b for b in all_batches(log) if b.producer_id == 5]
        assert [(b.base_offset, b.record_count) for b in kept] == [(last, 0)]
        produce(log, clock, [b"z"])
        log.roll()
        cleaner.forget(log)
    log.close()
