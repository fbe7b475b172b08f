"""Record batch v2 micro-benchmarks, each reported as a ratio against a reference measured in
the same run (DESIGN §9). The candidates of one comparison are timed alternately, best of N.

    .venv/bin/python bench/bench_records.py            # all
    .venv/bin/python bench/bench_records.py validate   # one section: validate|build|decode

Sections:
  validate  1 MiB of batches of 1 KiB records: validate (CRC + framing) vs the crc32c package
            over the same bytes (the limit: validate is a CRC pass plus a header walk);
            validate_records on 100 B records (the produce-path INVALID_RECORD walk) vs validate.
  build     one batch of 1,000 x 100 B records: build_batch vs aiokafka's Cython
            DefaultRecordBatchBuilder and kafka-python's builder.
  decode    100 batches x 1,000 x 100 B records: decode_columns (records/s) vs iterating
            aiokafka's and kafka-python's record classes reading offset/timestamp/key/value.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import crc32c as crc32c_pkg  # noqa: E402
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

from fastkafka import records
from fastkafka._core import records as core
from fastkafka._core.crc32c import crc32c as fk_crc32c


def best(fns, repeat=7, inner=1):
    """Best time per call of each fn, timing them alternately."""
    times = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            times[i] = min(times[i], (time.perf_counter() - t0) / inner)
    return times


def make_records(n, size, ts=1_700_000_000_000):
    return [(b"key-%06d" % i, (b"%08d" % i) * (size // 8), [], ts + i) for i in range(n)]


def stamped(parts):
    data = bytearray(b"".join(parts))
    core.assign_offsets(data, 0)
    return bytes(data)


def bench_validate():
    one_k = stamped([records.build_batch(make_records(16, 1024)) for _ in range(64)])
    small = stamped([records.build_batch(make_records(100, 100)) for _ in range(95)])
    assert core.validate(one_k).error is None and core.validate_records(small).error is None
    t_val, t_crc, t_fk, t_walk = best([lambda: core.validate(one_k), lambda: crc32c_pkg.crc32c(one_k),
                                       lambda: fk_crc32c(one_k),
                                       lambda: core.validate(one_k, check_crc=False)], repeat=15, inner=20)
    gb = len(one_k) / 1e9
    print(f"validate {len(one_k) / 2**20:.2f} MiB, 1 KiB records: {gb / t_val:.2f} GB/s; "
          f"crc32c package {gb / t_crc:.2f} GB/s (ratio validate/crc32c = {t_crc / t_val:.2f}); "
          f"fastkafka crc32c {gb / t_fk:.2f} GB/s (validate reaches {t_fk / t_val:.2f} of it); "
          f"header walk without CRC {t_walk * 1e6:.1f} us")
    t_v, t_vr, t_crc = best([lambda: core.validate(small), lambda: core.validate_records(small),
                             lambda: crc32c_pkg.crc32c(small)], repeat=15, inner=20)
    n = core.validate(small).record_count
    print(f"validate {len(small) / 2**20:.2f} MiB, 100 B records ({n} records): validate "
          f"{len(small) / t_v / 1e9:.2f} GB/s, validate_records {len(small) / t_vr / 1e9:.2f} GB/s "
          f"({n / t_vr / 1e6:.0f} M records/s); validate_records costs {t_vr / t_v:.2f}x validate, "
          f"crc32c package {len(small) / t_crc / 1e9:.2f} GB/s")


def bench_build():
    recs = make_records(1000, 100)

    def aio():
        b = AioBuilder(2, 0, False, -1, -1, -1, 1 << 24)
        for i, (k, v, h, ts) in enumerate(recs):
            b.append(i, ts, k, v, h)
        return b.build()

    def kp():
        b = KpBuilder(2, 0, False, -1, -1, -1, 1 << 24)
        for i, (k, v, h, ts) in enumerate(recs):
            b.append(i, ts, k, v, h)
        return b.build()

    ours = lambda: records.build_batch(recs, partition_leader_epoch=-1)
    assert bytes(aio()) == ours()
    t_ours, t_aio, t_kp = best([ours, aio, kp], repeat=9, inner=20)
    print(f"build 1,000 x 100 B: build_batch {t_ours * 1e6:.0f} us "
          f"({1000 / t_ours / 1e6:.1f} M records/s); aiokafka {t_aio * 1e6:.0f} us; "
          f"kafka-python {t_kp * 1e6:.0f} us; ratio vs aiokafka {t_aio / t_ours:.1f}x, "
          f"vs kafka-python {t_kp / t_ours:.1f}x")
    zs = lambda: records.build_batch(recs, compression=4)
    (t_z,) = best([zs], repeat=5, inner=5)
    print(f"build 1,000 x 100 B zstd: {t_z * 1e6:.0f} us")


def iterate(memory_records_cls, data):
    n = 0
    mr = memory_records_cls(data)
    while mr.has_next():
        for r in mr.next_batch():
            r.offset, r.timestamp, r.key, r.value
            n += 1
    return n


def bench_decode():
    data = stamped([records.build_batch(make_records(1000, 100)) for _ in range(100)])
    n = 100_000
    assert records.decode_columns(data).count == n == iterate(AioMemoryRecords, data)
    t_cols, t_nocrc, t_py = best([lambda: records.decode_columns(data),
                                  lambda: records.decode_columns(data, check_crc=False),
                                  lambda: [b.records() for b in records.iter_batches(data)]],
                                 repeat=7, inner=3)
    t_cols2, t_aio = best([lambda: records.decode_columns(data),
                           lambda: iterate(AioMemoryRecords, data)], repeat=5)
    t_cols3, t_kp = best([lambda: records.decode_columns(data),
                          lambda: iterate(KpMemoryRecords, data)], repeat=2)
    print(f"decode {n} x 100 B records ({len(data) / 2**20:.1f} MiB): decode_columns "
          f"{n / t_cols / 1e6:.1f} M records/s ({len(data) / t_cols / 1e9:.2f} GB/s), without CRC "
          f"{n / t_nocrc / 1e6:.1f} M/s; Record objects {n / t_py / 1e6:.2f} M/s; "
          f"aiokafka {n / t_aio / 1e6:.2f} M/s (ratio {t_aio / t_cols2:.1f}x); "
          f"kafka-python {n / t_kp / 1e6:.3f} M/s (ratio {t_kp / t_cols3:.0f}x)")
    zdata = stamped([records.build_batch(make_records(1000, 100), compression=4) for _ in range(100)])
    t_z, t_zaio = best([lambda: records.decode_columns(zdata),
                        lambda: iterate(AioMemoryRecords, zdata)], repeat=5)
    print(f"decode zstd: decode_columns {n / t_z / 1e6:.1f} M records/s, aiokafka "
          f"{n / t_zaio / 1e6:.2f} M/s (ratio {t_zaio / t_z:.1f}x)")


SECTIONS = {"validate": bench_validate, "build": bench_build, "decode": bench_decode}

if __name__ == "__main__":
    for name in sys.argv[1:] or SECTIONS:
        SECTIONS[name]()
