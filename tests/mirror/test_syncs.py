"""Offset syncs and their translation without a broker: the source offsets each converted chunk
carries, which acknowledged chunks make a sync (MM2's OffsetSyncWriter rules per chunk), MM2's
translation rule and store (rewinds, thinning), and the records' byte layout (MM2's)."""
from __future__ import annotations

import struct

from fastkafka import records
from fastkafka.client.sender import EncodedRecords, RecordMetadata
from fastkafka.client.simple_consumer import MessageSet
from fastkafka.mirror.checkpoints import Checkpoint
from fastkafka.mirror.convert import Converted, Route, convert
from fastkafka.mirror.syncs import OffsetSync, SyncStore, SyncTracker

TP = ("orders", 0)


def rows(n, size=100):
    return [(b"k", b"v" * size, [], 1000 + i) for i in range(n)]


def test_chunks_carry_their_first_and_last_source_offset():
    copied = records.build_batch(rows(2000), base_offset=100)                     # copied whole
    small = records.build_batch(rows(5, 10), base_offset=2100) + records.build_batch(rows(5, 10), base_offset=2110)
    out = convert(MessageSet("orders", 0, 100, copied + small), Route("orders", "dc1.orders", 1, 1))
    assert out.offsets == [(100, 2099), (2100, 2114)]         # the merged chunk spans the gap 2105..2109
    assert [enc.count for _tp, enc in out.chunks] == [2000, 10]
    routed = convert(MessageSet("orders", 0, 2100, small), Route("orders", "orders", 1, 3))
    assert routed.offsets is None                               # another partition count: no syncs


class Writer:
    def __init__(self):
        self.syncs = []

    def write(self, syncs):
        self.syncs += syncs


def part(*chunks):
    """``chunks``: ``(first source offset, last source offset, count)``; a Converted of them."""
    return Converted(TP, chunks[-1][1] + 1, [(("dc1.orders", 0), EncodedRecords(bytearray(), n, n - 1, 0, 0))
                                             for _u0, _u1, n in chunks], 0, 0, [(u0, u1) for u0, u1, _n in chunks])


def ack(*offsets):
    return [RecordMetadata("dc1.orders", 0, d, 0) for d in offsets]


def pairs(writer):
    return [(s.upstream, s.downstream) for s in writer.syncs]


def test_one_sync_per_chunk_at_most_by_mm2s_rules():
    w = Writer()
    t = SyncTracker(w, offset_lag_max=100, flush_interval_s=3600)
    t.acknowledged(part((30, 39, 10), (40, 49, 10)), ack(17, 27))
    assert pairs(w) == [(30, 17)]                 # the partition's first record; the rest waits
    t.acknowledged(part((50, 149, 100)), ack(37))
    assert pairs(w)[1:] == [(149, 136)]           # the translation would lag 100 records: its last
    t.acknowledged(part((150, 159, 10)), ack(137))
    t.acknowledged(part((165, 169, 5)), ack(147))
    assert pairs(w)[2:] == [(165, 147)]           # after a gap in the source (markers, aborted): its first
    t.commit()
    assert pairs(w)[3:] == [(169, 151)]           # the waiting last record, at the first commit
    t.acknowledged(part((170, 170, 1)), ack(152))
    t.commit()
    assert pairs(w)[4:] == []                     # not again within the flush interval
    t.commit(force=True)
    assert pairs(w)[4:] == [(170, 152)]
    t.acknowledged(part((100, 109, 10)), ack(200))
    assert pairs(w)[5:] == [(100, 200)]           # a rewind (copied again after a restart)
    t.acknowledged(part((110, 119, 10)), ack(150))
    assert pairs(w)[6:] == [(110, 150)]           # the target went back: truncated
    t.forget()
    assert pairs(w)[7:] == [(119, 159)]           # letting go writes what waits
    t.acknowledged(part((120, 129, 10)), ack(160))
    assert pairs(w)[8:] == [(120, 160)]           # and the next chunk is a first again
    t.acknowledged(part((130, 131, 2)), [RecordMetadata("dc1.orders", 0, -1, 0)])
    assert len(w.syncs) == 9                      # no offset known (acks=0): nothing


def test_translation_follows_mm2():
    s = SyncStore()
    assert s.translate(TP, 5) is None
    for u, d in ((30, 17), (60, 47), (79, 66)):
        s.add(OffsetSync(*TP, u, d))
    assert [s.translate(TP, c) for c in (29, 30, 31, 59, 60, 61, 79, 80, 1000)] == [-1, 17, 18, 18, 47, 48, 66, 67, 67]
    s.add(OffsetSync(*TP, 50, 90))                # upstream rewind: the earlier syncs are void
    assert [s.translate(TP, c) for c in (49, 50, 70)] == [-1, 90, 91]
    s.add(OffsetSync(*TP, 50, 95))                # the same upstream again: the newer counts
    assert s.translate(TP, 50) == 95


def test_the_store_keeps_the_newest_syncs_and_thins_older_ones():
    s = SyncStore()
    for i in range(10_000):
        s.add(OffsetSync(*TP, 10 * i, 5 * i))
    kept = s.syncs[TP]
    assert len(kept) <= 4 * SyncStore.KEEP
    assert kept[-SyncStore.KEEP:] == [(10 * i, 5 * i) for i in range(10_000 - SyncStore.KEEP, 10_000)]
    assert kept == sorted(kept) and kept[0] == (0, 0)        # the first is always kept
    for c in range(0, 100_000, 997):              # coarser far back, never past the group
        d = s.translate(TP, c)                    # (records re-read: about 2x the distance at most)
        assert 0 <= d <= c // 2 + 1 and (c - 2 * d) <= 2 * (99_990 - c) + 20


def test_records_have_mm2s_layout():
    sync = OffsetSync("orders", 2, 30, 17)
    assert sync.key() == b"\x00\x06orders" + struct.pack(">i", 2)
    assert sync.value() == struct.pack(">qq", 30, 17)
    cp = Checkpoint("billing", "dc1.orders", 2, 55, 18, "m")
    assert cp.key() == b"\x00\x07billing\x00\x0adc1.orders" + struct.pack(">i", 2)
    assert cp.value() == struct.pack(">hqq", 0, 55, 18) + b"\x00\x01m"
    assert Checkpoint.decode(cp.key(), cp.value()) == cp and OffsetSync.decode(sync.key(), sync.value()) == sync
