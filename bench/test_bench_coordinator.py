"""Group coordinator (bench_coordinator.py has the helpers): N confluent-kafka members joining at
once against one member alone (the fixed cost of JoinGroup + SyncGroup round trips), synchronous
offset commits against OffsetFetch round trips (answered from memory: the network limit), and the
coordinator's commit_offsets in process against Log.append of the same batch (the storage floor)."""

import pytest
from bench_coordinator import (coordinator_commits_per_s, offset_appends_per_s, rebalance_seconds, roundtrips_per_s,
                               solo_join_seconds, sync_commits_per_s)
from benchkit import SelfTimed, compare, pick
from support.brokers import running_broker
from confluent_kafka.admin import AdminClient, NewTopic
from scratch import scratch_dir

MEMBERS = pick(10, 2)
SECONDS = pick(2.0, 0.2)


@pytest.fixture(scope="module")
def broker():
    with running_broker(scratch_dir("bench-coordinator-"), group_initial_rebalance_delay_ms=0) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})   # alive until the result
        admin.create_topics([NewTopic("rb", MEMBERS * 2, 1)])["rb"].result(10)
        yield b


def test_rebalance(benchmark, broker):
    groups = iter(range(10**6))
    benchmark.group = "coordinator"
    compare(benchmark, SelfTimed(lambda: rebalance_seconds(broker.bootstrap, "rb", MEMBERS * 2, MEMBERS,
                                                           f"many-{next(groups)}")),
            {"one member alone": SelfTimed(lambda: solo_join_seconds(broker.bootstrap, "rb", f"solo-{next(groups)}"))},
            what=f"rebalance: {MEMBERS} members joining at once", unit="ms", scale=1e3, per_time=False,
            n_rounds=3, warmup=0)


def test_sync_commits(benchmark, broker):
    benchmark.group = "coordinator"
    compare(benchmark, SelfTimed(lambda: 1 / sync_commits_per_s(broker.bootstrap, "rb", SECONDS)),
            {"OffsetFetch round trips": SelfTimed(lambda: 1 / roundtrips_per_s(broker.bootstrap, "rb", SECONDS))},
            what="synchronous offset commits, one confluent-kafka client", unit="commits/s", n_rounds=3, warmup=0)


def test_commits_in_process(benchmark):
    benchmark.group = "coordinator"
    compare(benchmark, SelfTimed(lambda: 1 / coordinator_commits_per_s(SECONDS)),
            {"Log.append of the same batch": SelfTimed(lambda: 1 / offset_appends_per_s(SECONDS))},
            what="GroupCoordinator.commit_offsets in process", unit="commits/s", n_rounds=3, warmup=0)
