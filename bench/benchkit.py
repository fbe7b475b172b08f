"""The one way a bench/ module turns two timings into a figure: fastkafka and its limit, same run.

pytest-benchmark times the fastkafka side (its JSON, histograms and ``--benchmark-compare`` then
work on it); the limit and any other references are timed by hand in the ``setup`` hook of the
same ``pedantic`` call, i.e. right before each of fastkafka's rounds, so the compared things
alternate and a noisy neighbour hurts them alike (DESIGN §9). The figure, its limit and their ratio
go to ``benchmark.extra_info``, where ``bench/report.py`` reads them.

``FASTKAFKA_BENCH_SMOKE=1`` (``tests/test_bench_smoke.py``) makes every module pick its tiny sizes
through :func:`pick` and run one round: it checks the suite still runs, never what it measures.

Example (a bench module)::

    from benchkit import compare, pick

    def test_crc(benchmark):
        data = os.urandom(pick(1 << 20, 4096))
        compare(benchmark, lambda: fk.crc32c(data), {"crc32c pkg": lambda: crc32c_pkg.crc32c(data)},
                what="CRC-32C 1 MiB", amount=len(data), unit="GB/s", scale=1e9, inner=50)
"""
from __future__ import annotations

import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:   # `pytest bench` from anywhere imports this tree's fastkafka
    sys.path.insert(0, ROOT)

SMOKE = os.environ.get("FASTKAFKA_BENCH_SMOKE") == "1"


def pick(real, smoke):
    """``smoke`` under FASTKAFKA_BENCH_SMOKE=1, else ``real`` (a size, a count, a round count)."""
    return smoke if SMOKE else real


def rounds(real: int) -> int:
    return pick(real, 1)


class SelfTimed:
    """A limit that times itself: ``fn()`` does its own untimed set-up and returns the seconds of
    the part that counts (a file opened and removed around the writes, say)."""

    def __init__(self, fn):
        self.fn = fn


def split_across_threads(work, calls: int, threads: int = 2):
    """A callable running ``work(calls // threads)`` on ``threads`` threads at once: what a
    GIL-releasing call gains from a second core (against ``work(calls)`` on one)."""
    def run():
        ts = [threading.Thread(target=work, args=(calls // threads,)) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return run


def _timed(fn, inner: int) -> float:
    if isinstance(fn, SelfTimed):
        return sum(fn.fn() for _ in range(inner)) / inner
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def compare(benchmark, target, limits: dict, *, what: str, amount: float = 1.0, unit: str = "calls/s",
            scale: float = 1.0, inner: int = 1, n_rounds: int = 5, warmup: int = 1, per_time: bool = True,
            goal: str = "", prepare=None, cleanup=None, **extra) -> dict:
    """Time ``target`` (the benchmark fixture) and each of ``limits`` (by hand), alternating.

    ``limits`` maps a name to a callable; the first is the limit the ratio is taken against, the
    others are references reported beside it (a :class:`SelfTimed` one times itself). ``target``
    may be :class:`SelfTimed` too (a client that must connect first): the figure is then its own
    seconds, while pytest-benchmark's stats time the whole call. Each round calls every callable
    ``inner`` times. ``prepare()`` (untimed, before each of fastkafka's rounds)
    returns the arguments of ``target``; ``cleanup(*args)`` runs after it, untimed.
    With ``per_time`` a figure is ``amount / seconds / scale`` (a rate: GB/s, records/s), else
    ``seconds * scale`` (a duration: ms). ``ratio`` is always fastkafka's figure over the limit's,
    best round to best round; ``ratio_median`` is the median of the per-round ratios.
    Returns the extra_info dict it filled.
    """
    names = list(limits)
    limit_times: dict[str, list[float]] = {n: [] for n in names}
    n_rounds = rounds(n_rounds)
    warmup = pick(warmup, 0)

    def setup():
        for n in names:
            limit_times[n].append(_timed(limits[n], inner))
        return ((prepare() if prepare else None) or (), {})

    own: list[float] = []

    def run(*args):
        if isinstance(target, SelfTimed):     # the benchmark's stats then include its set-up
            own.append(_timed(target, inner))
            return
        for _ in range(inner):
            target(*args)

    benchmark.pedantic(run, setup=setup, teardown=cleanup, rounds=n_rounds, warmup_rounds=warmup)
    ours = own[warmup:] if own else [d / inner for d in benchmark.stats.stats.data]
    for n in names:
        del limit_times[n][:warmup]

    def fig(seconds: float) -> float:
        return amount / seconds / scale if per_time else seconds * scale
    value = fig(min(ours))   # the best round is the fastest, whether the figure is a rate or a time
    refs = {n: fig(min(ts)) for n, ts in limit_times.items()}
    lim = names[0]
    per_round = [fig(a) / fig(b) for a, b in zip(ours, limit_times[lim])]
    info = {"what": what, "unit": unit, "value": value, "limit_name": lim, "limit": refs[lim],
            "ratio": value / refs[lim], "ratio_median": statistics.median(per_round),
            "others": {n: v for n, v in refs.items() if n != lim}, "rounds": n_rounds, "inner": inner,
            "goal": goal, "smoke": SMOKE, **extra}
    benchmark.extra_info.update(info)
    return info


def record(benchmark, *, what: str, unit: str, value: float, limit_name: str, limit: float,
           ratio_median: float | None = None, goal: str = "", **extra) -> dict:
    """For a figure that pytest-benchmark cannot time itself (a broker process, a Spark query):
    the module timed both sides; this stores them as :func:`compare` would."""
    info = {"what": what, "unit": unit, "value": value, "limit_name": limit_name, "limit": limit,
            "ratio": value / limit if limit else float("nan"),
            "ratio_median": ratio_median if ratio_median is not None else value / limit if limit else None,
            "others": {}, "goal": goal, "smoke": SMOKE, **extra}
    benchmark.extra_info.update(info)
    return info
