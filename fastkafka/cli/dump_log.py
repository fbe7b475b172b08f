"""``fastkafka dump-log FILE...``: print the batches (and records) of ``.log`` files and the entries
of ``.index`` / ``.timeindex`` / ``.txnindex`` files, verifying CRCs, like Kafka's
``kafka-dump-log.sh`` (transaction markers print as ``endTxnMarker: COMMIT coordinatorEpoch: N``).

Example::

    $ fastkafka dump-log --print-data-log data/orders-0/00000000000000000000.log
    Dumping data/orders-0/00000000000000000000.log
    baseOffset: 0 lastOffset: 1 count: 2 ... position: 0 ... crc: 1234 isvalid: true
    | offset: 0 CreateTime: 1000 keySize: 1 valueSize: 1 ... key: k payload: v
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from .._core.index import OffsetIndex, TimeIndex
from .._core.records import read_header, validate
from ..log.txn_index import ENTRY_SIZE, iter_entries
from ..records import end_txn_marker, iter_batches

_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _text(b: bytes | None) -> str:
    if b is None:
        return "null"
    return b.decode("utf-8", "backslashreplace")


def dump_log_file(path: str, out: TextIO, print_data: bool) -> int:
    """Every batch with its header fields and CRC check; returns 1 if the file has invalid bytes."""
    size = os.path.getsize(path)
    if size == 0:
        return 0
    with open(path, "rb") as fh:       # a tool, not the fetch path: reading the file is fine
        data = fh.read()
        v = validate(data)
        pos = 0
        for b in iter_batches(data[:v.valid_bytes], check_crc=False):
            h = b.header
            out.write(
                f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.record_count} "
                f"baseSequence: {h.base_sequence} lastSequence: "
                f"{h.base_sequence + h.last_offset_delta if h.base_sequence >= 0 else -1} "
                f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
                f"partitionLeaderEpoch: {h.partition_leader_epoch} isTransactional: "
                f"{str(h.is_transactional).lower()} isControl: {str(h.is_control).lower()} "
                f"position: {pos} {'LogAppendTime' if h.timestamp_type else 'CreateTime'}: "
                f"{h.max_timestamp} size: {h.size} magic: {h.magic} "
                f"compresscodec: {_CODECS.get(h.compression, h.compression)} crc: {h.crc} isvalid: true\n")
            if print_data and h.is_control:
                marker = end_txn_marker(b)
                if marker is not None:
                    out.write(f"| offset: {h.base_offset} endTxnMarker: "
                              f"{'COMMIT' if marker[0] else 'ABORT'} coordinatorEpoch: {marker[1]}\n")
            elif print_data:
                ts_name = "LogAppendTime" if h.timestamp_type else "CreateTime"
                for r in b.records():
                    hdrs = ",".join(f"{k}:{_text(val)}" for k, val in r.headers)
                    out.write(f"| offset: {r.offset} {ts_name}: {r.timestamp} "
                              f"keySize: {-1 if r.key is None else len(r.key)} "
                              f"valueSize: {-1 if r.value is None else len(r.value)} "
                              f"headerKeys: [{hdrs}] key: {_text(r.key)} payload: {_text(r.value)}\n")
            pos += h.size
        bad = 0
        if v.valid_bytes < size:
            reason = v.error if v.error is not None else "trailing bytes"
            try:
                h = read_header(data, v.valid_bytes)
                where = f"batch at position {v.valid_bytes} (baseOffset {h.base_offset})"
            except Exception:
                where = f"position {v.valid_bytes}"
            out.write(f"Found {size - v.valid_bytes} invalid bytes at {where}: {reason} isvalid: false\n")
            bad = 1
    return bad


def dump_index_file(path: str, out: TextIO) -> int:
    """Print an index's entries. The index of an active segment is preallocated with zeros (and
    so is one left by a crash): like Kafka's tool, stop at the first all-zero entry after the
    first, which no real entry can be (offsets and timestamps only grow)."""
    base = int(os.path.basename(path).split(".")[0])
    time_index = path.endswith(".timeindex")
    idx = (TimeIndex if time_index else OffsetIndex)(path, base, writable=False)
    try:
        prev, ok, shown = None, True, 0
        for i in range(idx.entries):
            a, b = idx.entry(i)
            if i > 0 and (a, b) == ((0, base) if time_index else (base, 0)):
                break
            if prev is not None and (a <= prev[0] or b < prev[1]):
                ok = False
            prev = (a, b)
            shown += 1
            out.write(f"timestamp: {a} offset: {b}\n" if time_index else f"offset: {a} position: {b}\n")
        if shown < idx.entries:
            out.write(f"({idx.entries - shown} preallocated empty entries not shown)\n")
    finally:
        idx.close()
    if not ok:
        out.write("Index entries are not increasing: the index is corrupt and would be rebuilt\n")
    return 0 if ok else 1


def dump_txn_index_file(path: str, out: TextIO) -> int:
    """Print a transaction index's aborted transactions (Kafka's wording); 1 for a torn tail."""
    with open(path, "rb") as fh:
        data = fh.read()
    for version, t in iter_entries(data):
        out.write(f"version: {version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
                  f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}\n")
    if len(data) % ENTRY_SIZE:
        out.write(f"Found {len(data) % ENTRY_SIZE} trailing bytes (a torn entry) isvalid: false\n")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fastkafka dump-log", description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", metavar="FILE", help=".log, .index, .timeindex or .txnindex files")
    p.add_argument("--print-data-log", "--deep-iteration", action="store_true", dest="print_data",
                   help="print every record (key, payload, headers) too")
    args = p.parse_args(argv)
    status = 0
    for path in args.files:
        print(f"Dumping {path}")
        try:
            if path.endswith((".index", ".timeindex")):
                status |= dump_index_file(path, sys.stdout)
            elif path.endswith(".txnindex"):
                status |= dump_txn_index_file(path, sys.stdout)
            elif path.endswith(".log"):
                status |= dump_log_file(path, sys.stdout, args.print_data)
            else:
                print(f"Ignoring unknown file {path}", file=sys.stderr)
                status = 2
        except BrokenPipeError:
            raise                # the reader went away: the command's main stops quietly
        except OSError as e:
            print(f"{path}: {e}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
