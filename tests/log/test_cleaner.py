"""Compaction against a dict model: latest value per key, offsets kept, tombstones expire."""
from hypothesis import HealthCheck, given, settings, strategies as st

from fastkafka.config import LogConfig
from fastkafka.log import Log
from fastkafka.log.cleaner import LogCleaner
from fastkafka.log.scheduler import Scheduler
from fastkafka.records import build_batch, iter_batches

from .conftest import FakeClock

DAY = 86_400_000


def all_records(log):
    out, off = [], log.log_start_offset
    while off < log.log_end_offset:
        region = log.read(off, 1 << 30)
        if region.length == 0:
            break
        recs = [r for b in iter_batches(region.read_bytes()) for r in b.records()]
        out += [r for r in recs if r.offset >= off]
        off = recs[-1].offset + 1 if recs else log.log_end_offset
    return out


ops = st.lists(st.lists(st.tuples(st.integers(0, 7), st.one_of(st.none(), st.binary(min_size=1, max_size=8))),
                        min_size=1, max_size=6), min_size=1, max_size=40)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=ops, codec=st.sampled_from([0, 1]), map_entries=st.sampled_from([3, 1000]))
def test_compaction_matches_a_dict_model(tmp_path_factory, batches, codec, map_entries):
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
    cleaner = LogCleaner(clock=clock, max_map_entries=map_entries)
    while cleaner.clean(log):    # a small map needs several passes
        pass
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
    cleaner.checkpoints.clear()
    while cleaner.clean(log, force=True):
        pass
    after2 = {r.offset: r.value for r in all_records(log)}
    for key, off in latest.items():
        if original[off][1] is None:
            assert off not in after2
        else:
            assert after2[off] == original[off][1]
    log.close()
