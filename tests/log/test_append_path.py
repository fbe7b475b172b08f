"""Log.append's one path (_core.appender): one walk, then policy from its summary, then the write.
Whatever the batches are -- plain, idempotent, compacted, LogAppendTime -- errors and the log's
state must be exactly those of validate-then-write."""
import os
import random
import struct
import threading

import pytest

from fastkafka import errors
from fastkafka._core.crc32c import crc32c
from fastkafka._core.records import validate
from fastkafka.records import build_batch, iter_batches

from .conftest import batch

LARGE = 300 * 1024          # the walk releases the GIL


def big_batch(n: int = 300, size: int = 1024) -> bytearray:
    return bytearray(build_batch([(b"k%d" % i, bytes([i % 251]) * size, [], 1000 + i) for i in range(n)]))


def fix_crc(buf: bytearray) -> bytearray:
    """Recompute the CRC of the (single) batch so a record-level corruption gets past it."""
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return buf


def expected_error(buf: bytearray):
    """(error class Log.append raises, message) per validate(records=True), or None."""
    v = validate(bytes(buf), records=True)
    if v.error is None:
        return None
    cls = errors.InvalidRecordError if v.error_code == errors.InvalidRecordError.code else errors.CorruptMessageError
    return cls, str(v.error)


def test_corrupt_large_batch_changes_nothing_and_the_next_append_lands(make_log):
    log = make_log()
    good = big_batch()
    assert len(good) >= LARGE
    log.append(batch(3))
    log.append(big_batch())
    seg = log.active_segment
    leo, size = log.log_end_offset, seg.size
    assert os.path.getsize(seg.log_path) == size

    bad = big_batch()
    bad[len(bad) // 2] ^= 0x5A                                # CRC mismatch
    with pytest.raises(errors.CorruptMessageError) as exc:
        log.append(bad)
    cls, message = expected_error(big_batch_with_flip())
    assert isinstance(exc.value, cls) and str(exc.value) == message
    bad_record = big_batch()
    bad_record[61] = 0x7F                                     # first record's length varint: 63
    fix_crc(bad_record)
    with pytest.raises(errors.InvalidRecordError):
        log.append(bad_record)
    assert log.log_end_offset == leo and seg.size == size and os.path.getsize(seg.log_path) == size
    assert log.active_segment.offset_index().entries == seg.offset_index().entries

    info = log.append(good)
    assert info.base_offset == leo and log.read(leo, 1).position == size
    assert log.log_end_offset == leo + 300
    log.close()

    again = make_log(clean_shutdown=False)                   # unclean: revalidate everything
    assert again.recovered_bytes_dropped == 0 and again.log_end_offset == leo + 300
    offs = [r.offset for b in iter_batches(again.read(0, 1 << 30).read_bytes()) for r in b.records()]
    assert offs == list(range(leo + 300))


def big_batch_with_flip() -> bytearray:
    b = big_batch()
    b[len(b) // 2] ^= 0x5A
    return b


@pytest.mark.parametrize("n,size", [(1, 10), (16, 1000), (300, 1024)])
def test_fast_path_raises_exactly_what_validate_reports(make_log, n, size):
    """Random single-byte corruptions (CRC fixed half the time, so the record walk is reached):
    the append fails iff validate(records=True) finds an error, with the same message; a failed
    append changes neither the log end offset nor the file."""
    rng = random.Random(n)
    log = make_log()
    template = big_batch(n, size) if n > 1 else batch(1)
    trials = 60 if len(template) > 100_000 else 300
    for _ in range(trials):
        buf = bytearray(template)
        pos = rng.randrange(21, len(buf)) if rng.random() < 0.9 else rng.randrange(len(buf))
        buf[pos] = rng.randrange(256)
        if rng.random() < 0.5:
            fix_crc(buf)
        err = expected_error(buf)
        leo, size_before = log.log_end_offset, log.active_segment.size
        if err is None:
            try:
                assert log.append(buf).base_offset == leo
            except (errors.MessageTooLargeError, errors.InvalidProducerEpochError,
                    errors.OutOfOrderSequenceNumberError, errors.KafkaError) as e:
                # a flip can make a valid batch that policy refuses (e.g. a producer id): the
                # general path's business, not validation's
                assert not isinstance(e, errors.CorruptMessageError), e
        else:
            with pytest.raises(err[0]) as exc:
                log.append(buf)
            assert str(exc.value) == err[1]
            assert log.log_end_offset == leo and log.active_segment.size == size_before
            assert os.path.getsize(log.active_segment.log_path) == size_before


def test_large_appends_from_many_threads(make_log):
    """Several partitions appending large sets at once (the walks run with the GIL released):
    every log ends up with every offset, and a corrupt set still fails."""
    logs = [make_log(dirname=f"t-{i}") for i in range(4)]
    failures = []

    def run(log):
        try:
            for i in range(10):
                if i == 5:
                    bad = big_batch()
                    bad[-1] ^= 1
                    with pytest.raises(errors.CorruptMessageError):
                        log.append(bad)
                log.append(big_batch())
        except BaseException as e:  # pragma: no cover - reported below
            failures.append(e)

    threads = [threading.Thread(target=run, args=(lg,)) for lg in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    for lg in logs:
        assert lg.log_end_offset == 3000
        assert os.path.getsize(lg.active_segment.log_path) == lg.active_segment.size == 10 * len(big_batch())


def small_batch(seed: int = 0) -> bytearray:
    return big_batch(16, 1000 - seed % 7)


def test_16k_appends_from_many_threads_to_many_logs_and_to_one(make_log):
    """Threads appending 16 KiB sets to their own logs and to one shared log (validation runs
    outside the log's lock, the write under it): every log gets every offset exactly once, in
    order, and corrupt sets fail without a trace."""
    own = [make_log(dirname=f"own-{i}") for i in range(3)]
    shared = make_log(dirname="shared-0")
    failures = []
    per_thread = 150

    def run(i, log):
        try:
            for k in range(per_thread):
                target = shared if k % 3 == 0 else log
                if k % 25 == 7:
                    bad = small_batch(k)
                    bad[-3] ^= 0x10
                    with pytest.raises(errors.CorruptMessageError):
                        target.append(bad)
                target.append(small_batch(k))
        except BaseException as e:  # pragma: no cover - reported below
            failures.append(e)

    threads = [threading.Thread(target=run, args=(i, lg)) for i, lg in enumerate(own)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    for lg, expected in [(lg, per_thread * 2 // 3 * 16) for lg in own] + [(shared, 3 * per_thread // 3 * 16)]:
        seg = lg.active_segment
        assert lg.log_end_offset == expected
        assert os.path.getsize(seg.log_path) == seg.size
        offs = [r.offset for b in iter_batches(lg.read(0, 1 << 30).read_bytes()) for r in b.records()]
        assert offs == list(range(expected))




def idem(seq: int, n: int = 3, *, pid: int = 7, epoch: int = 0, compression: int = 0) -> bytearray:
    return bytearray(build_batch([(b"k%d" % i, b"v", [], 1000 + i) for i in range(n)], producer_id=pid,
                                 producer_epoch=epoch, base_sequence=seq, compression=compression))


@pytest.fixture
def no_second_walk(monkeypatch):
    """Fail the test if the Log walks the bytes itself (validate, or the producer state's own
    header walks) on a path that must decide from the appender's summary."""
    import fastkafka.log.log as log_mod
    from fastkafka.log.producer_state import ProducerStateManager

    def walked(*_a, **_k):
        raise AssertionError("the append path walked the batch a second time")
    monkeypatch.setattr(log_mod, "_validate", walked)
    monkeypatch.setattr(ProducerStateManager, "check", walked)
    monkeypatch.setattr(ProducerStateManager, "update", walked)


def test_idempotent_batches_take_the_one_walk(make_log, no_second_walk):
    log = make_log()
    assert log.append(idem(0)).base_offset == 0
    assert log.append(idem(3)).base_offset == 3
    dup = log.append(idem(3))                       # a retry: answered with the first offsets
    assert (dup.base_offset, dup.last_offset) == (3, 5) and log.log_end_offset == 6
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        log.append(idem(9))
    assert [a[:4] for a in log.describe_producers()] == [(7, 0, 5, 1002)]
    assert log.append(idem(0, epoch=1)).base_offset == 6     # a new epoch starts at sequence 0
    with pytest.raises(errors.InvalidProducerEpochError):
        log.append(idem(3, epoch=0))                         # the fenced epoch
    assert log.log_end_offset == 9 and [a[:4] for a in log.describe_producers()] == [(7, 1, 2, 1002)]


def test_idempotent_appends_survive_a_roll_and_a_reopen(make_log):
    log = make_log(segment_bytes=600)
    for k in range(10):
        log.append(idem(3 * k))
    assert len(log.segments) > 1
    assert [a[:4] for a in log.describe_producers()] == [(7, 0, 29, 1002)]
    log.close()
    again = make_log()
    assert [a[:4] for a in again.describe_producers()] == [(7, 0, 29, 1002)]
    assert again.append(idem(27)).base_offset == 27          # the newest batch is still a duplicate
    assert again.append(idem(30)).base_offset == 30


def test_compacted_topic_refuses_keyless_records_compressed_or_not(make_log, no_second_walk):
    log = make_log(cleanup_policy=("compact",))
    keyless = bytearray(build_batch([(b"k", b"v", [], 1), (None, b"v", [], 2)]))
    with pytest.raises(errors.InvalidRecordError, match="without a key"):
        log.append(keyless)
    assert log.append(bytearray(build_batch([(b"k", b"v", [], 1)]))).base_offset == 0
    for codec in (1, 2, 3, 4):
        with pytest.raises(errors.InvalidRecordError, match="without a key"):
            log.append(bytearray(build_batch([(b"k", b"v", [], 1), (None, b"v", [], 2)], compression=codec)))
        assert log.append(bytearray(build_batch([(b"k", b"v", [], 1)], compression=codec))).base_offset > 0
    assert log.log_end_offset == 5


def test_log_append_time_is_stamped_with_a_valid_crc(make_log, clock, no_second_walk):
    log = make_log(message_timestamp_type="LogAppendTime")
    info = log.append(bytearray(build_batch([(b"k", b"v", [], 5)] * 40)))  # below the GIL threshold
    assert info.log_append_time == clock.now
    info = log.append(big_batch(20, 300))                   # over the GIL threshold
    assert info.log_append_time == clock.now
    data = log.read(0, 1 << 20).read_bytes()
    assert validate(data).error is None
    assert [b.max_timestamp for b in iter_batches(data)] == [clock.now, clock.now]
    assert all(b.timestamp_type == 1 for b in iter_batches(data))
