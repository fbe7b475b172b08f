"""Compaction against a dict model: latest value per key, offsets kept, tombstones expire."""
import os

from hypothesis import HealthCheck, given, settings, strategies as st

from fastkafka.config import LogConfig
from fastkafka.log import Log
from fastkafka.log.checkpoints import OffsetCheckpointFile
from fastkafka.log.cleaner import LogCleaner
from fastkafka.log.scheduler import Scheduler
from fastkafka.records import build_batch, iter_batches

from .conftest import FakeClock

DAY = 86_400_000


def all_batches(log):
    """Every batch from the log start, fetched like a consumer: the next fetch starts after the
    last batch's lastOffset (a cleaned batch may end past its last surviving record)."""
    out, off = [], log.log_start_offset
    while off < log.log_end_offset:
        region = log.read(off, 1 << 30)
        if region.length == 0:
            break
        batches = list(iter_batches(region.read_bytes()))
        out += batches
        off = batches[-1].last_offset + 1
    return out


def all_records(log):
    return [r for b in all_batches(log) for r in b.records()]


ops = st.lists(st.lists(st.tuples(st.integers(0, 7), st.one_of(st.none(), st.binary(min_size=1, max_size=8))),
                        min_size=1, max_size=6), min_size=1, max_size=40)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=ops, codec=st.sampled_from([0, 1]), map_entries=st.sampled_from([3, 1000]),
       merge_bytes=st.sampled_from([300, 1000, 1 << 20]))
def test_compaction_matches_a_dict_model(tmp_path_factory, batches, codec, map_entries, merge_bytes):
    clock = FakeClock()
    log = Log(str(tmp_path_factory.mktemp("c") / "c-0"),
              LogConfig().with_overrides(segment_bytes=300, cleanup_policy=("compact",),
                                         delete_retention_ms=DAY, min_cleanable_dirty_ratio=0.0),
              scheduler=Scheduler(clock), clock=clock, clean_shutdown=True)
    original = {}
    for recs in batches:
        buf = bytearray(build_batch([(b"k%d" % k, v, [], clock.now) for k, v in recs], compression=codec))
        info = log.append(buf)
        for i, (k, v) in enumerate(recs):
            original[info.base_offset + i] = (b"k%d" % k, v)
    active_base = log.active_segment.base_offset
    bases_before = {s.base_offset for s in log.segments}
    # segments were rolled at 300 bytes; a larger segment.bytes (altered since) lets the cleaner
    # merge them
    log.config = log.config.with_overrides(segment_bytes=merge_bytes)
    cleaner = LogCleaner(clock=clock, max_map_entries=map_entries)
    while cleaner.clean(log):    # a small map needs several passes
        pass
    cleaned = log.segments[:-1]
    # merged segments are named by their group's first base and hold at most segment.bytes
    assert {s.base_offset for s in log.segments} <= bases_before
    assert all(s.size <= merge_bytes for s in cleaned)
    if merge_bytes == 1 << 20:       # the last pass grouped every cleanable segment into one
        assert len(cleaned) <= 1
    after = all_records(log)
    # offsets are kept and every surviving record is an original one
    assert [r.offset for r in after] == sorted(r.offset for r in after)
    assert all(original[r.offset] == (r.key, r.value) for r in after)
    latest = {}          # the cleaner's map never covers the active segment
    for off in sorted(o for o in original if o < active_base):
        latest[original[off][0]] = off
    kept = {r.offset for r in after}
    # below the active segment: exactly the latest record of each key (tombstones still inside
    # delete.retention.ms); the active segment is untouched
    assert kept == set(latest.values()) | {o for o in original if o >= active_base}
    # once delete.retention.ms has passed, tombstones in cleaned segments disappear too
    clock.advance(2 * DAY)
    cleaner.forget(log)           # its checkpoint: the next pass covers the whole log again
    while cleaner.clean(log, force=True):
        pass
    after2 = {r.offset: r.value for r in all_records(log)}
    for key, off in latest.items():
        if original[off][1] is None:
            assert off not in after2
        else:
            assert after2[off] == original[off][1]
    # every surviving offset is still found by a read at that very offset (the merged segment's
    # index and the segment list's lookup agree with the data)
    for off, value in after2.items():
        first = next(b for b in iter_batches(log.read(off, 1).read_bytes()))
        assert first.base_offset <= off <= first.last_offset
        assert {r.offset: r.value for r in first.records()}[off] == value
    log.close()


