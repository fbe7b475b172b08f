"""_core.index: the mmap'd offset and time indexes against a linear-scan model."""
import os

import pytest
from hypothesis import given, settings, strategies as st

from fastkafka._core.index import OffsetIndex, TimeIndex


def linear_floor(entries, target, default):
    best = default
    for e in entries:
        if e[0] <= target:
            best = e
    return best


@settings(max_examples=60, deadline=None)
@given(deltas=st.lists(st.integers(1, 1000), max_size=200), probes=st.lists(st.integers(-10, 250_000), max_size=50))
def test_offset_index_lookup_matches_linear_scan(tmp_path_factory, deltas, probes):
    path = tmp_path_factory.mktemp("idx") / "00000000000000000100.index"
    idx = OffsetIndex(str(path), 100, 64 * 1024)
    entries, off, pos = [], 100, 0
    for d in deltas:
        off += d
        pos += d * 3
        idx.append(off, pos)
        entries.append((off, pos))
    for p in probes + [e[0] for e in entries]:
        assert idx.lookup(p) == linear_floor(entries, p, (100, 0))
    cut = entries[len(entries) // 2][0] if entries else 100
    idx.truncate_to(cut)
    kept = [e for e in entries if e[0] < cut]
    assert idx.entries == len(kept)
    for p in probes:
        assert idx.lookup(p) == linear_floor(kept, p, (100, 0))
    idx.close()
    # a closed index is trimmed: its length gives the entries when reopened read-only
    assert os.path.getsize(path) == 8 * len(kept)
    ro = OffsetIndex(str(path), 100, 64 * 1024, writable=False)
    assert ro.entries == len(kept) and ro.is_valid()
    assert [ro.entry(i) for i in range(ro.entries)] == kept


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), max_size=200),
       probes=st.lists(st.integers(0, 20_000), max_size=50))
def test_time_index_lookup_matches_linear_scan(tmp_path_factory, steps, probes):
    path = tmp_path_factory.mktemp("tidx") / "00000000000000000000.timeindex"
    ti = TimeIndex(str(path), 0, 12 * 1024)
    entries, ts, off = [], 0, 0
    for dts, doff in steps:
        ts += dts
        off += doff
        ti.append(ts, off)
        if not entries or ts > entries[-1][0]:   # only increasing timestamps are kept
            entries.append((ts, off))
    assert ti.entries == len(entries)
    for p in probes:
        assert ti.lookup(p) == linear_floor(entries, p, (-1, 0))
    assert ti.last_entry == (entries[-1] if entries else (-1, 0))


def test_offset_index_is_preallocated_full_and_rejects_bad_entries(tmp_path):
    path = str(tmp_path / "00000000000000000000.index")
    idx = OffsetIndex(path, 0, 8 * 4 + 5)     # rounded down to whole entries
    assert os.path.getsize(path) == 32 and idx.max_entries == 4
    for i in range(4):
        idx.append(i * 10, i * 100)
    assert idx.is_full
    with pytest.raises(ValueError):
        idx.append(100, 1000)
    idx.truncate_to(20)
    with pytest.raises(ValueError):
        idx.append(5, 0)               # not increasing
    with pytest.raises(ValueError):
        idx.append(1 << 40, 0)         # relative offset does not fit int32
    idx.trim()
    assert os.path.getsize(path) == 16 and idx.is_full


def test_untrimmed_index_left_by_a_crash_is_invalid(tmp_path):
    path = str(tmp_path / "00000000000000000000.index")
    idx = OffsetIndex(path, 0, 4096)
    idx.append(5, 100)
    idx.append(9, 300)
    del idx                           # no trim: the file keeps its preallocated zeros
    again = OffsetIndex(path, 0, 4096)
    assert again.entries == 512 and not again.is_valid()
    again.reset()
    assert again.entries == 0 and again.is_valid()
