"""fastkafka dump-log: batches, records, index entries, and a CRC failure reported."""
import os

from fastkafka.cli.dump_log import main

from .conftest import batch


def test_dump_log_prints_batches_records_and_indexes(make_log, capsys):
    log = make_log(index_interval_bytes=50)
    for i in range(4):
        log.append(batch(2, ts=1000 + 10 * i, key=b"key"))
    log.close()
    seg = log.segments[0]
    assert main(["--print-data-log", seg.log_path, seg.index_path, seg.time_index_path]) == 0
    out = capsys.readouterr().out
    assert out.count("isvalid: true") == 4
    assert "baseOffset: 6 lastOffset: 7 count: 2" in out
    assert "| offset: 7 CreateTime: 1031 keySize: 3 valueSize: 10 headerKeys: [] key: key payload: BBBBBBBBBB" in out
    assert "offset: 7 position:" in out and "timestamp: 1031 offset: 7" in out


def test_dump_log_reports_corruption(make_log, capsys):
    log = make_log()
    log.append(batch(1))
    log.append(batch(1))
    log.close()
    path = log.segments[0].log_path
    with open(path, "r+b") as f:
        f.seek(-2, 2)
        f.write(b"\xff\xff")
    assert main([path]) == 1
    out = capsys.readouterr().out
    assert out.count("isvalid: true") == 1 and "invalid bytes at batch at position" in out


def test_dump_log_of_a_live_preallocated_index_prints_only_its_entries(make_log, capsys):
    """The active segment's indexes are preallocated with zeros while the broker runs: only the
    real entries are printed, and the index is not called corrupt."""
    log = make_log(index_interval_bytes=50)
    for i in range(6):
        log.append(batch(2, ts=1000 + 10 * i, key=b"key"))
    seg = log.active_segment                     # still open: not trimmed
    entries = seg.offset_index().entries
    assert entries > 0 and os.path.getsize(seg.index_path) > 8 * entries
    assert main([seg.index_path, seg.time_index_path]) == 0
    out = capsys.readouterr().out
    assert out.count("offset: ") - out.count("timestamp: ") == entries       # offset index lines
    assert "corrupt" not in out and "preallocated empty entries not shown" in out
    log.close()
