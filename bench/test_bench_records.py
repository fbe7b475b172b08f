"""Record batch v2: validate against a CRC pass over the same bytes, build_batch and
decode_columns against aiokafka's Cython code and kafka-python (references in the same run)."""
import crc32c as crc32c_pkg
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from bench_records import AioBuilder, KpBuilder, iterate, make_records, reference_build, stamped
from benchkit import compare, pick
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

from fastkafka import records
from fastkafka._core import records as core
from fastkafka._core.crc32c import crc32c as fk_crc32c


def test_validate(benchmark):
    one_k = stamped([records.build_batch(make_records(16, 1024)) for _ in range(pick(64, 2))])
    assert core.validate(one_k).error is None
    benchmark.group = "records"
    compare(benchmark, lambda: core.validate(one_k),
            {"crc32c pkg": lambda: crc32c_pkg.crc32c(one_k), "fastkafka crc32c": lambda: fk_crc32c(one_k),
             "header walk, no CRC": lambda: core.validate(one_k, check_crc=False)},
            what=f"validate {len(one_k) >> 10} KiB, 16 x 1 KiB records a batch (CRC + framing)",
            amount=len(one_k), unit="GB/s", scale=1e9, inner=pick(20, 1), n_rounds=15, goal=">= 3 GB/s")


def test_validate_records(benchmark):
    small = stamped([records.build_batch(make_records(100, 100)) for _ in range(pick(95, 2))])
    assert core.validate_records(small).error is None
    benchmark.group = "records"
    compare(benchmark, lambda: core.validate_records(small), {"validate": lambda: core.validate(small)},
            what=f"validate_records {len(small) >> 10} KiB of 100 B records (the produce-path record walk)",
            amount=len(small), unit="GB/s", scale=1e9, inner=pick(20, 1), n_rounds=15)


def test_build_batch(benchmark):
    n = pick(1000, 50)
    recs = make_records(n, 100)
    assert bytes(reference_build(AioBuilder, recs)) == records.build_batch(recs, partition_leader_epoch=-1)
    benchmark.group = "records"
    compare(benchmark, lambda: records.build_batch(recs, partition_leader_epoch=-1),
            {"aiokafka builder": lambda: reference_build(AioBuilder, recs),
             "kafka-python builder": lambda: reference_build(KpBuilder, recs),
             "build_batch zstd": lambda: records.build_batch(recs, compression=4)},
            what=f"build_batch {n} x 100 B, uncompressed", amount=n, unit="M records/s", scale=1e6,
            inner=pick(20, 1), n_rounds=9, goal=">= 3x")


def _decode(benchmark, compression: int, label: str):
    batches = pick(100, 2)
    data = stamped([records.build_batch(make_records(1000, 100), compression=compression) for _ in range(batches)])
    n = batches * 1000
    assert records.decode_columns(data).count == n == iterate(AioMemoryRecords, data)
    refs = {"aiokafka iteration": lambda: iterate(AioMemoryRecords, data)}
    if not compression:
        refs.update({"kafka-python iteration": lambda: iterate(KpMemoryRecords, data),
                     "decode_columns, no CRC": lambda: records.decode_columns(data, check_crc=False),
                     "Record objects": lambda: [b.records() for b in records.iter_batches(data)]})
    benchmark.group = "records"
    compare(benchmark, lambda: records.decode_columns(data), refs,
            what=f"decode_columns {batches} batches x 1,000 x 100 B{label} (CRC checked)", amount=n,
            unit="M records/s", scale=1e6, n_rounds=pick(5, 1), goal="" if compression else ">= 3x, >= 10 M/s")


def test_decode_columns(benchmark):
    _decode(benchmark, 0, "")


def test_decode_columns_zstd(benchmark):
    _decode(benchmark, 4, ", zstd")
