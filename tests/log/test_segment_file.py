"""_core.segment: appends at the end, fdatasync counting, truncation, batch scan."""
import pytest

from fastkafka._core.records import assign_offsets
from fastkafka._core.segment import SegmentFile

from .conftest import batch


def test_append_read_truncate(tmp_path):
    f = SegmentFile(str(tmp_path / "00000000000000000000.log"), create=True)
    assert f.append(b"abc") == 0
    assert f.append(memoryview(bytearray(b"defg"))) == 3
    big = bytes(range(256)) * 1024          # large enough to release the GIL
    assert f.append(big) == 7
    assert f.size == 7 + len(big)
    assert f.read(0, 7) == b"abcdefg" and f.read(7, len(big)) == big
    f.flush()
    f.flush()
    assert f.sync_count == 2
    f.truncate(5)
    assert f.size == 5 and f.read(0, 100) == b"abcde"
    assert f.append(b"Z") == 5
    f.close()
    assert f.closed
    with pytest.raises(ValueError):
        f.append(b"x")


def test_find_batch_returns_the_batch_containing_an_offset(tmp_path):
    f = SegmentFile(str(tmp_path / "00000000000000000000.log"), create=True)
    layout, nxt = [], 0
    for n in (3, 1, 5):
        b = batch(n, ts=100 * n)
        base = nxt
        nxt = assign_offsets(b, base)
        layout.append((f.append(b), base, nxt - 1, len(b)))
    for pos, base, last, size in layout:
        for off in range(base, last + 1):
            found = f.find_batch(off)
            assert (found[0], found[1], found[2], found[4]) == (pos, base, last, size)
    assert f.find_batch(nxt) is None
    # bounded by `end`: a batch cut by the bound is not returned
    assert f.find_batch(4, 0, layout[-1][0] + 10) is None
    # by timestamp: first batch whose max timestamp reaches the target
    assert f.find_batch(0, target_timestamp=450)[1] == 4
