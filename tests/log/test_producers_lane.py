"""The append path's producers lane: a known producer's next batch (same epoch, next sequence,
no transaction) is checked and remembered in C in the one Appender call; everything else asks
the producer state. The log must answer exactly as the Python check would: duplicates with
their first offsets, gaps and old epochs refused with nothing written, state kept across a
reopen."""
import pytest

from fastkafka import errors
from fastkafka._core import appender as _ap
from fastkafka.log.log import LogAppendInfo
from fastkafka.log.producer_state import BatchMetadata
from fastkafka.records import build_batch


def idem(pid, seq, n=2, epoch=0, transactional=False):
    return bytearray(build_batch([(b"k%d" % i, b"v", [], 1000 + seq + i) for i in range(n)], producer_id=pid,
                                 producer_epoch=epoch, base_sequence=seq, is_transactional=transactional))


def test_a_known_producers_next_batch_is_written_in_one_call(make_log):
    log = make_log()
    log.append(idem(7, 0))                                   # unknown producer: policy checks it
    answer = log._st.append(idem(7, 2), -1, 0)               # the lane: written, no summary back
    assert answer.__class__ is LogAppendInfo and (answer.base_offset, answer.last_offset) == (2, 3)
    (entry,) = log.describe_producers()
    assert entry.last_sequence == 3
    assert log.producer_state.producers[7].batches == (BatchMetadata(0, 1, 0, 1, 1001),
                                                       BatchMetadata(2, 3, 2, 3, 1003))


def test_a_retry_of_a_lane_batch_is_a_duplicate_and_nothing_is_written(make_log):
    log = make_log()
    for seq in range(0, 8, 2):
        log.append(idem(7, seq))
    end, size = log.log_end_offset, log.active_segment.size
    info = log.append(idem(7, 4))                            # taken by the lane the first time
    assert (info.base_offset, info.last_offset) == (4, 5)
    assert (log.log_end_offset, log.active_segment.size) == (end, size)


def test_gaps_old_epochs_and_forgotten_retries_are_refused_with_nothing_written(make_log):
    log = make_log()
    log.append(idem(7, 0, epoch=3))
    for seq in range(2, 14, 2):                              # six more: the first ones are forgotten
        log.append(idem(7, seq, epoch=3))
    end = log.log_end_offset
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        log.append(idem(7, 16, epoch=3))                     # a gap: 14 is missing
    with pytest.raises(errors.InvalidProducerEpochError):
        log.append(idem(7, 14, epoch=2))
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        log.append(idem(7, 0, epoch=3))                      # older than the five remembered
    assert log.log_end_offset == end
    assert [b.first_seq for b in log.producer_state.producers[7].batches] == [4, 6, 8, 10, 12]


def test_a_plain_batch_inside_the_producers_transaction_is_still_refused(make_log):
    log = make_log()
    log.append(idem(7, 0))
    log.append(idem(7, 2, transactional=True))               # the transaction begins
    with pytest.raises(errors.InvalidTxnStateError):
        log.append(idem(7, 4))
    assert log.log_end_offset == 4


def test_lane_batches_survive_a_reopen(make_log):
    log = make_log()
    for seq in range(0, 6, 2):
        log.append(idem(7, seq))
    log.close()
    log = make_log()
    assert log.append(idem(7, 4)).base_offset == 4           # still known as a duplicate
    assert log.append(idem(7, 6)).base_offset == 6
    assert log._st.append(idem(7, 8), -1, 0).__class__ is LogAppendInfo   # the lane again


def test_without_a_producer_map_every_idempotent_batch_asks_policy(make_log):
    log = make_log()
    log.append(idem(7, 0))
    log._st.set_producers(None)
    r = log._st.append(idem(7, 2), -1, 0)
    assert r.status == _ap.NEEDS_PRODUCER_CHECK and log.log_end_offset == 2