def compacted_log(tmp_path, clock, name="c-0", **cfg):
    return Log(str(tmp_path / name),
               LogConfig().with_overrides(segment_bytes=400, cleanup_policy=("compact",),
                                          min_cleanable_dirty_ratio=0.0, **cfg),
               scheduler=Scheduler(clock), clock=clock, clean_shutdown=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(st.sampled_from([None, 7, 8, 9]),
                                  st.lists(st.integers(0, 4), min_size=1, max_size=4)),
                        min_size=2, max_size=30))
def test_only_each_producers_last_batch_stays_once_emptied(tmp_path_factory, batches):
    clock = FakeClock()
    log = compacted_log(tmp_path_factory.mktemp("e"), clock)
    seqs, original, model, last_of = {}, {}, {}, {}
    for pid, keys in batches:
        meta = {}
        if pid is not None:
            meta = dict(producer_id=pid, producer_epoch=2, base_sequence=seqs.get(pid, 0))
        info = log.append(bytearray(build_batch([(b"k%d" % k, b"v", [], clock.now) for k in keys], **meta)))
        original[info.base_offset] = (pid, meta.get("base_sequence"), info.last_offset, len(keys))
        if pid is not None:
            seqs[pid] = seqs.get(pid, 0) + len(keys)
            last_of[pid] = info.base_offset
        for i, k in enumerate(keys):
            model[info.base_offset + i] = k
    active_base = log.active_segment.base_offset
    cleaner = LogCleaner(clock=clock)
    while cleaner.clean(log):
        pass
    latest = {}
    for off in sorted(o for o in model if o < active_base):
        latest[model[off]] = off
    survivors = set(latest.values()) | {o for o in model if o >= active_base}
    after = all_batches(log)
    assert {r.offset for b in after for r in b.records()} == survivors
    by_base = {b.base_offset: b for b in after}
    for base, (pid, first_seq, last, count) in original.items():
        alive = any(base <= o <= last for o in survivors)
        b = by_base.get(base)
        # a batch stays while it has records; emptied, only as its producer's last batch
        assert (b is not None) == (alive or (pid is not None and last_of[pid] == base))
        if b is None or pid is None:
            continue
        # ... with its whole offset and sequence range and its producer metadata
        assert b.last_offset == last
        assert (b.producer_id, b.producer_epoch, b.base_sequence) == (pid, 2, first_seq)
        assert b.base_sequence + b.last_offset_delta == first_seq + count - 1
        assert (b.record_count == 0) == (not alive)
    log.close()


def test_cleaner_progress_survives_a_restart(tmp_path, clock):
    log = compacted_log(tmp_path, clock)
    for i in range(30):
        log.append(bytearray(build_batch([(b"k%d" % (i % 3), b"v%d" % i, [], clock.now)])))
    assert LogCleaner(clock=clock).clean(log)
    checkpoint = OffsetCheckpointFile(str(tmp_path / "cleaner-offset-checkpoint")).read()
    assert checkpoint == {("c", 0): log.active_segment.base_offset}
    files = {s.base_offset: os.stat(s.log_path).st_ino for s in log.segments}
    # a restarted broker's cleaner resumes at the checkpoint: nothing dirty, nothing rewritten
    again = LogCleaner(clock=clock)
    assert again.first_dirty_offset(log) == checkpoint[("c", 0)]
    assert not again.clean(log)
    assert {s.base_offset: os.stat(s.log_path).st_ino for s in log.segments} == files
    # new data past it is cleaned, and the checkpoint moves on
    for i in range(30, 45):
        log.append(bytearray(build_batch([(b"k%d" % (i % 3), b"v%d" % i, [], clock.now)])))
    assert LogCleaner(clock=clock).clean(log)
    assert OffsetCheckpointFile(str(tmp_path / "cleaner-offset-checkpoint")).read() == {
        ("c", 0): log.active_segment.base_offset}
    latest = {r.key: r.value for r in all_records(log)}
    assert latest == {b"k0": b"v42", b"k1": b"v43", b"k2": b"v44"}
    log.close()
