"""Recovery: the corruption matrix (torn, garbage, zeros, flipped bytes) keeps the valid prefix."""
import os
import random

import pytest

from fastkafka.records import iter_batches

from .conftest import batch


def fill(make_log, n_batches=6, **cfg):
    log = make_log(**cfg)
    ends = []
    for i in range(n_batches):
        log.append(batch(3, ts=1000 + i, size=20 + i))
        ends.append((log.log_end_offset, log.active_segment.size))
    log.close()
    return ends


def reopen_unclean(make_log, **cfg):
    return make_log(clean_shutdown=False, recovery_point=0, **cfg)


def reopen(make_log, shutdown, **cfg):
    """After a clean shutdown the recovery point is the log end: only the active tail is checked."""
    if shutdown == "unclean":
        return reopen_unclean(make_log, **cfg)
    return make_log(clean_shutdown=True, recovery_point=1 << 40, **cfg)


SHUTDOWNS = pytest.mark.parametrize("shutdown", ["clean", "unclean"])


def check_prefix(log, next_offset):
    assert log.log_end_offset == next_offset
    got = []
    while len(got) < next_offset:     # one read returns one segment's region
        region = log.read(len(got), 1 << 30)
        got += [r.offset for b in iter_batches(region.read_bytes()) for r in b.records()]
    assert got == list(range(next_offset))
    # the log keeps working where it left off
    assert log.append(batch(1)).base_offset == next_offset
    assert log.read(next_offset, 1 << 20).length > 0


@SHUTDOWNS
def test_truncate_at_every_byte_of_the_last_batch(make_log, tmp_path, shutdown):
    ends = fill(make_log)
    path = tmp_path / "t-0" / "00000000000000000000.log"
    data = path.read_bytes()
    (prev_next, prev_size), (last_next, last_size) = ends[-2], ends[-1]
    for cut in range(prev_size, last_size + 1):
        path.write_bytes(data[:cut])
        log = reopen(make_log, shutdown)
        expected = last_next if cut == last_size else prev_next
        assert log.log_end_offset == expected, cut
        assert log.active_segment.size == (last_size if cut == last_size else prev_size)
        log.close()
    path.write_bytes(data)


@SHUTDOWNS
@pytest.mark.parametrize("tail", ["random", "zeros", "flip"])
def test_garbage_zero_filled_and_flipped_tails(make_log, tmp_path, tail, shutdown):
    ends = fill(make_log)
    path = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    rng = random.Random(7)
    if tail == "random":
        data += bytes(rng.randrange(256) for _ in range(1000))
        expected = ends[-1][0]
    elif tail == "zeros":
        data += bytes(4096)          # the file grew but its blocks never reached the disk
        expected = ends[-1][0]
    else:
        data[ends[-2][1] + 70] ^= 0x10  # inside the last batch's records: CRC mismatch
        expected = ends[-2][0]
    path.write_bytes(bytes(data))
    log = reopen(make_log, shutdown)
    assert log.recovered_bytes_dropped == len(data) - log.active_segment.size
    check_prefix(log, expected)


def test_corruption_in_an_older_segment_drops_later_segments(make_log, tmp_path):
    fill(make_log, n_batches=12, segment_bytes=400)
    log = make_log(segment_bytes=400)
    segs = [(s.base_offset, s.size) for s in log.segments]
    log.close()
    assert len(segs) >= 3
    base, size = segs[1]
    p = tmp_path / "t-0" / f"{base:020d}.log"
    data = bytearray(p.read_bytes())
    data[size - 5] ^= 0xFF                      # last batch of the second segment
    p.write_bytes(bytes(data))
    log = reopen_unclean(make_log, segment_bytes=400)
    assert [s.base_offset for s in log.segments] == [segs[0][0], base]
    assert log.active_segment.active
    check_prefix(log, log.log_end_offset)
    assert log.log_end_offset < segs[2][0]


def test_clean_shutdown_skips_revalidation_and_missing_indexes_are_rebuilt(make_log, tmp_path):
    fill(make_log, n_batches=12, segment_bytes=400, index_interval_bytes=50)
    d = tmp_path / "t-0"
    idx = sorted(d.glob("*.index"))[0]
    expected = idx.read_bytes()
    idx.unlink()
    (sorted(d.glob("*.timeindex"))[0]).write_bytes(b"\x00" * 25)   # not a whole number of entries
    log = make_log(segment_bytes=400, index_interval_bytes=50)       # clean: no revalidation
    assert log.recovered_bytes_dropped == 0
    first = log.segments[0]
    assert first.offset_index().entries == len(expected) // 8 > 0
    first.close()
    assert idx.read_bytes() == expected
    assert log.offset_for_timestamp(1003) == (5, 1003)   # batch 1 holds 1001..1003
    check_prefix(log, 36)


def test_leftover_files_of_interrupted_operations_are_tidied(make_log, tmp_path):
    fill(make_log)
    d = tmp_path / "t-0"
    (d / "00000000000000000099.log.deleted").write_bytes(b"x")
    (d / "00000000000000000007.log.cleaned").write_bytes(b"x")
    (d / "00000000000000000500.index").write_bytes(b"\x00" * 8)     # index without a log
    log = make_log()
    assert sorted(os.listdir(d)) == ["00000000000000000000.index", "00000000000000000000.log",
                                     "00000000000000000000.timeindex"]
    check_prefix(log, 18)


@pytest.mark.parametrize("damage", ["torn", "garbage", "flip_indexed", "index_past_end"])
def test_clean_start_checks_the_tail_from_the_last_index_entry(make_log, tmp_path, damage):
    """With index entries, a clean start walks from the last one; damage at the indexed batch
    itself (or an index pointing past the file) falls back to recovering the whole segment."""
    ends = fill(make_log, n_batches=40, index_interval_bytes=300)
    d = tmp_path / "t-0"
    path = d / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    log = make_log(index_interval_bytes=300)
    last_entry = log.active_segment.offset_index().lookup(1 << 62)
    log.close()
    assert last_entry[1] > 0
    at = [i for i, (nxt, _) in enumerate(ends) if nxt - 1 == last_entry[0]][0]   # the indexed batch
    if damage == "torn":
        data = data[:-37]
        expected = ends[-2][0]
    elif damage == "garbage":
        data += bytes(random.Random(3).randrange(256) for _ in range(3000))
        expected = ends[-1][0]
    elif damage == "flip_indexed":
        data[last_entry[1] + 70] ^= 0x01
        expected = ends[at - 1][0]
    else:
        data = data[:last_entry[1] - 1]            # the file ends before the indexed batch
        expected = ends[at - 2][0]
    path.write_bytes(bytes(data))
    log = reopen(make_log, "clean", index_interval_bytes=300)
    assert log.recovered_bytes_dropped == len(data) - log.active_segment.size > 0
    check_prefix(log, expected)
