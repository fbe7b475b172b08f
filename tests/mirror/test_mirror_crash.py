"""The mirror (two streams) SIGKILLed at random points under load, ten times, restarted each time,
then stopped with SIGTERM under load and restarted once more: with at-least-once the target holds
every source record, in source order per partition (a restart may repeat a contiguous range);
with --exactly-once it holds every record exactly once (read with isolation.level=read_committed),
keys, headers and timestamps intact, and SIGTERM left no transaction open."""
from __future__ import annotations

import random
import threading
import time

import pytest

from fastkafka.client import AdminClient
from mirror_support import contents, high_watermark, read_topic, wait_for

from confluent_kafka import Producer as CProducer
pytestmark = [pytest.mark.clients, pytest.mark.crash, pytest.mark.timeout(150)]

TOPICS = {"orders": 3, "clicks": 2}
KILLS = 10
T0 = 1_600_000_000_000


class Load:
    """Keyed records with headers and old CreateTimes into every partition until stopped."""

    def __init__(self, bootstrap: str):
        self.producer = CProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                   "linger.ms": 5})
        self.stopping = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        i = 0
        while not self.stopping.is_set():
            for topic, parts in TOPICS.items():
                for p in range(parts):
                    for _ in range(15):
                        self.producer.produce(topic, key=f"k{i % 97}".encode(),
                                              value=f"{topic}-{p}-{i}-".encode() + b"v" * 200, partition=p,
                                              headers=[("n", str(i).encode())], timestamp=T0 + i)
                        i += 1
            self.producer.poll(0)
            time.sleep(0.02)  # pace the load
        assert self.producer.flush(30) == 0
        self.sent = i

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(60)


def assert_at_least_once(source: list, target: list, where: str) -> int:
    """``target`` is ``source`` with contiguous ranges repeated: every record, none foreign, in
    order. Returns how many records were repeated."""
    index = {r[1]: i for i, r in enumerate(source)}
    assert len(index) == len(source)
    hi = prev = -1
    for row in target:
        i = index.get(row[1])
        assert i is not None, f"{where}: {row[1][:30]!r} is not a source record"
        assert row == source[i], f"{where}: record {i} changed: {row[:2]} != {source[i][:2]}"
        assert i <= hi + 1, f"{where}: records {hi + 1}..{i - 1} skipped"
        assert i <= prev or i == prev + 1, f"{where}: record {i} after {prev}: out of order"
        hi, prev = max(hi, i), i
    assert hi == len(source) - 1, f"{where}: records from {hi + 1} on are missing"
    return len(target) - len(source)


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once-prefixed"])
def test_kill9_at_random_points_under_load(clusters, mirror, exactly_once):
    """Exactly-once runs with MirrorMaker 2 names (``A.orders``): its offsets on the target are
    filed under the target's topic names."""
    a, b = clusters
    for t, n in TOPICS.items():
        a.topics.create(t, n)
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    mode = (["--exactly-once", "--source-alias", "A", "--prefix-topics"] if exactly_once
            else ["--commit-interval-ms", "300"])
    name = (lambda t: f"A.{t}") if exactly_once else (lambda t: t)     # the target's topic names
    group = "KafkaMirror-A" if exactly_once else "KafkaMirror"
    m = mirror(a, b, "--topics", ",".join(TOPICS), "--num-streams", "2", *mode)
    with Load(a.bootstrap):
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.8, 2.5))  # kill at a random point of the copy
            assert m.alive(), m.output()
            m.kill()
            m.start()
        wait_for(m.up, 30, "the mirror started again", m.output)    # (slow on a loaded machine)

        def on_target():
            return sum(high_watermark(b, name(t), p) for t, n in TOPICS.items() for p in range(n))
        restarted = on_target()
        wait_for(lambda: on_target() > restarted, 30, "the restarted mirror copying under load", m.output)
        # SIGTERM under load: the streams commit what they copied (exactly-once: their open
        # transactions), leave no transaction open, and exit 0
        assert m.stop() == 0, m.output()
        if exactly_once:
            for t, n in TOPICS.items():
                for p in range(n):
                    lg = b.topics.log(name(t), p)
                    assert lg.last_stable_offset == lg.high_watermark, (t, p, m.output())
        m.start()

    # the source is complete: wait for the mirror's committed position to reach its end
    ends = {(t, p): a.topics.log(t, p).high_watermark for t, n in TOPICS.items() for p in range(n)}
    offsets_on = b if exactly_once else a         # exactly-once keeps the group's offsets on the target
    admin = AdminClient({"bootstrap.servers": offsets_on.bootstrap})

    def caught_up():
        committed = admin.committed_offsets(group)
        return all(committed.get((name(t), p), -1) >= end for (t, p), end in ends.items())
    try:
        wait_for(caught_up, 60, f"the mirror to catch up (seed {seed})", m.output)
    finally:
        admin.close()
    assert m.stop() == 0, m.output()

    repeated = 0
    for t in TOPICS:
        src = contents(read_topic(a.bootstrap, t))
        dst = contents(read_topic(b.bootstrap, name(t), "read_committed"))
        assert sorted(dst) == sorted(src)
        for p in src:
            assert len(src[p]) > 100, "the load did not run"
            if exactly_once:
                assert dst[p] == src[p], f"{t}-{p}: not exactly once (seed {seed})"
            else:
                repeated += assert_at_least_once(src[p], dst[p], f"{t}-{p} (seed {seed})")
    if exactly_once:   # the kills did hit open transactions: their copies are in the log, aborted
        uncommitted = sum(len(rows) for t in TOPICS
                          for rows in read_topic(b.bootstrap, name(t), "read_uncommitted").values())
        committed = sum(len(rows) for t in TOPICS for rows in read_topic(b.bootstrap, name(t)).values())
        assert uncommitted > committed, f"no kill landed in a transaction (seed {seed})"
    print(f"seed {seed}: {m.starts} starts, {repeated} records repeated")
