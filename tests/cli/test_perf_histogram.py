"""The latency histogram's percentiles stay within its bucket precision of the exact ones, and its
size does not grow with the number of records."""
import random

from fastkafka.perf.histogram import LatencyHistogram


def test_percentiles_within_precision_of_the_sorted_values():
    rng = random.Random(7)
    values = [rng.lognormvariate(1.0, 1.5) for _ in range(200_000)]
    h = LatencyHistogram()
    for v in values:
        h.record_ms(v)
    values.sort()
    for q in (0.5, 0.95, 0.99, 0.999):
        exact = values[max(0, -(-int(q * len(values) * 1e6) // 1_000_000) - 1)]
        assert exact - 0.001 <= h.percentile_ms(q) <= exact * (1 + 1 / 128) + 0.001, q
    assert h.max_ms == round(values[-1], 3) and h.percentile_ms(1.0) == h.max_ms
    assert abs(h.mean_ms - sum(values) / len(values)) < 0.001


def test_counts_and_merge_keep_the_size_bounded():
    h, other = LatencyHistogram(), LatencyHistogram()
    buckets = len(h.counts)
    h.record_ms(5.0, count=10_000_000)             # a batch of ten million records at once
    other.record_ms(7_200_000.0)                  # two hours: clamped to the largest bucket, still counted
    h.merge(other)
    assert len(h.counts) == buckets and h.count == 10_000_001
    assert 5.0 <= h.percentile_ms(0.5) <= 5.0 * (1 + 1 / 128) and h.max_ms == 3_600_000.0
    assert LatencyHistogram().percentile_ms(0.99) == 0.0
